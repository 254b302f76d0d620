"""Rent-or-API primitives: GPU-hours, rent, API cost, breakeven volumes, capacity, idle cost and
download time. Exact ``Decimal`` arithmetic; formulas and sources in docs/costs.md."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .cost_money import (
    BYTES_PER_GB,
    DEFAULT_DAYS_PER_MONTH,
    MTOK,
    SECONDS_PER_HOUR,
    Fields,
    Number,
    round_int,
)

MAX_DAYS_PER_MONTH = 31

_NO_EXTRAS = (
    "Rent counts GPU-hours only: storage, egress, weight transfers and the staff who keep the cluster "
    "running are extra (the seeds)."
)
_IDLE_BILLS = "Idle GPUs bill the same rate as busy ones (the seeds)."


# --------------------------------------------------------------------------- primitives


def _schedule(f: Fields, gpus: Any, hours_per_day: Any, days: Any, days_field: str = "days_per_month"):
    g = f.integer("gpus", gpus, minimum=1)
    h = f.hours_per_day("hours_per_day", hours_per_day)
    d = f.integer(days_field, days, minimum=1, maximum=MAX_DAYS_PER_MONTH)
    return g, h, d


def gpu_hours(gpus: int, hours_per_day: Number = 24, days: int = DEFAULT_DAYS_PER_MONTH) -> Decimal:
    """GPU-hours billed: GPUs x hours switched on per day x days. 8 x 4 x 30 = 960."""
    f = Fields()
    g, h, d = _schedule(f, gpus, hours_per_day, days, "days")
    f.raise_if_any()
    return g * h * d


def rent_usd(
    gpus: int, usd_per_gpu_hour: Number, hours_per_day: Number = 24, days: int = DEFAULT_DAYS_PER_MONTH
) -> Decimal:
    """Rent in USD: GPU-hours x USD per GPU-hour. 8 GPUs always on at 2.50 for 30 days = 14,400."""
    f = Fields()
    g, h, d = _schedule(f, gpus, hours_per_day, days, "days")
    rate = f.decimal("usd_per_gpu_hour", usd_per_gpu_hour)
    f.raise_if_any()
    return g * h * d * rate


def _prices(f: Fields, hit: Any, miss: Any, out: Any) -> tuple[Decimal, Decimal, Decimal]:
    return (
        f.decimal("input_cache_hit_usd_per_mtok", hit),
        f.decimal("input_cache_miss_usd_per_mtok", miss),
        f.decimal("output_usd_per_mtok", out, above=True),
    )


def _blended(hit_rate: Decimal, hit: Decimal, miss: Decimal) -> Decimal:
    return hit_rate * hit + (1 - hit_rate) * miss


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
    return _blended(rate, hit, miss)


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
    hit, miss, out = _prices(f, input_cache_hit_usd_per_mtok, input_cache_miss_usd_per_mtok, output_usd_per_mtok)
    f.raise_if_any()
    return (i * _blended(rate, hit, miss) + o * out) / MTOK


def breakeven_output_tokens(rent_usd: Number, output_usd_per_mtok: Number) -> int:
    """Output tokens a month at which the API's output bill equals the rent (input ignored):
    rent / output price, in millions. 14,400 / 15 = 960M."""
    f = Fields()
    rent = f.decimal("rent_usd", rent_usd)
    out = f.decimal("output_usd_per_mtok", output_usd_per_mtok, above=True)
    f.raise_if_any()
    return round_int(rent / out * MTOK)


def _mix_breakeven(rent: Decimal, i: int, o: int, blended: Decimal, out: Decimal) -> Decimal | None:
    # rent / (out + (i/o) x blended) per Mtok, written with a single division to stay exact.
    if o == 0:
        return None
    return rent * MTOK * o / (o * out + i * blended)


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
    hit, miss, out = _prices(f, input_cache_hit_usd_per_mtok, input_cache_miss_usd_per_mtok, output_usd_per_mtok)
    f.raise_if_any()
    b = _mix_breakeven(rent, i, o, _blended(rate, hit, miss), out)
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
    return round_int(tps * u * h * d * SECONDS_PER_HOUR)


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
    return Decimal(b) / (bw * BYTES_PER_GB)


# --------------------------------------------------------------------------- results
