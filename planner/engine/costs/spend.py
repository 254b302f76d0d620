"""Monthly GPU spend of the fleet from a dated history of cluster states.

Clusters change: they are resized, switched on for fewer hours a day, retired. A cluster's
history is a list of ``ClusterState`` segments; each takes effect on the calendar day of its
``effective_from`` and stays in force until the next one.

Pro-rating rule (docs/costs.md), day granularity:

- For every calendar day of the month (July = 31 days), the state in force that day is the
  latest whose ``effective_from`` falls on or before it. A state dated mid-day (a ``datetime``)
  applies to its whole calendar day (the datetime's own wall-clock date: convert to the billing
  time zone first); of several states dated the same day the latest one (by time, then list
  order) applies to that day.
- Only ``active`` states count: a day under a ``planned`` or ``retired`` state, or before the
  cluster's first state, costs nothing.
- GPU-hours of a day = GPUs x hours per day; cost of a day = GPU-hours x the rate in force that
  day for the state's SKU (a mapping sku -> USD per GPU-hour, or a callable ``(state, day)``,
  e.g. ``quotes.rate_from_quotes``).
- A cluster's month cost is rounded to the cent; subtotals (team, provider) and totals are sums
  of the rounded cluster costs, so they add up exactly. Idle cost = cost x (1 - utilisation)
  for clusters whose utilisation is given.
- A cluster is attributed to the team, provider and SKU of its last active day in the month.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from ..units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from .money import MILLS, Fields, Number, as_day, dec_str, plain, usd

__all__ = ["STATUSES", "ClusterSpend", "ClusterState", "SpendResult", "SpendSubtotal", "monthly_spend"]

STATUSES = ("planned", "active", "retired")
"""The statuses of ``fleet.models.Cluster.Status``; only ``active`` bills."""

RateLookup = Mapping[str, Number] | Callable[[Any, date], Decimal | None]


@dataclass(frozen=True, slots=True)
class ClusterState:
    """One segment of a cluster's history: from ``effective_from`` on, the cluster has ``gpus``
    GPUs switched on ``hours_per_day`` hours a day, with ``status`` (``planned|active|retired``)."""

    cluster: str
    team: str
    provider: str
    sku: str
    effective_from: date | datetime
    gpus: int
    hours_per_day: Number = 24
    status: str = "active"

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "team": self.team,
            "provider": self.provider,
            "sku": self.sku,
            "effective_from": self.effective_from.isoformat(),
            "gpus": self.gpus,
            "hours_per_day": str(self.hours_per_day),
            "status": self.status,
        }


@dataclass(frozen=True, slots=True)
class ClusterSpend:
    """One cluster's month."""

    cluster: str
    team: str
    provider: str
    sku: str
    gpus: int  # the most GPUs active on any day of the month
    gpus_at_month_end: int  # 0 when the cluster is not active on the month's last day
    active_days: int
    gpu_hours: Decimal
    usd_per_gpu_hour: Decimal | None  # cost / GPU-hours (the GPU-hour-weighted mean rate), 4 decimals
    cost_usd: Decimal  # rounded to the cent
    utilisation: Decimal | None
    idle_cost_usd: Decimal | None
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "team": self.team,
            "provider": self.provider,
            "sku": self.sku,
            "gpus": self.gpus,
            "gpus_at_month_end": self.gpus_at_month_end,
            "active_days": self.active_days,
            "gpu_hours": dec_str(self.gpu_hours),
            "usd_per_gpu_hour": dec_str(self.usd_per_gpu_hour, MILLS),
            "cost_usd": dec_str(self.cost_usd),
            "utilisation": dec_str(self.utilisation, MILLS),
            "idle_cost_usd": dec_str(self.idle_cost_usd),
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True, slots=True)
class SpendSubtotal:
    """Sum over the clusters of one team or one provider. ``idle_cost_usd`` sums the clusters whose
    utilisation was given (``None`` when none was)."""

    name: str
    clusters: list[str]
    gpu_hours: Decimal
    cost_usd: Decimal
    idle_cost_usd: Decimal | None
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "clusters": list(self.clusters),
            "gpu_hours": dec_str(self.gpu_hours),
            "cost_usd": dec_str(self.cost_usd),
            "idle_cost_usd": dec_str(self.idle_cost_usd),
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True, slots=True)
class SpendResult:
    """The fleet's GPU spend in one calendar month."""

    year: int
    month: int
    days_in_month: int
    clusters: list[ClusterSpend]
    by_team: dict[str, SpendSubtotal]
    by_provider: dict[str, SpendSubtotal]
    total_gpu_hours: Decimal
    total_cost_usd: Decimal
    total_idle_cost_usd: Decimal | None
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: Decimals as strings (USD 2 decimals, rates 4), subtotals keyed by name."""
        return {
            "year": self.year,
            "month": self.month,
            "days_in_month": self.days_in_month,
            "clusters": [c.to_dict() for c in self.clusters],
            "by_team": {k: v.to_dict() for k, v in self.by_team.items()},
            "by_provider": {k: v.to_dict() for k, v in self.by_provider.items()},
            "total_gpu_hours": dec_str(self.total_gpu_hours),
            "total_cost_usd": dec_str(self.total_cost_usd),
            "total_idle_cost_usd": dec_str(self.total_idle_cost_usd),
            "assumptions": list(self.assumptions),
        }


@dataclass(slots=True)
class _State:
    source: ClusterState
    day: date
    order: tuple
    gpus: int
    hours_per_day: Decimal


def _seconds_into_day(value: date | datetime) -> float:
    if isinstance(value, datetime):
        return (
            value.hour * SECONDS_PER_HOUR + value.minute * SECONDS_PER_MINUTE + value.second + value.microsecond / 1e6
        )
    return 0.0


def check_states(f: Fields, states: Iterable[ClusterState]) -> dict[str, list[_State]]:
    """Each cluster's valid states in the order they take effect (errors added to ``f`` by field);
    shared with ``ledger.spend_month``."""
    by_cluster: dict[str, list[_State]] = {}
    for n, s in enumerate(states):
        p = f"states.{n}."
        if not isinstance(s, ClusterState):
            f.add(f"states.{n}", "Must be a ClusterState.")
            continue
        for name in ("cluster", "team", "provider", "sku"):
            if not isinstance(getattr(s, name), str) or not getattr(s, name):
                f.add(p + name, "Must be a non-empty string.")
        if not isinstance(s.effective_from, date):
            f.add(p + "effective_from", "Must be a date or a datetime.")
        if s.status not in STATUSES:
            f.add(p + "status", f"Unknown status {s.status!r}; use one of {', '.join(STATUSES)}.")
        gpus = f.integer(p + "gpus", s.gpus, minimum=1)
        hours = f.hours_per_day(p + "hours_per_day", s.hours_per_day)
        if gpus is None or hours is None or not isinstance(s.effective_from, date) or not isinstance(s.cluster, str):
            continue
        day = as_day(s.effective_from)
        by_cluster.setdefault(s.cluster, []).append(
            _State(s, day, (day, _seconds_into_day(s.effective_from), n), gpus, hours)
        )
    for history in by_cluster.values():
        history.sort(key=lambda st: st.order)
    return by_cluster


def _rate_getter(rates: RateLookup) -> Callable[[ClusterState, date], Any]:
    if isinstance(rates, Mapping):
        return lambda state, _day: rates.get(state.sku)
    if callable(rates):
        return rates
    raise TypeError("rates must be a mapping sku -> USD per GPU-hour or a callable (state, day) -> rate")


def _subtotals(rows: list[ClusterSpend], key: str) -> dict[str, SpendSubtotal]:
    groups: dict[str, list[ClusterSpend]] = {}
    for r in rows:
        groups.setdefault(getattr(r, key), []).append(r)
    out = {}
    for name in sorted(groups):
        members = groups[name]
        idles = [r.idle_cost_usd for r in members if r.idle_cost_usd is not None]
        notes = []
        if idles and len(idles) < len(members):
            notes.append(f"Idle cost covers {len(idles)} of {len(members)} clusters (utilisation given for those).")
        out[name] = SpendSubtotal(
            name=name,
            clusters=[r.cluster for r in members],
            gpu_hours=sum((r.gpu_hours for r in members), Decimal(0)),
            cost_usd=sum((r.cost_usd for r in members), Decimal(0)),
            idle_cost_usd=sum(idles, Decimal(0)) if idles else None,
            assumptions=notes,
        )
    return out


def monthly_spend(
    states: Iterable[ClusterState],
    year: int,
    month: int,
    rates: RateLookup,
    utilisation: Mapping[str, Number] | None = None,
    through: date | None = None,
) -> SpendResult:
    """GPU-hours and cost of every cluster active in ``year``-``month``, with subtotals by team and
    provider and totals. ``rates`` maps a SKU to USD per GPU-hour, or is a callable
    ``(state, day) -> Decimal | None`` (see ``quotes.rate_from_quotes``) looked up per day.
    ``utilisation`` maps a cluster slug to the fraction of its paid hours doing useful work.

    ``through`` (a day of the month) counts the month only up to and including that day, each day whole
    (month to date: the same rules, fewer days).

    8 GPUs from 1 July and 16 from 16 July, 24 h a day: 8 x 24 x 15 + 16 x 24 x 16 = 9,024 GPU-hours
    (``through=date(y, 7, 20)``: 8 x 24 x 15 + 16 x 24 x 5 = 4,800).
    Raises ``EngineInputError`` for bad states, a bad month, a missing or negative rate.
    """
    f = Fields()
    y = f.integer("year", year, minimum=1, maximum=9999)
    m = f.integer("month", month, minimum=1, maximum=12)
    states = list(states)
    by_cluster = check_states(f, states)
    util: dict[str, Decimal] = {}
    for slug, value in (utilisation or {}).items():
        u = f.fraction(f"utilisation.{slug}", value)
        if u is not None:
            util[slug] = u
    f.raise_if_any()
    rate_of = _rate_getter(rates)

    days_in_month = calendar.monthrange(y, m)[1]
    days = [date(y, m, 1) + timedelta(days=k) for k in range(days_in_month)]
    notes = [f"{calendar.month_name[m]} {y}: {days_in_month} calendar days."]
    if through is not None:
        days = [day for day in days if day <= through]
        notes.append(f"Month to date: {len(days)} day(s), through {through.isoformat()}, each counted whole.")
    notes += [
        "Day granularity: a state applies from the whole calendar day of its effective date; only active states bill.",
        "Each cluster's cost is rounded to the cent; subtotals and totals add the rounded costs.",
    ]

    rows: list[ClusterSpend] = []
    missing: dict[tuple[str, str], list[date]] = {}
    for slug in sorted(by_cluster):
        history = by_cluster[slug]
        hours_total = Decimal(0)
        cost_total = Decimal(0)
        active_days = 0
        max_gpus = 0
        last: _State | None = None
        seen: dict[str, set[str]] = {"team": set(), "provider": set(), "sku": set()}
        changes: list[str] = []
        previous: tuple | None = None
        idx = -1
        for day in days:
            while idx + 1 < len(history) and history[idx + 1].day <= day:
                idx += 1
            if idx < 0:
                continue
            st = history[idx]
            signature = (st.source.status, st.gpus, st.hours_per_day)
            if previous is None and day != days[0]:
                changes.append(
                    f"From {day.isoformat()}: first state, {signature[0]}, {signature[1]} GPUs, "
                    f"{plain(signature[2])} h a day."
                )
            elif previous is not None and signature != previous:
                changes.append(describe_change(previous, signature, day))
            previous = signature
            if st.source.status != "active":
                continue
            raw = rate_of(st.source, day)
            if raw is None:
                missing.setdefault((slug, st.source.sku), []).append(day)
                continue
            rate = f.decimal(f"rates.{st.source.sku}", raw)
            if rate is None:
                continue
            gpu_hours = st.gpus * st.hours_per_day
            hours_total += gpu_hours
            cost_total += gpu_hours * rate
            active_days += 1
            max_gpus = max(max_gpus, st.gpus)
            last = st
            for name in seen:
                seen[name].add(getattr(st.source, name))
        if last is None:
            continue
        cluster_notes = [f"Active {active_days} of {days_in_month} days.", *changes]
        for name, values in seen.items():
            if len(values) > 1:
                cluster_notes.append(
                    f"The {name} changed during the month ({', '.join(sorted(values))}); the whole month is "
                    f"attributed to {getattr(last.source, name)!r}."
                )
        cost = usd(cost_total)
        u = util.get(slug)
        end = history[idx]  # the state in force on the month's last day
        rows.append(
            ClusterSpend(
                cluster=slug,
                team=last.source.team,
                provider=last.source.provider,
                sku=last.source.sku,
                gpus=max_gpus,
                gpus_at_month_end=end.gpus if end.source.status == "active" else 0,
                active_days=active_days,
                gpu_hours=hours_total,
                usd_per_gpu_hour=(cost_total / hours_total).quantize(MILLS) if hours_total else None,
                cost_usd=cost,
                utilisation=u,
                idle_cost_usd=None if u is None else usd(cost * (1 - u)),
                assumptions=cluster_notes,
            )
        )
    for (slug, sku), missed in missing.items():
        span = missed[0].isoformat() if len(missed) == 1 else f"{missed[0].isoformat()} to {missed[-1].isoformat()}"
        f.add("rates", f"No rate for SKU {sku!r} (cluster {slug!r}) on {len(missed)} day(s), {span}.")
    f.raise_if_any()

    unknown = sorted(set(util) - {r.cluster for r in rows})
    if unknown:
        notes.append(f"Utilisation given for clusters without an active day this month: {', '.join(unknown)}.")
    idles = [r.idle_cost_usd for r in rows if r.idle_cost_usd is not None]
    if idles:
        notes.append("Idle cost = cost x (1 - utilisation): idle GPUs bill the same as busy ones (the seeds).")
    return SpendResult(
        year=y,
        month=m,
        days_in_month=days_in_month,
        clusters=rows,
        by_team=_subtotals(rows, "team"),
        by_provider=_subtotals(rows, "provider"),
        total_gpu_hours=sum((r.gpu_hours for r in rows), Decimal(0)),
        total_cost_usd=sum((r.cost_usd for r in rows), Decimal(0)),
        total_idle_cost_usd=sum(idles, Decimal(0)) if idles else None,
        assumptions=notes,
    )


def describe_change(before: tuple, after: tuple, day: date) -> str:
    """``(status, gpus, hours per day)`` before and after a change on ``day``, in words."""
    (s0, g0, h0), (s1, g1, h1) = before, after
    parts = []
    if s0 != s1:
        parts.append(f"{s0} -> {s1}")
    if g0 != g1:
        parts.append(f"{g0} -> {g1} GPUs")
    if h0 != h1:
        parts.append(f"{plain(h0)} -> {plain(h1)} h a day")
    return f"From {day.isoformat()}: {', '.join(parts)}."
