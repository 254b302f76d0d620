"""The rent-versus-API comparison: ``breakeven()`` and its result (fields of POST /api/v1/breakeven/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from ..units import GIB
from .economics import DOWNLOAD_NOTE, month_note, weights_download
from .formulas import (
    IDLE_BILLS_NOTE,
    RENT_EXTRAS_NOTE,
    blended_price,
    check_api_prices,
    check_schedule,
    mix_breakeven,
    produced_tokens,
)
from .money import (
    DEFAULT_DAYS_PER_MONTH,
    MILLS,
    MTOK,
    Fields,
    Number,
    dec_str,
    fine,
    millions,
    plain,
    price_text,
    quantize,
    round_int,
    usd,
    usd_text,
)

Cheaper = Literal["rent", "api"]
"""Which side of the rent-or-API comparison costs less (None when the rented layout cannot serve
the model at all: there is nothing to recommend renting)."""


@dataclass(frozen=True, slots=True)
class BreakevenResult:
    """Rent a cluster or pay a hosted API. ``to_dict()`` is the REST API's response body.

    Money is rounded to the cent (``cost_per_mtok_output_rent`` to 4 decimals, ``download_minutes``
    to 2); ``cheaper`` and ``api_wins_at_every_volume`` were decided on the exact values.
    """

    gpu_hours: Decimal
    monthly_rent_usd: Decimal
    monthly_api_usd: Decimal
    breakeven_output_tokens_per_month: int
    breakeven_output_tokens_per_month_mix: int | None
    cheaper: Cheaper | None
    capacity_output_tokens_per_month: int | None
    cost_per_mtok_output_rent: Decimal | None
    download_minutes: Decimal | None
    download_usd: Decimal | None
    verdict: str
    api_wins_at_every_volume: bool | None
    idle_cost_usd: Decimal | None
    assumptions: list[str] = field(default_factory=list)
    fits: bool = True
    memory_deficit_bytes_per_gpu: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: Decimals as strings (USD 2 decimals, per-Mtok 4), token counts as ints."""
        return {
            "gpu_hours": dec_str(self.gpu_hours),
            "monthly_rent_usd": dec_str(self.monthly_rent_usd),
            "monthly_api_usd": dec_str(self.monthly_api_usd),
            "breakeven_output_tokens_per_month": self.breakeven_output_tokens_per_month,
            "breakeven_output_tokens_per_month_mix": self.breakeven_output_tokens_per_month_mix,
            "cheaper": self.cheaper,
            "capacity_output_tokens_per_month": self.capacity_output_tokens_per_month,
            "cost_per_mtok_output_rent": dec_str(self.cost_per_mtok_output_rent, MILLS),
            "download_minutes": dec_str(self.download_minutes),
            "download_usd": dec_str(self.download_usd),
            "verdict": self.verdict,
            "api_wins_at_every_volume": self.api_wins_at_every_volume,
            "idle_cost_usd": dec_str(self.idle_cost_usd),
            "assumptions": list(self.assumptions),
            "fits": self.fits,
            "memory_deficit_bytes_per_gpu": self.memory_deficit_bytes_per_gpu,
        }


def breakeven(
    *,
    gpus: int,
    usd_per_gpu_hour: Number,
    input_cache_hit_usd_per_mtok: Number,
    input_cache_miss_usd_per_mtok: Number,
    output_usd_per_mtok: Number,
    monthly_input_tokens: int,
    monthly_output_tokens: int,
    cache_hit_rate: Number = 0,
    hours_per_day: Number = 24,
    days_per_month: int = DEFAULT_DAYS_PER_MONTH,
    capacity_output_tokens_per_month: int | None = None,
    output_tokens_per_s: Number | None = None,
    utilisation: Number | None = None,
    weights_bytes: int | None = None,
    download_gbytes_per_s: Number | None = None,
    memory_deficit_bytes_per_gpu: int | None = None,
) -> BreakevenResult:
    """Compare renting ``gpus`` for a month with paying the hosted API for the workload.

    - rent = GPUs x hours per day x days x rate; API = input x blended input + output x output price
    - breakeven (output-only, the seeds' rule of thumb) = rent / output price
    - breakeven (mix) = rent / (output price + input:output ratio x blended input price)
    - capacity: ``capacity_output_tokens_per_month`` as given (taken to be at the stated utilisation),
      or ``output_tokens_per_s`` (whole cluster) x utilisation (1 if not given) x seconds switched on
    - if the breakeven volume (mix, or output-only when the workload has no output) is beyond
      capacity, the API wins at every volume the cluster can serve and ``cheaper`` is ``api``
    - cost per Mtok output of renting = rent / capacity (or / the workload's output when capacity
      is unknown); idle cost = rent x (1 - utilisation) (``None`` without a utilisation)
    - download (when ``weights_bytes`` is given): bytes / bandwidth, billed for every GPU
    - a layout that does not fit (``memory_deficit_bytes_per_gpu`` > 0, from the sizing engine's
      ``deficit_bytes``) serves nothing: capacity 0, no cost per Mtok, ``cheaper`` None and a
      verdict that names the deficit; the rent and the API cost are still shown

    Raises ``EngineInputError`` with one entry per bad field.
    """
    f = Fields()
    g, h, d = check_schedule(f, gpus, hours_per_day, days_per_month)
    rate = f.decimal("usd_per_gpu_hour", usd_per_gpu_hour)
    hit, miss, out = check_api_prices(
        f, input_cache_hit_usd_per_mtok, input_cache_miss_usd_per_mtok, output_usd_per_mtok
    )
    i = f.integer("monthly_input_tokens", monthly_input_tokens)
    o = f.integer("monthly_output_tokens", monthly_output_tokens)
    hit_rate = f.fraction("cache_hit_rate", cache_hit_rate)
    cap = f.integer("capacity_output_tokens_per_month", capacity_output_tokens_per_month, optional=True)
    tps = f.decimal("output_tokens_per_s", output_tokens_per_s, optional=True)
    u = f.fraction("utilisation", utilisation, optional=True)
    wb = f.integer("weights_bytes", weights_bytes, optional=True)
    deficit = f.integer("memory_deficit_bytes_per_gpu", memory_deficit_bytes_per_gpu, optional=True)
    bw = f.decimal("download_gbytes_per_s", download_gbytes_per_s, above=True, optional=True)
    if capacity_output_tokens_per_month is not None and output_tokens_per_s is not None:
        f.add("output_tokens_per_s", "Give either capacity_output_tokens_per_month or output_tokens_per_s, not both.")
    if weights_bytes is not None and download_gbytes_per_s is None:
        f.add("download_gbytes_per_s", "Required to cost the download of weights_bytes.")
    if download_gbytes_per_s is not None and weights_bytes is None:
        f.add("weights_bytes", "Required to cost a download at download_gbytes_per_s.")
    f.raise_if_any()

    notes = [month_note(h, d)]
    hours = g * h * d
    rent = hours * rate
    blended = blended_price(hit_rate, hit, miss)
    api = (i * blended + o * out) / MTOK
    notes.append(
        f"API: input x ({plain(hit_rate)} x {price_text(hit)} + {plain(1 - hit_rate)} x {price_text(miss)}) "
        f"+ output x {price_text(out)} USD per Mtok; blended input price {price_text(blended)} USD/Mtok."
    )
    if hit > miss:
        notes.append("The cache-hit price is above the cache-miss price: more cache hits raise the API cost.")

    be_out = rent / out * MTOK
    be_mix = mix_breakeven(rent, i, o, blended, out)
    be_out_per_day = be_out / d
    notes.append(
        f"Output-only breakeven (the seeds' rule of thumb) = rent / output price = {millions(be_out)} output "
        f"tokens a month, {millions(be_out_per_day)} a day."
    )
    if be_mix is None:
        notes.append("The workload has no output tokens: the mix breakeven is undefined.")
    else:
        notes.append(
            f"Mix breakeven keeps the input:output ratio at {plain(quantize(Decimal(i) / o))}:1 and the cache hit rate "
            f"fixed: rent / (output price + ratio x blended input price) = {millions(be_mix)} output tokens a month."
        )

    short = bool(deficit and deficit > 0)
    if short:
        capacity = 0
        notes.append(
            f"The layout does not fit: each GPU is {deficit / GIB:,.1f} GiB ({deficit:,} bytes) short of what the "
            "weights, runtime and one sequence's cache need, so it serves nothing and has no capacity."
        )
    elif cap is not None:
        capacity = cap
        notes.append("Capacity is taken as given, already at the utilisation the cluster will sustain.")
    elif tps is not None:
        used = u if u is not None else Decimal(1)
        capacity = produced_tokens(tps, used, h, d)
        notes.append(
            f"Capacity = {plain(quantize(tps, Decimal('0.1')))} output tokens/s x {plain(used)} utilisation x "
            f"{plain(h * d)} h x 3600 s" + ("" if u is not None else " (no utilisation given: 100% assumed)") + "."
        )
    else:
        capacity = None
        notes.append("Cluster capacity unknown: cannot say whether renting can ever win.")

    threshold = be_mix if be_mix is not None else be_out
    api_wins = None if capacity is None or short else threshold > capacity
    cheaper: Cheaper | None = "rent" if rent < api else "api"
    if api_wins:
        cheaper = "api"
    if short:
        cheaper = None
    if capacity is not None and o > capacity and not short:
        notes.append(
            f"The workload's {millions(o)} output tokens a month exceed the cluster's capacity of "
            f"{millions(capacity)}: serving it needs more GPUs than costed here."
        )

    if short:
        per_mtok = None
    elif capacity:
        per_mtok = rent / capacity * MTOK
        notes.append("Cost per Mtok output of renting = rent / capacity.")
    elif capacity is None and o:
        per_mtok = rent / o * MTOK
        notes.append("Cost per Mtok output of renting = rent / the workload's output (capacity unknown).")
    else:
        per_mtok = None

    idle = rent * (1 - u) if u is not None else None
    notes.append(IDLE_BILLS_NOTE)

    minutes = dl_usd = None
    if wb is not None and bw is not None:
        dl = weights_download(wb, bw, g, rate)
        minutes, dl_usd = dl.minutes, dl.usd
        notes.append(f"Download: {wb:,} bytes / {plain(bw)} GB/s = {plain(dl.minutes)} minutes. " + DOWNLOAD_NOTE)
        notes.append("The download is a one-time cost, not included in the monthly rent.")
    notes.append(RENT_EXTRAS_NOTE)

    return BreakevenResult(
        gpu_hours=hours,
        monthly_rent_usd=usd(rent),
        monthly_api_usd=usd(api),
        breakeven_output_tokens_per_month=round_int(be_out),
        breakeven_output_tokens_per_month_mix=None if be_mix is None else round_int(be_mix),
        cheaper=cheaper,
        capacity_output_tokens_per_month=capacity,
        cost_per_mtok_output_rent=fine(per_mtok),
        download_minutes=minutes,
        download_usd=dl_usd,
        verdict=(
            _no_fit_verdict(deficit, rent, api)
            if short
            else _verdict(rent, api, threshold, be_mix is not None, capacity, o, cheaper, api_wins)
        ),
        api_wins_at_every_volume=api_wins,
        idle_cost_usd=usd(idle),
        assumptions=notes,
        fits=not short,
        memory_deficit_bytes_per_gpu=deficit if short else None,
    )


def _no_fit_verdict(deficit: int, rent: Decimal, api: Decimal) -> str:
    return (
        f"This layout does not fit: each GPU is {deficit / GIB:,.1f} GiB short, so it cannot serve the model and "
        f"renting it is no option (it would cost {usd_text(rent)} a month for nothing; the API costs {usd_text(api)}). "
        "Pick more GPUs, a larger GPU or a smaller weight format."
    )


def _verdict(
    rent: Decimal,
    api: Decimal,
    threshold: Decimal,
    mix: bool,
    capacity: int | None,
    output_tokens: int,
    cheaper: Cheaper,
    api_wins: bool | None,
) -> str:
    basis = " at this input:output mix" if mix else ""
    be = f"{millions(threshold)} output tokens a month{basis}"
    if api_wins:
        return (
            f"The API wins at every volume this cluster can serve: renting only breaks even at {be}, "
            f"beyond the cluster's capacity of {millions(capacity)}."
        )
    if cheaper == "rent":
        if capacity is not None and output_tokens > capacity:
            return (
                f"Renting costs less than the API ({usd_text(rent)} against {usd_text(api)} a month, breakeven "
                f"{be}), but the workload's {millions(output_tokens)} output tokens exceed the cluster's capacity "
                f"of {millions(capacity)}, so it needs more GPUs."
            )
        return (
            f"Renting is cheaper: {usd_text(rent)} a month against {usd_text(api)} on the API, because the workload "
            f"is above the breakeven of {be}."
        )
    reach = f" (the cluster can produce up to {millions(capacity)})" if capacity is not None else ""
    return (
        f"The API is cheaper at this volume: {usd_text(api)} a month against {usd_text(rent)} renting; renting "
        f"wins only above {be}{reach}."
    )
