"""What an owned cluster costs: depreciation, energy, colocation, support and staff, per day, per month
and per GPU-hour (``OwnedCluster``), and the buy option of rent vs API (``buy_option``).

An owned cluster pays no rental quote: its price in force is its own cost (``quotes.owned_price``),
spread over the GPU-hours it is switched on, so spend, pages and the API price it through the same
resolver as a rented one (docs/costs.md, "Owned clusters"). Money is USD ``Decimal``; power in watts
(W), energy in kWh, electricity in USD per kWh.

The rules, each stated in every result's assumptions:

- **Depreciation** is straight-line (the default of IAS 16 and US GAAP for plant and equipment):
  (purchase price - residual value) / useful life, a whole month's share in every calendar month from
  the month of purchase for ``useful_life_months`` months, nothing after (written off).
- **Energy** per day = (GPUs on x W per GPU + nodes x node overhead W) x PUE x hours on / 1000 kWh x
  the electricity price in force that day. W per GPU = idle W + utilisation x (full-load W - idle W), a
  linear power model (a GPU's board power between idle and TDP; the datasheet's TDP at full load).
  Without a utilisation, full load (TDP) is assumed and said; without an idle figure, full load too.
  PUE (power usage effectiveness, The Green Grid's metric: facility energy / IT energy) scales the
  IT draw to what the site bills.
- **Colocation** = racks x USD per rack-month; **support** = a yearly share of the purchase price of
  the nodes in service / 12 a month; **staff** = a fixed USD per month. These and depreciation are
  *fixed*: the same whatever the hours switched on, spread evenly over the calendar month's days.
- **Per GPU-hour** on a day = (that day's share of the fixed month + that day's energy) / (GPUs on x
  hours on), so the ledger's GPU-hours x rate adds up to the month's cost exactly. A day without an
  electricity price on record, or with no purchase in service, is unpriced (never a placeholder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from ..units import HOURS_PER_DAY
from .money import (
    CENT,
    MILLS,
    Fields,
    Number,
    calendar_month_days,
    calendar_month_label,
    dec_str,
    plain,
    price_text,
    quantize,
    usd,
    usd_text,
)

__all__ = [
    "DEFAULT_USEFUL_LIFE_MONTHS",
    "BuyOption",
    "ElectricityPrice",
    "OwnedCluster",
    "OwnedMonth",
    "Power",
    "Purchase",
    "buy_option",
    "cheapest_of_three",
]

DEFAULT_USEFUL_LIFE_MONTHS = 48
"""Useful life of GPU servers when a purchase does not say: 4 years (the life the issue's example and
common server depreciation schedules use; hyperscalers state 5-6 years for servers in their 10-K
filings, so the default leans to the shorter, costlier side)."""

WATTS_PER_KW = Decimal(1000)
FIXED_PARTS = ("depreciation", "colocation", "support", "staff")
PARTS = ("depreciation", "energy", "colocation", "support", "staff")


def _month_index(day: date) -> int:
    return day.year * 12 + day.month - 1


@dataclass(frozen=True, slots=True)
class Purchase:
    """Nodes bought on a day: ``usd`` is what they cost in all (USD, converted at the day's exchange rate
    when bought in another currency), ``residual_usd`` what they are worth at the end of their
    ``useful_life_months``."""

    bought_on: date
    nodes: int
    usd: Decimal
    useful_life_months: int = DEFAULT_USEFUL_LIFE_MONTHS
    residual_usd: Decimal = Decimal(0)

    def __post_init__(self) -> None:
        f = Fields("purchase.")
        f.integer("nodes", self.nodes, minimum=1)
        price = f.decimal("usd", self.usd, above=True)
        f.integer("useful_life_months", self.useful_life_months, minimum=1, maximum=600)
        residual = f.decimal("residual_usd", self.residual_usd)
        if price is not None and residual is not None and residual > price:
            f.add("residual_usd", "The residual value cannot exceed the purchase price.")
        f.raise_if_any()
        object.__setattr__(self, "usd", price)
        object.__setattr__(self, "residual_usd", residual)

    def in_service(self, year: int, month: int) -> bool:
        """Whether ``year``-``month`` is one of the months it depreciates in."""
        first = _month_index(self.bought_on)
        return first <= year * 12 + month - 1 < first + self.useful_life_months

    @property
    def monthly_depreciation_usd(self) -> Decimal:
        """(price - residual) / useful life, exact."""
        return (self.usd - self.residual_usd) / self.useful_life_months


@dataclass(frozen=True, slots=True)
class Power:
    """A node's draw: ``gpu_full_w`` per GPU at full load (the SKU's TDP), ``gpu_idle_w`` per GPU idle
    (None: not known), ``node_overhead_w`` per node (CPUs, memory, NICs, fans), and the site's ``pue``."""

    gpu_full_w: Decimal
    gpu_idle_w: Decimal | None = None
    node_overhead_w: Decimal = Decimal(0)
    pue: Decimal = Decimal(1)

    def __post_init__(self) -> None:
        f = Fields("power.")
        full = f.decimal("gpu_full_w", self.gpu_full_w, above=True, maximum=10_000)
        idle = f.decimal("gpu_idle_w", self.gpu_idle_w, optional=True, maximum=10_000)
        overhead = f.decimal("node_overhead_w", self.node_overhead_w, maximum=100_000)
        pue = f.decimal("pue", self.pue, minimum=1, maximum=5)
        if full is not None and idle is not None and idle > full:
            f.add("gpu_idle_w", "Idle power cannot exceed full-load power.")
        f.raise_if_any()
        for name, value in (("gpu_full_w", full), ("gpu_idle_w", idle), ("node_overhead_w", overhead), ("pue", pue)):
            object.__setattr__(self, name, value)

    def gpu_watts(self, utilisation: Decimal | None) -> Decimal:
        """W per GPU at ``utilisation`` (0..1): idle + u x (full - idle); full load without a utilisation
        or an idle figure."""
        if utilisation is None or self.gpu_idle_w is None:
            return self.gpu_full_w
        return self.gpu_idle_w + utilisation * (self.gpu_full_w - self.gpu_idle_w)

    def facility_kw(self, gpus: int, nodes: int, utilisation: Decimal | None) -> Decimal:
        """What the site draws for ``gpus`` GPUs in ``nodes`` nodes, kW: (GPUs x W + nodes x overhead) x PUE."""
        return (gpus * self.gpu_watts(utilisation) + nodes * self.node_overhead_w) * self.pue / WATTS_PER_KW


@dataclass(frozen=True, slots=True)
class ElectricityPrice:
    """The site's electricity price from ``valid_from`` until the next one, USD per kWh."""

    valid_from: date
    usd_per_kwh: Decimal


@dataclass(frozen=True, slots=True)
class OwnedMonth:
    """An owned cluster's cost in a calendar month, by part (USD, to the cent), with the GPU-hours it was
    on and the resulting USD per GPU-hour (4 decimals). ``unpriced_days``: days without an electricity
    price or a purchase in service (their cost is not in the figures)."""

    year: int
    month: int
    parts: dict[str, Decimal]
    total_usd: Decimal
    gpu_hours: Decimal
    usd_per_gpu_hour: Decimal | None
    kwh: Decimal
    unpriced_days: int
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "year": self.year,
            "month": self.month,
            "month_label": calendar_month_label(self.year, self.month),
            "parts": {name: dec_str(value) for name, value in self.parts.items()},
            "total_usd": dec_str(self.total_usd),
            "gpu_hours": dec_str(self.gpu_hours),
            "usd_per_gpu_hour": dec_str(self.usd_per_gpu_hour, MILLS),
            "kwh": dec_str(self.kwh),
            "unpriced_days": self.unpriced_days,
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True, slots=True)
class OwnedCluster:
    """An owned cluster's cost inputs: its purchases, power, electricity prices (by date), racks at a
    colocation price per rack-month, support as a yearly share of the purchase price, staff per month."""

    cluster: str
    gpus_per_node: int
    purchases: tuple[Purchase, ...]
    power: Power
    electricity: tuple[ElectricityPrice, ...] = ()
    racks: Decimal = Decimal(0)
    usd_per_rack_month: Decimal = Decimal(0)
    support_share_per_year: Decimal = Decimal(0)
    staff_usd_per_month: Decimal = Decimal(0)

    def __post_init__(self) -> None:
        f = Fields()
        f.integer("gpus_per_node", self.gpus_per_node, minimum=1)
        racks = f.decimal("racks", self.racks, maximum=100_000)
        colo = f.decimal("usd_per_rack_month", self.usd_per_rack_month)
        support = f.fraction("support_share_per_year", self.support_share_per_year)
        staff = f.decimal("staff_usd_per_month", self.staff_usd_per_month)
        for p in self.electricity:
            f.decimal("electricity.usd_per_kwh", p.usd_per_kwh, maximum=100)
        f.raise_if_any()
        for name, value in (
            ("racks", racks),
            ("usd_per_rack_month", colo),
            ("support_share_per_year", support),
            ("staff_usd_per_month", staff),
        ):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "purchases", tuple(self.purchases))
        object.__setattr__(self, "electricity", tuple(sorted(self.electricity, key=lambda p: p.valid_from)))

    def fixed_month(self, year: int, month: int) -> dict[str, Decimal] | None:
        """The fixed parts of ``year``-``month`` (exact USD): depreciation and support of the purchases in
        service, colocation, staff; None when no purchase is in service (nothing owned that month)."""
        live = [p for p in self.purchases if p.in_service(year, month)]
        if not live:
            return None
        return {
            "depreciation": sum((p.monthly_depreciation_usd for p in live), Decimal(0)),
            "colocation": self.racks * self.usd_per_rack_month,
            "support": sum((p.usd for p in live), Decimal(0)) * self.support_share_per_year / 12,
            "staff": self.staff_usd_per_month,
        }

    def usd_per_kwh(self, day: date) -> Decimal | None:
        """The electricity price in force on ``day`` (the latest dated on or before it), or None."""
        found = None
        for p in self.electricity:
            if p.valid_from > day:
                break
            found = p.usd_per_kwh
        return found

    def nodes_for(self, gpus: int) -> int:
        """Nodes that hold ``gpus`` GPUs (a part-used node draws its whole overhead)."""
        return -(-gpus // self.gpus_per_node)

    def day_parts(
        self, day: date, gpus: int, hours_per_day: Number = HOURS_PER_DAY, utilisation: Decimal | None = None
    ) -> dict[str, Decimal] | None:
        """The cost of ``day`` by part (exact USD): a day's share of the fixed month, and the energy of
        ``gpus`` GPUs on ``hours_per_day`` hours at ``utilisation`` (None: full load); plus ``kwh``.
        None: unpriced (no purchase in service, or no electricity price on record that day)."""
        fixed = self.fixed_month(day.year, day.month)
        price = self.usd_per_kwh(day)
        if fixed is None or price is None:
            return None
        days = calendar_month_days(day.year, day.month)
        kwh = self.power.facility_kw(gpus, self.nodes_for(gpus), utilisation) * Decimal(str(hours_per_day))
        return {**{name: value / days for name, value in fixed.items()}, "energy": kwh * price, "kwh": kwh}

    def rate(
        self, day: date, gpus: int, hours_per_day: Number = HOURS_PER_DAY, utilisation: Decimal | None = None
    ) -> Decimal | None:
        """USD per GPU-hour on ``day`` with ``gpus`` GPUs on ``hours_per_day`` hours (exact): the day's
        cost / its GPU-hours; None when the day is unpriced or no GPU is on."""
        hours = Decimal(str(hours_per_day))
        parts = self.day_parts(day, gpus, hours, utilisation)
        if parts is None or gpus <= 0 or hours <= 0:
            return None
        return sum((parts[name] for name in PARTS), Decimal(0)) / (gpus * hours)

    def month(
        self,
        year: int,
        month: int,
        gpus: int,
        hours_per_day: Number = HOURS_PER_DAY,
        utilisation: Decimal | None = None,
    ) -> OwnedMonth:
        """The cost of ``year``-``month`` with ``gpus`` GPUs on ``hours_per_day`` hours every day, at
        ``utilisation`` (None: full load), by part; its assumptions say each rule and figure."""
        hours = Decimal(str(hours_per_day))
        totals = dict.fromkeys((*PARTS, "kwh"), Decimal(0))
        unpriced = 0
        priced_days = 0
        for d in range(1, calendar_month_days(year, month) + 1):
            parts = self.day_parts(date(year, month, d), gpus, hours, utilisation)
            if parts is None:
                unpriced += 1
                continue
            priced_days += 1
            for name, value in parts.items():
                totals[name] += value
        rounded = {name: usd(totals[name]) for name in PARTS}
        total = sum(rounded.values(), Decimal(0))
        gpu_hours = Decimal(gpus) * hours * priced_days
        rate = quantize(sum((totals[n] for n in PARTS), Decimal(0)) / gpu_hours, MILLS) if gpu_hours else None
        return OwnedMonth(
            year=year,
            month=month,
            parts=rounded,
            total_usd=total,
            gpu_hours=gpu_hours.quantize(CENT),
            usd_per_gpu_hour=rate,
            kwh=totals["kwh"].quantize(CENT),
            unpriced_days=unpriced,
            assumptions=self.notes(year, month, gpus, utilisation, unpriced),
        )

    def notes(self, year: int, month: int, gpus: int, utilisation: Decimal | None, unpriced_days: int = 0) -> list[str]:
        """The rules and figures behind an owned month's cost, one sentence each."""
        p = self.power
        live = [x for x in self.purchases if x.in_service(year, month)]
        notes = [
            "Owned: its own cost, no rental quote. Depreciation is straight-line: (price - residual) / useful "
            "life, a whole month's share in each month from the month of purchase. "
            + "; ".join(
                f"{x.nodes} node(s) bought {x.bought_on.isoformat()} for {price_text(x.usd)} USD, "
                f"{x.useful_life_months} months, residual {price_text(x.residual_usd)} USD"
                for x in live
            )
            + ".",
        ]
        if utilisation is None or p.gpu_idle_w is None:
            why = "no utilisation polled" if utilisation is None else "no idle figure for the SKU"
            draw = f"{plain(p.gpu_full_w)} W per GPU, full load ({why})"
        else:
            draw = (
                f"{plain(quantize(p.gpu_watts(utilisation)))} W per GPU = {plain(p.gpu_idle_w)} W idle + "
                f"{plain(utilisation)} utilisation x ({plain(p.gpu_full_w)} - {plain(p.gpu_idle_w)}) W (linear model)"
            )
        notes.append(
            f"Energy = ({gpus} GPUs x {draw} + {self.nodes_for(gpus)} node(s) x {plain(p.node_overhead_w)} W "
            f"overhead) x PUE {plain(p.pue)} x hours on, at the site's electricity price in force each day."
        )
        notes.append(
            f"Fixed each month, spread evenly over its days: colocation {plain(self.racks)} rack(s) x "
            f"{price_text(self.usd_per_rack_month)} USD; support {plain(self.support_share_per_year)} of the "
            f"purchase price a year / 12; staff {price_text(self.staff_usd_per_month)} USD."
        )
        notes.append("USD per GPU-hour = the day's cost (fixed share + energy) / the GPU-hours switched on.")
        if unpriced_days:
            notes.append(
                f"{unpriced_days} day(s) unpriced: no purchase in service or no electricity price on record; "
                "their cost is not in the figures."
            )
        return notes


@dataclass(frozen=True, slots=True)
class BuyOption:
    """Buying the GPUs of a rent-vs-API comparison instead of renting them: what it costs up front and
    a month, and the months until buying pays back against renting and against the API (None: never,
    the monthly saving is not positive)."""

    upfront_usd: Decimal
    monthly_usd: Decimal
    monthly_running_usd: Decimal
    parts: dict[str, Decimal]
    payback_months_vs_rent: Decimal | None
    payback_months_vs_api: Decimal | None
    assumptions: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "upfront_usd": dec_str(self.upfront_usd),
            "monthly_usd": dec_str(self.monthly_usd),
            "monthly_running_usd": dec_str(self.monthly_running_usd),
            "parts": {name: dec_str(value) for name, value in self.parts.items()},
            "payback_months_vs_rent": dec_str(self.payback_months_vs_rent),
            "payback_months_vs_api": dec_str(self.payback_months_vs_api),
            "assumptions": list(self.assumptions),
        }


def _payback(upfront: Decimal, running: Decimal, alternative: Decimal) -> Decimal | None:
    saving = alternative - running
    return None if saving <= 0 else quantize(upfront / saving)


def buy_option(
    *,
    gpus: int,
    gpus_per_node: int,
    usd_per_gpu: Number,
    power: Power,
    usd_per_kwh: Number,
    monthly_rent_usd: Number,
    monthly_api_usd: Number,
    hours_per_day: Number = HOURS_PER_DAY,
    days_per_month: int = 30,
    useful_life_months: int = DEFAULT_USEFUL_LIFE_MONTHS,
    residual_share: Number = 0,
    utilisation: Number | None = None,
    racks: Number = 0,
    usd_per_rack_month: Number = 0,
    support_share_per_year: Number = 0,
    staff_usd_per_month: Number = 0,
) -> BuyOption:
    """Buy ``gpus`` GPUs (whole nodes of ``gpus_per_node``) at ``usd_per_gpu`` instead of renting them.

    - upfront = nodes x GPUs per node x price per GPU; monthly = depreciation (upfront x (1 - residual
      share) / life) + energy + colocation + support + staff (``OwnedCluster``'s rules, over a
      ``days_per_month``-day month, the month rent vs API uses);
    - running = monthly - depreciation: what owning costs a month besides the purchase;
    - payback vs renting = upfront / (rent - running) months, and vs the API = upfront / (API - running);
      None when the saving is not positive (buying never pays back). The residual value is not
      counted as a saving (conservative).
    """
    f = Fields()
    g = f.integer("gpus", gpus, minimum=1)
    per_node = f.integer("gpus_per_node", gpus_per_node, minimum=1)
    price = f.decimal("usd_per_gpu", usd_per_gpu, above=True)
    kwh_price = f.decimal("usd_per_kwh", usd_per_kwh, maximum=100)
    rent = f.decimal("monthly_rent_usd", monthly_rent_usd)
    api = f.decimal("monthly_api_usd", monthly_api_usd)
    hours = f.hours_per_day("hours_per_day", hours_per_day)
    days = f.integer("days_per_month", days_per_month, minimum=1, maximum=31)
    life = f.integer("useful_life_months", useful_life_months, minimum=1, maximum=600)
    residual = f.fraction("residual_share", residual_share)
    u = f.fraction("utilisation", utilisation, optional=True)
    racks_n = f.decimal("racks", racks, maximum=100_000)
    colo = f.decimal("usd_per_rack_month", usd_per_rack_month)
    support = f.fraction("support_share_per_year", support_share_per_year)
    staff = f.decimal("staff_usd_per_month", staff_usd_per_month)
    f.raise_if_any()
    nodes = -(-g // per_node)
    upfront = nodes * per_node * price
    depreciation = upfront * (1 - residual) / life
    kwh = power.facility_kw(g, nodes, u) * hours * days
    parts = {
        "depreciation": depreciation,
        "energy": kwh * kwh_price,
        "colocation": racks_n * colo,
        "support": upfront * support / 12,
        "staff": staff,
    }
    monthly = sum(parts.values(), Decimal(0))
    running = monthly - depreciation
    notes = [
        f"Buy: {nodes} node(s) x {per_node} GPUs x {price_text(price)} USD = {price_text(upfront)} USD up front, "
        f"depreciated straight-line over {life} months to a residual of {plain(residual)} of the price.",
        f"Energy: {g} GPUs x {plain(quantize(power.gpu_watts(u)))} W"
        + (" (full load: no utilisation given)" if u is None or power.gpu_idle_w is None else "")
        + f" + {nodes} node(s) x {plain(power.node_overhead_w)} W, x PUE {plain(power.pue)}, x "
        f"{plain(hours * days)} h = {plain(quantize(kwh))} kWh at {price_text(kwh_price)} USD/kWh.",
        f"Colocation {plain(racks_n)} rack(s) x {price_text(colo)} USD a month; support {plain(support)} of the price "
        f"a year; staff {price_text(staff)} USD a month.",
        "Payback = up-front price / (the alternative's monthly cost - owning's running cost); the residual value "
        "is not counted as a saving.",
    ]
    return BuyOption(
        upfront_usd=usd(upfront),
        monthly_usd=usd(monthly),
        monthly_running_usd=usd(running),
        parts={name: usd(value) for name, value in parts.items()},
        payback_months_vs_rent=_payback(upfront, running, rent),
        payback_months_vs_api=_payback(upfront, running, api),
        assumptions=notes,
    )


Choice = Literal["rent", "api", "buy"]


def cheapest_of_three(
    rent_usd: Decimal, api_usd: Decimal, buy: BuyOption, cheaper: str | None, api_wins: bool | None
) -> tuple[Choice | None, str]:
    """Which of renting, the API and buying costs least a month at the workload's volume, and a sentence.

    ``cheaper`` and ``api_wins`` are rent vs API's (``breakeven``): None when the layout does not fit
    (then neither renting nor buying it serves the model: no recommendation); when the API wins at every
    volume the GPUs can serve, it wins here too (buying the same GPUs serves no more). Otherwise the
    least monthly cost wins (buying counted with its depreciation); a tie goes to the API, then to
    renting (nothing to buy or commit to)."""
    if cheaper is None:
        return None, "The layout does not fit, so neither renting nor buying it can serve the model."
    payback = []
    if buy.payback_months_vs_rent is not None:
        payback.append(f"pays back against renting in {plain(buy.payback_months_vs_rent)} months")
    else:
        payback.append("never pays back against renting (renting costs no more than running owned GPUs)")
    if buy.payback_months_vs_api is not None:
        payback.append(f"against the API in {plain(buy.payback_months_vs_api)} months")
    else:
        payback.append("never against the API")
    tail = (
        f"Buying costs {usd_text(buy.monthly_usd)} a month ({usd_text(buy.upfront_usd)} up front) and "
        + ", ".join(payback)
        + "."
    )
    if api_wins:
        return "api", f"The API wins at every volume these GPUs can serve, bought or rented. {tail}"
    costs: dict[Choice, Decimal] = {"api": api_usd, "rent": rent_usd, "buy": buy.monthly_usd}
    best = min(costs, key=lambda k: (costs[k], list(costs).index(k)))
    lead = {
        "api": f"The API is cheapest at this volume ({usd_text(api_usd)} a month).",
        "rent": f"Renting is cheapest at this volume ({usd_text(rent_usd)} a month).",
        "buy": f"Buying is cheapest at this volume ({usd_text(buy.monthly_usd)} a month with depreciation).",
    }[best]
    return best, f"{lead} {tail}"
