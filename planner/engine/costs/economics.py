"""Result objects of one cluster's money: monthly rent, unit economics, weights download and storage.

Exact ``Decimal`` arithmetic through ``costs.formulas``; results hold rounded values and render them as
strings (``costs.money``). ``month_note`` and ``DOWNLOAD_NOTE`` are the assumption sentences the
breakeven result shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..units import GB, SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from .formulas import IDLE_BILLS_NOTE, RENT_EXTRAS_NOTE, check_schedule, download_time_s, produced_tokens
from .money import DEFAULT_DAYS_PER_MONTH, MILLS, MONTH_HOURS, MTOK, Fields, Number, dec_str, fine, plain, quantize, usd


@dataclass(frozen=True, slots=True)
class RentResult:
    """Monthly rent of one cluster schedule."""

    gpus: int
    hours_per_day: Decimal
    days_per_month: int
    usd_per_gpu_hour: Decimal
    gpu_hours: Decimal
    rent_usd: Decimal  # rounded to the cent
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpus": self.gpus,
            "hours_per_day": dec_str(self.hours_per_day),
            "days_per_month": self.days_per_month,
            "usd_per_gpu_hour": dec_str(self.usd_per_gpu_hour, MILLS),
            "gpu_hours": dec_str(self.gpu_hours),
            "rent_usd": dec_str(self.rent_usd),
            "assumptions": list(self.assumptions),
        }


def month_note(hours: Decimal, days: int) -> str:
    """The schedule sentence of a monthly figure: days, hours a day and hours per GPU (the seeds' 720,
    ``MONTH_HOURS``)."""
    note = f"{days}-day month, {plain(hours)} h a day: {plain(hours * days)} hours per GPU"
    if days == DEFAULT_DAYS_PER_MONTH and hours == 24:
        note += f" (the seeds' {MONTH_HOURS}-hour month; spend uses calendar months)"
    return note + "."


def monthly_rent(
    gpus: int, usd_per_gpu_hour: Number, hours_per_day: Number = 24, days_per_month: int = DEFAULT_DAYS_PER_MONTH
) -> RentResult:
    """GPU-hours and rent of ``gpus`` switched on ``hours_per_day`` for ``days_per_month`` days."""
    f = Fields()
    g, h, d = check_schedule(f, gpus, hours_per_day, days_per_month)
    rate = f.decimal("usd_per_gpu_hour", usd_per_gpu_hour)
    f.raise_if_any()
    hours = g * h * d
    return RentResult(
        gpus=g,
        hours_per_day=h,
        days_per_month=d,
        usd_per_gpu_hour=rate,
        gpu_hours=hours,
        rent_usd=usd(hours * rate),
        assumptions=[month_note(h, d), "Rent = GPUs x hours per day x days x USD per GPU-hour.", RENT_EXTRAS_NOTE],
    )


@dataclass(frozen=True, slots=True)
class UnitEconomics:
    """Cost per output token and throughput per dollar of one cluster at a utilisation."""

    gpu_hours: Decimal
    monthly_rent_usd: Decimal
    cluster_usd_per_hour: Decimal
    utilisation: Decimal
    output_tokens_per_month: int
    cost_per_mtok_output_usd: Decimal | None  # None when the cluster produces nothing
    tokens_per_s_per_usd_hour: Decimal  # peak decode rate / cluster USD per hour
    effective_tokens_per_s_per_usd_hour: Decimal  # the same, times utilisation
    idle_gpu_hours: Decimal
    idle_cost_usd: Decimal
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu_hours": dec_str(self.gpu_hours),
            "monthly_rent_usd": dec_str(self.monthly_rent_usd),
            "cluster_usd_per_hour": dec_str(self.cluster_usd_per_hour, MILLS),
            "utilisation": dec_str(self.utilisation, MILLS),
            "output_tokens_per_month": self.output_tokens_per_month,
            "cost_per_mtok_output_usd": dec_str(self.cost_per_mtok_output_usd, MILLS),
            "tokens_per_s_per_usd_hour": dec_str(self.tokens_per_s_per_usd_hour, MILLS),
            "effective_tokens_per_s_per_usd_hour": dec_str(self.effective_tokens_per_s_per_usd_hour, MILLS),
            "idle_gpu_hours": dec_str(self.idle_gpu_hours),
            "idle_cost_usd": dec_str(self.idle_cost_usd),
            "assumptions": list(self.assumptions),
        }


def unit_economics(
    gpus: int,
    usd_per_gpu_hour: Number,
    output_tokens_per_s: Number,
    utilisation: Number = 1,
    hours_per_day: Number = 24,
    days_per_month: int = DEFAULT_DAYS_PER_MONTH,
) -> UnitEconomics:
    """Unit economics of a cluster whose whole-cluster decode rate is ``output_tokens_per_s``.

    - output tokens a month = tokens/s x utilisation x hours switched on x 3600
    - cost per Mtok output = rent / output tokens a month x 1e6
    - tokens/s per USD-hour = tokens/s / (GPUs x USD per GPU-hour) (the seeds' "tokens per second
      per dollar", the number that decides the tier); the effective figure multiplies by utilisation
    - idle cost = paid GPU-hours x (1 - utilisation) x rate
    """
    f = Fields()
    g, h, d = check_schedule(f, gpus, hours_per_day, days_per_month)
    rate = f.decimal("usd_per_gpu_hour", usd_per_gpu_hour, above=True)
    tps = f.decimal("output_tokens_per_s", output_tokens_per_s)
    u = f.fraction("utilisation", utilisation)
    f.raise_if_any()
    hours = g * h * d
    rent = hours * rate
    per_hour = g * rate
    produced = produced_tokens(tps, u, h, d)
    per_mtok = rent / produced * MTOK if produced else None
    return UnitEconomics(
        gpu_hours=hours,
        monthly_rent_usd=usd(rent),
        cluster_usd_per_hour=per_hour,
        utilisation=u,
        output_tokens_per_month=produced,
        cost_per_mtok_output_usd=fine(per_mtok),
        tokens_per_s_per_usd_hour=fine(tps / per_hour),
        effective_tokens_per_s_per_usd_hour=fine(tps * u / per_hour),
        idle_gpu_hours=hours * (1 - u),
        idle_cost_usd=usd(rent * (1 - u)),
        assumptions=[
            month_note(h, d),
            f"Output tokens a month = {plain(tps)} tokens/s x {plain(u)} utilisation x {plain(h * d)} h x 3600 s.",
            IDLE_BILLS_NOTE,
        ],
    )


@dataclass(frozen=True, slots=True)
class DownloadResult:
    """One-time cost of fetching the weights onto a freshly started cluster."""

    weights_bytes: int
    download_gbytes_per_s: Decimal
    seconds: Decimal
    minutes: Decimal  # rounded to 2 decimals
    billed_gpu_hours: Decimal
    usd: Decimal  # rounded to the cent
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes,
            "download_gbytes_per_s": dec_str(self.download_gbytes_per_s, MILLS),
            "seconds": dec_str(self.seconds),
            "minutes": dec_str(self.minutes),
            "billed_gpu_hours": dec_str(self.billed_gpu_hours, MILLS),
            "usd": dec_str(self.usd),
            "assumptions": list(self.assumptions),
        }


DOWNLOAD_NOTE = (
    "Billing starts when the instances start, not when the model is ready: every GPU of the cluster "
    "bills while the weights download (the seeds). Billed per second; keep the weights on a persistent "
    "volume so the next start takes minutes."
)
"""Assumption sentence of every weights-download figure."""


def weights_download(
    weights_bytes: int, download_gbytes_per_s: Number, gpus: int, usd_per_gpu_hour: Number
) -> DownloadResult:
    """Time and cost of downloading the weights: bytes / bandwidth, billed at the whole cluster's
    hourly rate (GPUs x USD per GPU-hour). 1.5 TB at 1 GB/s = 25 min; on 8 GPUs at 2.50 = 8.33 USD."""
    f = Fields()
    b = f.integer("weights_bytes", weights_bytes)
    bw = f.decimal("download_gbytes_per_s", download_gbytes_per_s, above=True)
    g = f.integer("gpus", gpus, minimum=1)
    rate = f.decimal("usd_per_gpu_hour", usd_per_gpu_hour)
    f.raise_if_any()
    seconds = download_time_s(b, bw)
    billed = g * seconds / SECONDS_PER_HOUR
    return DownloadResult(
        weights_bytes=b,
        download_gbytes_per_s=bw,
        seconds=seconds,
        minutes=quantize(seconds / SECONDS_PER_MINUTE),
        billed_gpu_hours=billed,
        usd=usd(billed * rate),
        assumptions=[DOWNLOAD_NOTE],
    )


@dataclass(frozen=True, slots=True)
class StorageResult:
    """Keeping the weights on a persistent volume (USD per decimal GB-month, as quoted)."""

    weights_bytes: int
    gb: Decimal
    usd_per_gb_month: Decimal
    months: int
    usd: Decimal  # rounded to the cent
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes,
            "gb": dec_str(self.gb),
            "usd_per_gb_month": dec_str(self.usd_per_gb_month, MILLS),
            "months": self.months,
            "usd": dec_str(self.usd),
            "assumptions": list(self.assumptions),
        }


def weights_storage(weights_bytes: int, usd_per_gb_month: Number, months: int = 1) -> StorageResult:
    """Volume cost: weights in decimal GB x USD per GB-month x months. 1.5 TB at 0.10 = 150 USD a month."""
    f = Fields()
    b = f.integer("weights_bytes", weights_bytes)
    price = f.decimal("usd_per_gb_month", usd_per_gb_month)
    m = f.integer("months", months, minimum=1)
    f.raise_if_any()
    gb = Decimal(b) / GB
    return StorageResult(
        weights_bytes=b,
        gb=gb,
        usd_per_gb_month=price,
        months=m,
        usd=usd(gb * price * m),
        assumptions=["Volume billed per decimal GB (1e9 bytes) per month, the weights' size only."],
    )
