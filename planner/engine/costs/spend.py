"""A cluster's dated history (``ClusterState``), its validation and the words for a change; the
monthly spend computed from it is ``ledger.spend_month``, whose pro-rating rule is this one.

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
  day for the state's SKU (``ledger.spend_month``'s rate lookup ``(state, day)``).
- A cluster's month cost is rounded to the cent; subtotals (team, provider, model) and totals are
  sums of the rounded costs, so they add up exactly.
- A cluster is attributed to the team, provider and SKU of its last active day in the month.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from ..units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from .money import Fields, Number, as_day, plain

__all__ = ["STATUSES", "ClusterState", "check_states", "describe_change"]

STATUSES = ("planned", "active", "retired")
"""The statuses of ``fleet.models.Cluster.Status``; only ``active`` bills."""


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
