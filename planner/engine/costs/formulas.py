"""Rent-or-API primitives: GPU-hours, rent, API cost, breakeven volumes, capacity, idle cost and
download time. Exact ``Decimal`` arithmetic; formulas and sources in docs/costs.md.

Each public primitive validates its input (``EngineInputError`` keyed by field) and returns an exact
``Decimal`` (or a rounded token count). The unchecked exact forms (``blended_price``, ``mix_breakeven``,
``produced_tokens``, ``download_time_s``) and the input checks (``check_schedule``, ``check_api_prices``)
are shared with the result builders of ``costs.economics`` and ``costs.breakeven``, so each formula is
written once.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..units import GB, SECONDS_PER_HOUR
from .money import DEFAULT_DAYS_PER_MONTH, MAX_DAYS_PER_MONTH, MTOK, Fields, Number, round_int

RENT_EXTRAS_NOTE = (
    "Rent counts GPU-hours only: storage, egress, weight transfers and the staff who keep the cluster "
    "running are extra (the seeds)."
)
"""Assumption sentence of every rent figure."""
IDLE_BILLS_NOTE = "Idle GPUs bill the same rate as busy ones (the seeds)."
"""Assumption sentence of every idle-cost figure."""


# --------------------------------------------------------------------------- shared checks and exact forms


def check_schedule(
    f: Fields, gpus: Any, hours_per_day: Any, days: Any, days_field: str = "days_per_month"
) -> tuple[int | None, Decimal | None, int | None]:
    """``(gpus, hours_per_day, days)`` checked into ``f``: GPUs >= 1, hours in (0, 24], days 1..31."""
    g = f.integer("gpus", gpus, minimum=1)
    h = f.hours_per_day("hours_per_day", hours_per_day)
    d = f.integer(days_field, days, minimum=1, maximum=MAX_DAYS_PER_MONTH)
    return g, h, d


def check_api_prices(f: Fields, hit: Any, miss: Any, out: Any) -> tuple[Decimal | None, Decimal | None, Decimal | None]:
    """The API's prices (USD per Mtok) checked into ``f``: cache hit and cache miss >= 0, output > 0."""
    return (
        f.decimal("input_cache_hit_usd_per_mtok", hit),
        f.decimal("input_cache_miss_usd_per_mtok", miss),
        f.decimal("output_usd_per_mtok", out, above=True),
    )


def blended_price(hit_rate: Decimal, hit: Decimal, miss: Decimal) -> Decimal:
    """USD per million input tokens at a cache hit rate: hit rate x hit price + (1 - hit rate) x miss price."""
    return hit_rate * hit + (1 - hit_rate) * miss


def mix_breakeven(
    rent: Decimal, input_tokens: int, output_tokens: int, blended: Decimal, output_price: Decimal
) -> Decimal | None:
    """Output tokens a month at which the API costs the rent, keeping the input:output mix (exact).

    ``rent / (output price + (input / output) x blended input price) x 1e6``, written with a single
    division to stay exact; ``None`` when there are no output tokens (the ratio is undefined).
    """
    if output_tokens == 0:
        return None
    return rent * MTOK * output_tokens / (output_tokens * output_price + input_tokens * blended)


def produced_tokens(tokens_per_s: Decimal, utilisation: Decimal, hours_per_day: Decimal, days: int) -> int:
    """Tokens produced in a month: tokens/s x utilisation x hours per day x days x 3600 s (rounded)."""
    return round_int(tokens_per_s * utilisation * hours_per_day * days * SECONDS_PER_HOUR)


def download_time_s(weights_bytes: int, gbytes_per_s: Decimal) -> Decimal:
    """Seconds to fetch ``weights_bytes`` bytes at ``gbytes_per_s`` decimal GB (1e9 B) per second (exact)."""
    return Decimal(weights_bytes) / (gbytes_per_s * GB)


# --------------------------------------------------------------------------- primitives


def gpu_hours(gpus: int, hours_per_day: Number = 24, days: int = DEFAULT_DAYS_PER_MONTH) -> Decimal:
    """GPU-hours billed: GPUs x hours switched on per day x days. 8 x 4 x 30 = 960."""
    f = Fields()
    g, h, d = check_schedule(f, gpus, hours_per_day, days, "days")
    f.raise_if_any()
    return g * h * d


def rent_usd(
    gpus: int, usd_per_gpu_hour: Number, hours_per_day: Number = 24, days: int = DEFAULT_DAYS_PER_MONTH
) -> Decimal:
    """Rent in USD: GPU-hours x USD per GPU-hour. 8 GPUs always on at 2.50 for 30 days = 14,400."""
    f = Fields()
    g, h, d = check_schedule(f, gpus, hours_per_day, days, "days")
    rate = f.decimal("usd_per_gpu_hour", usd_per_gpu_hour)
    f.raise_if_any()
    return g * h * d * rate


def blended_input_usd_per_mtok(
    cache_hit_rate: Number, input_cache_hit_usd_per_mtok: Number, input_cache_miss_usd_per_mtok: Number
) -> Decimal:
    """USD per million input tokens at a prefix-cache hit rate: hit x hit price + (1 - hit) x miss price.

    0.9 x 0.30 + 0.1 x 3.00 = 0.57.
    """
    f = Fields()
    rate = f.fraction("cache_hit_rate", cache_hit_rate)
    hit = f.decimal("input_cache_hit_usd_per_mtok", input_cache_hit_usd_per_mtok)
    miss = f.decimal("input_cache_miss_usd_per_mtok", input_cache_miss_usd_per_mtok)
    f.raise_if_any()
    return blended_price(rate, hit, miss)


def api_cost_usd(
    input_tokens: int,
    output_tokens: int,
    cache_hit_rate: Number,
    input_cache_hit_usd_per_mtok: Number,
    input_cache_miss_usd_per_mtok: Number,
    output_usd_per_mtok: Number,
) -> Decimal:
    """Hosted-API cost in USD: (input x blended input price + output x output price) / 1e6."""
    f = Fields()
    i = f.integer("input_tokens", input_tokens)
    o = f.integer("output_tokens", output_tokens)
    rate = f.fraction("cache_hit_rate", cache_hit_rate)
    hit, miss, out = check_api_prices(
        f, input_cache_hit_usd_per_mtok, input_cache_miss_usd_per_mtok, output_usd_per_mtok
    )
    f.raise_if_any()
    return (i * blended_price(rate, hit, miss) + o * out) / MTOK


def breakeven_output_tokens(rent_usd: Number, output_usd_per_mtok: Number) -> int:
    """Output tokens a month at which the API's output bill equals the rent (input ignored):
    rent / output price, in millions. 14,400 / 15 = 960M."""
    f = Fields()
    rent = f.decimal("rent_usd", rent_usd)
    out = f.decimal("output_usd_per_mtok", output_usd_per_mtok, above=True)
    f.raise_if_any()
    return round_int(rent / out * MTOK)


def breakeven_output_tokens_mix(
    rent_usd: Number,
    input_tokens: int,
    output_tokens: int,
    cache_hit_rate: Number,
    input_cache_hit_usd_per_mtok: Number,
    input_cache_miss_usd_per_mtok: Number,
    output_usd_per_mtok: Number,
) -> int | None:
    """Output tokens a month at which the API costs as much as the rent, keeping the workload's
    input:output ratio r and cache hit rate fixed: rent / (output price + r x blended input price),
    in millions. ``None`` when the workload has no output tokens (the ratio is undefined).

    14,400 USD, r = 20, 90% hits: 14,400 / (15 + 20 x 0.57) = 545.45M; 0% hits: 14,400 / 75 = 192M.
    """
    f = Fields()
    rent = f.decimal("rent_usd", rent_usd)
    i = f.integer("input_tokens", input_tokens)
    o = f.integer("output_tokens", output_tokens)
    rate = f.fraction("cache_hit_rate", cache_hit_rate)
    hit, miss, out = check_api_prices(
        f, input_cache_hit_usd_per_mtok, input_cache_miss_usd_per_mtok, output_usd_per_mtok
    )
    f.raise_if_any()
    b = mix_breakeven(rent, i, o, blended_price(rate, hit, miss), out)
    return None if b is None else round_int(b)


def capacity_output_tokens(
    output_tokens_per_s: Number,
    utilisation: Number = 1,
    hours_per_day: Number = 24,
    days: int = DEFAULT_DAYS_PER_MONTH,
) -> int:
    """Output tokens the cluster produces in a month: tokens/s x utilisation x seconds switched on
    (hours per day x days x 3600). ``output_tokens_per_s`` is the whole cluster's decode rate."""
    f = Fields()
    tps = f.decimal("output_tokens_per_s", output_tokens_per_s)
    u = f.fraction("utilisation", utilisation)
    h = f.hours_per_day("hours_per_day", hours_per_day)
    d = f.integer("days", days, minimum=1, maximum=MAX_DAYS_PER_MONTH)
    f.raise_if_any()
    return produced_tokens(tps, u, h, d)


def idle_cost_usd(rent_usd: Number, utilisation: Number) -> Decimal:
    """What the idle share of the paid hours costs: paid GPU-hours x (1 - utilisation) x rate,
    i.e. rent x (1 - utilisation)."""
    f = Fields()
    rent = f.decimal("rent_usd", rent_usd)
    u = f.fraction("utilisation", utilisation)
    f.raise_if_any()
    return rent * (1 - u)


def download_seconds(weights_bytes: int, download_gbytes_per_s: Number) -> Decimal:
    """Seconds to fetch the weights: bytes / (GB/s x 1e9). 1.5e12 / 1e9 = 1,500 s = 25 min."""
    f = Fields()
    b = f.integer("weights_bytes", weights_bytes)
    bw = f.decimal("download_gbytes_per_s", download_gbytes_per_s, above=True)
    f.raise_if_any()
    return download_time_s(b, bw)
