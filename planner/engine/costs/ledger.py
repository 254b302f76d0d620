"""A month's GPU spend split into what was spent and what is projected, down to deployments.

Issue 15 ("Spend"): a projection must never be labelled as spent, idle cost must come from how
much of the admitted capacity ran, and a missing quote must be said, not hidden. The
pro-rating rule is the one in ``spend.py``'s docstring (docs/costs.md, "Monthly spend and the pro-rating
rule"); this module adds, day by day:

- **Actual or projected.** A day on or before ``today`` is *actual*: the state in force that day
  (the cluster's dated history) at the rate in force that day (``actual_rate(state, day)``). A day
  after ``today`` is *projected*: the state the history holds for that day (today's, or a change
  already scheduled for it) at the rate in force today (``projected_rate(state, today)``). Today
  counts as actual, whole (as ``/metrics``' month to date). A past month is all actual, a future
  month all projected.
- **Deployments and the unassigned rest.** Each day, a deployment registered on or before that
  day holds its GPUs (``DeploymentShare.gpus``) of its cluster; the cluster's other GPUs are the
  cluster's *unassigned* line. When the deployments claim more GPUs than the cluster had that day
  (it was smaller then), their shares are scaled down in proportion (said in the warnings), so
  the lines always add up to the cluster.
- **Unpriced days.** A day whose rate lookup returns ``None`` has no quote: its GPU-hours are
  counted as ``unpriced`` and cost nothing in the figures, and a ``missing`` warning names the
  cluster and the day range (never a zero said as a price). A cluster is priced by its own provider's
  quote or list price only (``price_in_force``), never by another provider's.
- **Idle cost** per deployment = actual cost x (1 - utilisation) (``formulas.idle_cost_usd``; the
  seeds: "Idle GPUs bill the same"), with utilisation = mean running sequences over the admitted
  capacity (``utilisation_from_polls``). No utilisation, no idle figure (``None``: unknown, not
  zero); the unassigned line has no polls, so its idle cost is unknown too. Projected days have no
  idle figure (nothing has run on them yet).
- **Rounding.** Each cluster's actual and projected costs are rounded to the cent; deployment lines
  are rounded and the unassigned line takes the remainder, so lines add up to their cluster and
  subtotals and totals add up to the clusters exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from .formulas import idle_cost_usd
from .money import CENT, MILLS, Fields, Number, calendar_month_days, calendar_month_label, dec_str, plain, usd
from .spend import ClusterState, check_states, describe_change

__all__ = [
    "UNASSIGNED",
    "DeploymentShare",
    "MonthSpend",
    "Rate",
    "SpendLine",
    "SpendPart",
    "SpendWarning",
    "spend_month",
    "utilisation_from_polls",
]

ONE_DAY = timedelta(days=1)

#: The name of a cluster's line of GPUs that no deployment holds (and of their model subtotal).
UNASSIGNED = "(unassigned)"


@dataclass(frozen=True, slots=True)
class Rate:
    """A rate found for a state on a day: USD per GPU-hour (the cluster's price in force)."""

    usd_per_gpu_hour: Decimal


@dataclass(frozen=True, slots=True)
class DeploymentShare:
    """A deployment as spend sees it: it holds ``gpus`` GPUs of ``cluster`` from the day ``since``
    (its registration) on, serving ``model``."""

    deployment: str
    cluster: str
    model: str
    gpus: int
    since: date


RateLookup = Callable[[ClusterState, date], "Rate | Decimal | None"]


def utilisation_from_polls(running_sequences_sum: Number, polls: int, capacity_sequences: int | None) -> Decimal | None:
    """Mean share of the admitted capacity in use over a set of polls, 0..1.

    ``running_sequences_sum``: the sum over the polls of the requests running at each poll (vLLM
    ``vllm:num_requests_running``, SGLang ``sglang:num_running_reqs``; a poll that found the
    endpoint down counts 0); ``polls``: how many polls; ``capacity_sequences``: the concurrent
    sequences the deployment admits (the sizing engine's ``max_concurrent_sequences``).

    utilisation = running_sequences_sum / (polls x capacity_sequences), capped at 1 (issue 15:
    "utilisation = running sequences / admitted capacity over the polls"; a GPU with one request
    running out of 64 admitted is 1/64 busy, not busy). ``None`` when there are no polls or no
    capacity (unknown, never zero). 3 polls seeing 8, 16 and 0 running of 32 admitted: 24 / 96 = 0.25.
    """
    if not polls or not capacity_sequences or capacity_sequences <= 0:
        return None
    value = Decimal(str(running_sequences_sum)) / (Decimal(polls) * Decimal(capacity_sequences))
    return max(Decimal(0), min(Decimal(1), value)).quantize(MILLS)


def priced_usd(cost_usd: Decimal | None, gpu_hours: Decimal, unpriced_gpu_hours: Decimal) -> str | None:
    """``cost_usd`` as the API writes it, or None when none of the GPU-hours behind it were priced (all of
    them unpriced): never a 0.00 said as a cost."""
    if cost_usd is None or (not gpu_hours and unpriced_gpu_hours):
        return None
    return dec_str(cost_usd)


@dataclass(frozen=True, slots=True)
class SpendPart:
    """GPU-hours and USD of one part of a month (``actual`` or ``projected``) for one line."""

    gpu_hours: Decimal = Decimal(0)
    cost_usd: Decimal = Decimal(0)
    unpriced_gpu_hours: Decimal = Decimal(0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu_hours": dec_str(self.gpu_hours),
            "cost_usd": priced_usd(self.cost_usd, self.gpu_hours, self.unpriced_gpu_hours),
            "unpriced_gpu_hours": dec_str(self.unpriced_gpu_hours),
        }


@dataclass(frozen=True, slots=True)
class SpendLine:
    """One line of the month: a cluster, a deployment (or a cluster's unassigned GPUs), or a subtotal.

    ``cost_usd`` = ``actual.cost_usd`` + ``projected.cost_usd`` (the month as expected; only
    ``actual`` was spent); written as None (``priced_usd``) where none of its GPU-hours were priced.
    ``idle_cost_usd`` covers the actual part of the lines whose utilisation
    is known; ``idle_unknown_usd`` is the actual cost of those whose utilisation is not.
    """

    name: str
    kind: str  # cluster | deployment | unassigned | team | provider | model
    cluster: str | None
    model: str | None
    team: str | None
    provider: str | None
    sku: str | None
    gpus: int  # the most GPUs held on any day of the month
    actual: SpendPart
    projected: SpendPart
    utilisation: Decimal | None
    idle_cost_usd: Decimal | None
    idle_unknown_usd: Decimal
    polls: int | None = None
    active_days: int | None = None
    members: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def cost_usd(self) -> Decimal:
        return self.actual.cost_usd + self.projected.cost_usd

    @property
    def gpu_hours(self) -> Decimal:
        return self.actual.gpu_hours + self.projected.gpu_hours

    def to_dict(self) -> dict[str, Any]:
        unpriced = self.actual.unpriced_gpu_hours + self.projected.unpriced_gpu_hours
        return {
            "name": self.name,
            "kind": self.kind,
            "cluster": self.cluster,
            "model": self.model,
            "team": self.team,
            "provider": self.provider,
            "sku": self.sku,
            "gpus": self.gpus,
            "gpu_hours": dec_str(self.gpu_hours),
            "cost_usd": priced_usd(self.cost_usd, self.gpu_hours, unpriced),
            "actual_gpu_hours": dec_str(self.actual.gpu_hours),
            "actual_cost_usd": priced_usd(self.actual.cost_usd, self.actual.gpu_hours, self.actual.unpriced_gpu_hours),
            "projected_gpu_hours": dec_str(self.projected.gpu_hours),
            "projected_cost_usd": priced_usd(
                self.projected.cost_usd, self.projected.gpu_hours, self.projected.unpriced_gpu_hours
            ),
            "unpriced_gpu_hours": dec_str(unpriced),
            "utilisation": dec_str(self.utilisation, MILLS),
            "idle_cost_usd": priced_usd(self.idle_cost_usd, self.actual.gpu_hours, self.actual.unpriced_gpu_hours),
            "idle_unknown_usd": dec_str(self.idle_unknown_usd),
            "polls": self.polls,
            "active_days": self.active_days,
            "members": list(self.members),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class SpendWarning:
    """A quote ``missing`` (no rate: those GPU-hours are unpriced), or deployments ``over_assigned``
    (claiming more GPUs than the cluster had), for one cluster over a run of consecutive days of one part
    of the month."""

    kind: str  # missing | over_assigned
    part: str  # actual | projected
    cluster: str
    sku: str
    provider: str
    first_day: date
    last_day: date
    days: int
    gpu_hours: Decimal
    usd_per_gpu_hour: Decimal | None = None

    @property
    def message(self) -> str:
        span = self.first_day.isoformat() if self.days == 1 else f"{self.first_day} to {self.last_day}"
        where = f"cluster {self.cluster} ({self.provider}, {self.sku}), {span} ({self.days} day(s), {self.part})"
        if self.kind == "missing":
            return (
                f"No quote in force for {where}: {self.gpu_hours.quantize(CENT):,} GPU-hours are unpriced and not "
                "in the figures."
            )
        return (
            f"Deployments on {where} hold more GPUs than the cluster had; their shares were scaled down to "
            "the cluster's GPUs."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "part": self.part,
            "cluster": self.cluster,
            "sku": self.sku,
            "provider": self.provider,
            "first_day": self.first_day.isoformat(),
            "last_day": self.last_day.isoformat(),
            "days": self.days,
            "gpu_hours": dec_str(self.gpu_hours),
            "usd_per_gpu_hour": dec_str(self.usd_per_gpu_hour, MILLS),
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class MonthSpend:
    """The fleet's GPU spend in one calendar month, actual and projected apart."""

    year: int
    month: int
    days_in_month: int
    today: date
    actual_days: int
    projected_days: int
    clusters: list[SpendLine]
    deployments: list[SpendLine]  # deployment lines and each cluster's unassigned line
    by_team: list[SpendLine]
    by_provider: list[SpendLine]
    by_model: list[SpendLine]
    total: SpendLine
    warnings: list[SpendWarning]
    assumptions: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``actual`` (a past month), ``projected`` (a future one) or ``partial`` (this month)."""
        if not self.projected_days:
            return "actual"
        return "projected" if not self.actual_days else "partial"


@dataclass(slots=True)
class _Acc:
    hours: dict[str, Decimal] = field(default_factory=lambda: {"actual": Decimal(0), "projected": Decimal(0)})
    cost: dict[str, Decimal] = field(default_factory=lambda: {"actual": Decimal(0), "projected": Decimal(0)})
    unpriced: dict[str, Decimal] = field(default_factory=lambda: {"actual": Decimal(0), "projected": Decimal(0)})
    max_gpus: int = 0

    def add(self, part: str, gpus: Decimal, hours_per_day: Decimal, rate: Decimal | None) -> None:
        gpu_hours = gpus * hours_per_day
        if rate is None:
            self.unpriced[part] += gpu_hours
        else:
            self.hours[part] += gpu_hours
            self.cost[part] += gpu_hours * rate


def _part(acc: _Acc, name: str, cost: Decimal | None = None) -> SpendPart:
    return SpendPart(
        gpu_hours=acc.hours[name].quantize(CENT),
        cost_usd=usd(acc.cost[name]) if cost is None else cost,
        unpriced_gpu_hours=acc.unpriced[name].quantize(CENT),
    )


def _runs(days: list[date]) -> list[tuple[date, date, int]]:
    """Consecutive runs of sorted days: (first, last, count)."""
    out: list[tuple[date, date, int]] = []
    for day in days:
        if out and day - out[-1][1] == timedelta(days=1):
            first, _, n = out[-1]
            out[-1] = (first, day, n + 1)
        else:
            out.append((day, day, 1))
    return out


def _rate(raw: Rate | Decimal | Number | None, f: Fields, sku: str) -> Rate | None:
    if raw is None:
        return None
    if not isinstance(raw, Rate):
        raw = Rate(raw)
    value = f.decimal(f"rates.{sku}", raw.usd_per_gpu_hour)
    return None if value is None else Rate(value)


def _idle(actual_cost: Decimal, utilisation: Decimal | None) -> Decimal | None:
    return None if utilisation is None else usd(idle_cost_usd(actual_cost, utilisation))


def _group(lines: list[SpendLine], kind: str, key: Callable[[SpendLine], str]) -> list[SpendLine]:
    groups: dict[str, list[SpendLine]] = {}
    for line in lines:
        groups.setdefault(key(line), []).append(line)
    return [_sum(name, kind, members) for name, members in sorted(groups.items())]


def _sum(name: str, kind: str, members: list[SpendLine]) -> SpendLine:
    def part(which: str) -> SpendPart:
        parts = [getattr(m, which) for m in members]
        return SpendPart(
            sum((p.gpu_hours for p in parts), Decimal(0)),
            sum((p.cost_usd for p in parts), Decimal(0)),
            sum((p.unpriced_gpu_hours for p in parts), Decimal(0)),
        )

    idles = [m.idle_cost_usd for m in members if m.idle_cost_usd is not None]
    unknown = sum((m.idle_unknown_usd for m in members), Decimal(0))
    actual = part("actual")
    return SpendLine(
        name=name,
        kind=kind,
        cluster=None,
        model=None,
        team=None,
        provider=None,
        sku=None,
        gpus=sum(m.gpus for m in members),
        actual=actual,
        projected=part("projected"),
        utilisation=None,
        idle_cost_usd=sum(idles, Decimal(0)) if idles else None,
        idle_unknown_usd=unknown,
        members=[m.name for m in members],
    )


@dataclass(slots=True)
class _Walk:
    """One cluster's month, accumulated day run by day run (``_walk``)."""

    acc: _Acc
    dep_acc: dict[str, _Acc]
    rest: _Acc
    own_shares: list[DeploymentShare]
    last: Any
    active_days: int
    changes: list[str]
    seen: dict[str, set[str]]


def _walk(
    slug: str,
    history: list,
    shares: list[DeploymentShare],
    days: list[date],
    today: date,
    actual_rate: RateLookup,
    projected_rate: RateLookup,
    checked: dict[Any, Rate | None],
    f: Fields,
    raw_warnings: dict[tuple, list[tuple[date, Decimal]]],
) -> _Walk:
    """Walk one cluster's days: the state in force, actual or projected, the rate, the deployments
    holding GPUs; consecutive days alike are added as one run (warnings keep every day)."""
    # Deployments in the order they arrive: the first ``k`` hold GPUs on a day (a pointer, not a scan).
    own_shares = sorted(shares, key=lambda d: d.since)
    claimed_by = [0]
    for d in own_shares:
        claimed_by.append(claimed_by[-1] + d.gpus)
    acc = _Acc()
    dep_acc: dict[str, _Acc] = {d.deployment: _Acc() for d in own_shares}
    rest = _Acc()
    last = None
    active_days = 0

    def flush(run: tuple | None, run_days: list[date]) -> None:
        """Add a run of consecutive days with the same state, part, rate and deployments."""
        nonlocal last, active_days
        if run is None:
            return
        idx, part, rate, k = run
        st = history[idx]
        n = len(run_days)
        hours = st.hours_per_day * n
        value = None if rate is None else rate.usd_per_gpu_hour
        acc.add(part, Decimal(st.gpus), hours, value)
        acc.max_gpus = max(acc.max_gpus, st.gpus)
        active_days += n
        last = st
        for name, values in seen.items():
            values.add(getattr(st.source, name))
        key = (st.source.sku, st.source.provider, part)
        per_day = st.gpus * st.hours_per_day
        if rate is None:
            raw_warnings.setdefault(("missing", slug, *key, None), []).extend((d, per_day) for d in run_days)
        claimed = claimed_by[k]
        if claimed > st.gpus:
            over = ("over_assigned", slug, *key, None)
            raw_warnings.setdefault(over, []).extend((d, per_day) for d in run_days)
        scale = Decimal(1) if claimed <= st.gpus else Decimal(st.gpus) / Decimal(claimed)
        for d in own_shares[:k]:
            dep = dep_acc[d.deployment]
            dep.add(part, d.gpus * scale, hours, value)
            dep.max_gpus = max(dep.max_gpus, d.gpus)
        rest.max_gpus = max(rest.max_gpus, st.gpus - min(claimed, st.gpus))

    idx, k = -1, 0
    run: tuple | None = None
    run_days: list[date] = []
    changes: list[str] = []
    seen: dict[str, set[str]] = {"team": set(), "provider": set(), "sku": set()}
    previous: tuple | None = None
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
        part = "actual" if day <= today else "projected"
        raw = actual_rate(st.source, day) if part == "actual" else projected_rate(st.source, today)
        try:
            rate = checked[raw]
        except KeyError:
            rate = checked[raw] = _rate(raw, f, st.source.sku)
        except TypeError:  # an unhashable rate (a signalling NaN): checked, refused, never memoised
            rate = _rate(raw, f, st.source.sku)
        while k < len(own_shares) and own_shares[k].since <= day:
            k += 1
        key = (idx, part, rate, k)
        if key == run and run_days and run_days[-1] == day - ONE_DAY:
            run_days.append(day)
            continue
        flush(run, run_days)
        run, run_days = key, [day]
    flush(run, run_days)
    return _Walk(acc, dep_acc, rest, own_shares, last, active_days, changes, seen)


def spend_month(
    states: Iterable[ClusterState],
    year: int,
    month: int,
    today: date,
    actual_rate: RateLookup,
    projected_rate: RateLookup | None = None,
    deployments: Iterable[DeploymentShare] = (),
    utilisation: Mapping[str, Number | None] | None = None,
    polls: Mapping[str, int] | None = None,
) -> MonthSpend:
    """Spend of every cluster active in ``year``-``month``, actual (days up to ``today``) and projected
    (the days after), per cluster, per deployment (with each cluster's unassigned GPUs), and subtotals
    by team, provider and model, with the warnings of missing quotes (module docstring).

    ``actual_rate(state, day)`` and ``projected_rate(state, today)`` return a ``Rate`` (or a plain
    USD per GPU-hour, or ``None``: no quote); ``projected_rate`` defaults to ``actual_rate``.
    ``utilisation`` maps a deployment slug to its utilisation over the month's actual days (0..1,
    ``utilisation_from_polls``; ``None`` or absent: unknown); ``polls`` maps it to the polls behind it.

    A cluster of 8 GPUs, 24 h a day, at 2.50 USD/GPU-hour in a 30-day month with ``today`` its 10th:
    actual 8 x 24 x 10 x 2.50 = 4,800 USD, projected 8 x 24 x 20 x 2.50 = 9,600 USD.
    Raises ``EngineInputError`` for bad states, a bad month, a negative rate or a bad utilisation.
    """
    f = Fields()
    y = f.integer("year", year, minimum=1, maximum=9999)
    m = f.integer("month", month, minimum=1, maximum=12)
    if not isinstance(today, date):
        f.add("today", "Must be a date.")
    by_cluster = check_states(f, list(states))
    util: dict[str, Decimal | None] = {}
    for slug, value in (utilisation or {}).items():
        util[slug] = None if value is None else f.fraction(f"utilisation.{slug}", value)
    shares: dict[str, list[DeploymentShare]] = {}
    for n, d in enumerate(deployments):
        if f.integer(f"deployments.{n}.gpus", d.gpus, minimum=1) is not None:
            shares.setdefault(d.cluster, []).append(d)
    f.raise_if_any()
    projected_rate = projected_rate or actual_rate

    days_in_month = calendar_month_days(y, m)
    days = [date(y, m, 1) + timedelta(days=k) for k in range(days_in_month)]
    actual_days = sum(1 for day in days if day <= today)
    notes = [
        f"{calendar_month_label(y, m)}: the calendar month, {days_in_month} days; {actual_days} actual (through "
        f"{min(today, days[-1]).isoformat() if actual_days else '-'}), {days_in_month - actual_days} projected.",
        "Actual days: the hardware in force each day (cluster history) at the quote in force that day. "
        f"Projected days: the hardware the history holds for the day (today's, or a change already scheduled) "
        f"at the quotes in force today ({today.isoformat()}).",
        "Today counts as actual, whole. Only active states bill.",
        "Deployments have no dated history: each holds its current GPUs from the day it was registered; "
        "a cluster's other GPUs are its unassigned line.",
        "Each cluster's actual and projected costs are rounded to the cent; its lines and all subtotals add "
        "the rounded costs.",
    ]

    clusters: list[SpendLine] = []
    lines: list[SpendLine] = []
    raw_warnings: dict[tuple, list[tuple[date, Decimal]]] = {}
    checked: dict[Any, Rate | None] = {}  # a raw rate as validated (days repeat the same few rates)
    for slug in sorted(by_cluster):
        walk = _walk(
            slug, by_cluster[slug], shares.get(slug, []), days, today, actual_rate, projected_rate, checked, f,
            raw_warnings,
        )  # fmt: skip
        f.raise_if_any()  # a rate the lookup gave that is not a usable price (negative, not a number)
        acc, dep_acc, rest, last, active_days = walk.acc, walk.dep_acc, walk.rest, walk.last, walk.active_days
        if last is None:
            continue
        cluster_actual, cluster_projected = _part(acc, "actual"), _part(acc, "projected")
        own_lines: list[SpendLine] = []
        for d in shares.get(slug, []):
            a = dep_acc[d.deployment]
            if not any(a.hours.values()) and not any(a.unpriced.values()):
                continue
            actual = _part(a, "actual")
            u = util.get(d.deployment)
            dep_notes = [] if u is not None else ["No polls with a running-requests figure: utilisation unknown."]
            own_lines.append(
                SpendLine(
                    name=d.deployment,
                    kind="deployment",
                    cluster=slug,
                    model=d.model,
                    team=last.source.team,
                    provider=last.source.provider,
                    sku=last.source.sku,
                    gpus=a.max_gpus,
                    actual=actual,
                    projected=_part(a, "projected"),
                    utilisation=u,
                    idle_cost_usd=_idle(actual.cost_usd, u),
                    idle_unknown_usd=actual.cost_usd if u is None else Decimal(0),
                    polls=(polls or {}).get(d.deployment),
                    notes=dep_notes,
                )
            )
        # The unassigned line takes what the rounded deployment lines leave of the rounded cluster.
        rest_actual = SpendPart(
            cluster_actual.gpu_hours - sum((x.actual.gpu_hours for x in own_lines), Decimal(0)),
            cluster_actual.cost_usd - sum((x.actual.cost_usd for x in own_lines), Decimal(0)),
            cluster_actual.unpriced_gpu_hours - sum((x.actual.unpriced_gpu_hours for x in own_lines), Decimal(0)),
        )
        rest_projected = SpendPart(
            cluster_projected.gpu_hours - sum((x.projected.gpu_hours for x in own_lines), Decimal(0)),
            cluster_projected.cost_usd - sum((x.projected.cost_usd for x in own_lines), Decimal(0)),
            cluster_projected.unpriced_gpu_hours - sum((x.projected.unpriced_gpu_hours for x in own_lines), Decimal(0)),
        )
        if rest.max_gpus or rest_actual.cost_usd or rest_projected.cost_usd:
            own_lines.append(
                SpendLine(
                    name=f"{slug} {UNASSIGNED}",
                    kind="unassigned",
                    cluster=slug,
                    model=UNASSIGNED,
                    team=last.source.team,
                    provider=last.source.provider,
                    sku=last.source.sku,
                    gpus=rest.max_gpus,
                    actual=rest_actual,
                    projected=rest_projected,
                    utilisation=None,
                    idle_cost_usd=None,
                    idle_unknown_usd=rest_actual.cost_usd,
                    notes=["GPUs no deployment holds: no polls measure them, so their idle cost is unknown."],
                )
            )
        lines += own_lines
        idles = [x.idle_cost_usd for x in own_lines if x.idle_cost_usd is not None]
        idle_unknown = sum((x.idle_unknown_usd for x in own_lines), Decimal(0))
        idle = sum(idles, Decimal(0)) if idles else None
        cluster_u = None
        if idle is not None and not idle_unknown and cluster_actual.cost_usd:
            cluster_u = (1 - idle / cluster_actual.cost_usd).quantize(MILLS)
        clusters.append(
            SpendLine(
                name=slug,
                kind="cluster",
                cluster=slug,
                model=None,
                team=last.source.team,
                provider=last.source.provider,
                sku=last.source.sku,
                gpus=acc.max_gpus,
                actual=cluster_actual,
                projected=cluster_projected,
                utilisation=cluster_u,
                idle_cost_usd=idle,
                idle_unknown_usd=idle_unknown,
                active_days=active_days,
                members=[x.name for x in own_lines],
                notes=[
                    f"Active {active_days} of {days_in_month} days.",
                    *walk.changes,
                    *(
                        f"The {name} changed during the month ({', '.join(sorted(values))}); the whole month is "
                        f"attributed to {getattr(last.source, name)!r}."
                        for name, values in walk.seen.items()
                        if len(values) > 1
                    ),
                ],
            )
        )

    warnings: list[SpendWarning] = []
    for (kind, slug, sku, provider, part, rate), entries in raw_warnings.items():
        hours = dict(entries)
        for first, last_day, n in _runs([day for day, _ in entries]):
            run_hours = sum((h for day, h in hours.items() if first <= day <= last_day), Decimal(0))
            warnings.append(SpendWarning(kind, part, slug, sku, provider, first, last_day, n, run_hours, rate))
    warnings.sort(key=lambda w: (w.cluster, w.first_day, w.kind))

    team_lines = [*clusters]
    total = _sum("all clusters", "total", clusters)
    return MonthSpend(
        year=y,
        month=m,
        days_in_month=days_in_month,
        today=today,
        actual_days=actual_days,
        projected_days=days_in_month - actual_days,
        clusters=clusters,
        deployments=lines,
        by_team=_group(team_lines, "team", lambda x: x.team or ""),
        by_provider=_group(clusters, "provider", lambda x: x.provider or ""),
        by_model=_group(lines, "model", lambda x: x.model or UNASSIGNED),
        total=total,
        warnings=warnings,
        assumptions=notes,
    )
