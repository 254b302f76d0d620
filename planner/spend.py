"""Monthly GPU spend from the dated cluster history and the quotes in force each day: actual and
projected apart, per cluster, deployment, team, provider and model, idle cost from utilisation, and
warnings where a cluster is unpriced; a 12-month trend; CSV."""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from fleet import page_cache
from fleet.bills import Billed, billed_by_cluster
from fleet.errors import InputError
from fleet.models import CloudBill, ClusterState, Deployment, ExchangeRate
from fleet.models.polls import left_out_text
from fleet.owned import OwnedBook
from fleet.poll_rollups import left_out_totals, running_totals
from fleet.prices import PriceBook
from fleet.tables import csv_text
from planner.engine import ClusterState as StateSegment
from planner.engine import (
    DeploymentShare,
    MonthSpend,
    SpendLine,
    calendar_month_days,
    calendar_month_hours,
    calendar_month_label,
    rate_from_quotes,
    spend_month,
    utilisation_from_polls,
)
from planner.headroom import stored_headroom, stored_headroom_rows
from planner.models import Budget, SpendSnapshot, SpendSnapshotLine

MONTH = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")


def parse_month(raw: str) -> tuple[int, int] | None:
    """``"2026-07"`` -> ``(2026, 7)``; None when it is not a month written as YYYY-MM."""
    match = MONTH.fullmatch(raw.strip())
    return (int(match[1]), int(match[2])) if match else None


#: The months spend is computed for (inclusive): year 0 is no date, and 9999-12 has no next month
#: to end on; nothing the records describe lies outside these.
FIRST_MONTH = (1970, 1)
LAST_MONTH = (2999, 12)


def month_or_error(raw: str | None, today: date) -> tuple[int, int]:
    """``raw`` (``YYYY-MM``; empty means ``today``'s month) as ``(year, month)``, else InputError
    (not a month, or outside ``FIRST_MONTH``..``LAST_MONTH``)."""
    if not raw:
        return today.year, today.month
    parsed = parse_month(raw)
    if parsed is None:
        raise InputError.single("month", "Give a month as YYYY-MM, e.g. 2026-07.")
    if not FIRST_MONTH <= parsed <= LAST_MONTH:
        first, last = (f"{y:04d}-{m:02d}" for y, m in (FIRST_MONTH, LAST_MONTH))
        raise InputError.single("month", f"Give a month between {first} and {last}.")
    return parsed


def month_after(year: int, month: int, step: int = 1) -> tuple[int, int]:
    """``(year, month)`` moved by ``step`` months (negative: earlier)."""
    index = year * 12 + (month - 1) + step
    return index // 12, index % 12 + 1


def month_text(year: int, month: int) -> str:
    return f"{year:04d}-{month:02d}"


#: Months the trend covers: the month asked for and the eleven before it.
TREND_MONTHS = 12


@dataclass(frozen=True, slots=True)
class SpendReport:
    """A month's spend (``MonthSpend``: actual and projected apart, lines, warnings) and the trend of
    the ``TREND_MONTHS`` months ending with it (totals only)."""

    spend: MonthSpend
    trend: list[MonthSpend]
    pricing_kind: str
    #: Per deployment slug, the untrusted polls of the month's actual days left out of its utilisation
    #: and idle cost, per reason (``fleet.models.polls.poll_distrust``).
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Billed against modelled per cluster (``reconcile``), when the report was made with ``detail``.
    billed: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the API's body): Decimals as strings, USD 2 decimals, rates and fractions 4."""
        s = self.spend
        total = s.total.to_dict()
        prev, nxt = month_after(s.year, s.month, -1), month_after(s.year, s.month, 1)
        return {
            "year": s.year,
            "month": s.month,
            "days_in_month": s.days_in_month,
            "month_hours": calendar_month_hours(s.year, s.month),
            "month_label": calendar_month_label(s.year, s.month),
            "today": s.today.isoformat(),
            "status": s.status,
            "actual_days": s.actual_days,
            "projected_days": s.projected_days,
            "pricing_kind": self.pricing_kind,
            "previous_month": month_text(*prev) if prev >= FIRST_MONTH else None,
            "next_month": month_text(*nxt) if nxt <= LAST_MONTH else None,
            "clusters": [_cluster_dict(c) for c in s.clusters],
            "deployments": [_line_dict(d) for d in s.deployments],
            "by_team": {t.name: _line_dict(t) for t in s.by_team},
            "by_provider": {p.name: _line_dict(p) for p in s.by_provider},
            "by_model": {m.name: _line_dict(m) for m in s.by_model},
            "total_gpu_hours": total["gpu_hours"],
            "total_cost_usd": total["cost_usd"],
            "actual_gpu_hours": total["actual_gpu_hours"],
            "actual_cost_usd": total["actual_cost_usd"],
            "projected_gpu_hours": total["projected_gpu_hours"],
            "projected_cost_usd": total["projected_cost_usd"],
            "unpriced_gpu_hours": total["unpriced_gpu_hours"],
            "total_idle_cost_usd": total["idle_cost_usd"],
            "idle_unknown_usd": total["idle_unknown_usd"],
            "warnings": [w.to_dict() for w in s.warnings],
            "left_out_polls": {
                slug: {"polls": sum(counts.values()), "reasons": dict(counts), "text": left_out_text(counts)}
                for slug, counts in self.left_out.items()
            },
            "trend": [
                {
                    "month": month_text(t.year, t.month),
                    "status": t.status,
                    "actual_cost_usd": dec_str(t.total.actual.cost_usd),
                    "projected_cost_usd": dec_str(t.total.projected.cost_usd),
                    "unpriced_gpu_hours": dec_str(
                        t.total.actual.unpriced_gpu_hours + t.total.projected.unpriced_gpu_hours
                    ),
                    "warnings": len(t.warnings),
                }
                for t in self.trend
            ],
            "assumptions": list(s.assumptions),
            "billed": self.billed,
        }


def dec_str(value: Decimal | None, exp: Decimal = Decimal("0.01")) -> str | None:
    """A Decimal as the API writes it (USD: 2 decimals; rates: 4); None stays None."""
    return None if value is None else str(value.quantize(exp))


def _line_dict(line: SpendLine) -> dict[str, Any]:
    out = line.to_dict()
    out["assumptions"] = out.pop("notes")
    return out


def _cluster_dict(line: SpendLine) -> dict[str, Any]:
    out = _line_dict(line)
    hours = line.actual.gpu_hours + line.projected.gpu_hours
    rate = (line.cost_usd / hours).quantize(Decimal("0.0001")) if hours else None
    out = {"cluster": line.name, **out, "usd_per_gpu_hour": dec_str(rate, Decimal("0.0001"))}
    return out


def spend_for(raw_month: str | None, today: date, pricing_kind: str = "on-demand") -> SpendReport:
    """Spend of every cluster in a month given as ``YYYY-MM`` (empty: ``today``'s), with its trend
    (InputError with field names: a bad month)."""
    return spend_for_month(*month_or_error(raw_month, today), today=today, pricing_kind=pricing_kind)


def spend_report(raw_month: str | None, today: date, pricing_kind: str = "on-demand") -> dict[str, Any]:
    """``spend_for(...).to_dict()`` as stored (``stored_spend``): every cluster and deployment line, for the
    API, its CSV and the budgets. InputError with field names: a bad month."""
    snapshot = stored_spend(raw_month, today, pricing_kind)
    rows = snapshot.line_rows.order_by("position").values_list("kind", "line")
    report = dict(snapshot.summary)
    report["clusters"], report["deployments"] = [], []
    for kind, line in rows.iterator(chunk_size=2000):
        report["clusters" if kind == SpendSnapshotLine.Kind.CLUSTER else "deployments"].append(line)
    return report


#: Cluster and deployment lines the spend page shows (the costliest); the API and the CSV carry every line.
PAGE_LINES = 20
PAGE_CLUSTERS = 25


def spend_page(raw_month: str | None, today: date, pricing_kind: str = "on-demand") -> dict[str, Any]:
    """What the spend page shows of the stored report: its summary, the ``PAGE_CLUSTERS`` costliest clusters
    and the ``PAGE_LINES`` costliest deployment lines (spent + projected; unpriced last), each with its
    left-out polls, and how many of each the report holds (the rest are in the CSV): one ordered, limited
    query per table, nothing read per line the page does not show. InputError: a bad month."""
    snapshot = stored_spend(raw_month, today, pricing_kind)
    report = dict(snapshot.summary)
    left_out = report["left_out_polls"]
    report["clusters"] = _costliest(snapshot, [SpendSnapshotLine.Kind.CLUSTER], PAGE_CLUSTERS)
    lines = _costliest(snapshot, [SpendSnapshotLine.Kind.DEPLOYMENT, SpendSnapshotLine.Kind.UNASSIGNED], PAGE_LINES)
    report["lines"] = [
        {**line, "left_out": left_out.get(line["name"]) if line["kind"] == "deployment" else None} for line in lines
    ]
    # A cluster budget's figures are its cluster's line, shown or not (planner.budgets.figures_for).
    budgeted = Budget.objects.filter(cluster__isnull=False).values_list("cluster__slug", flat=True)
    rows = snapshot.line_rows.filter(kind=SpendSnapshotLine.Kind.CLUSTER, name__in=list(budgeted))
    report["budget_clusters"] = dict(rows.values_list("name", "line"))
    report["cluster_count"], report["line_count"] = snapshot.clusters, snapshot.lines
    report["more_clusters"] = snapshot.clusters - len(report["clusters"])
    report["more_lines"] = snapshot.lines - len(lines)
    return report


def _costliest(snapshot: SpendSnapshot, kinds: list[str], limit: int) -> list[dict[str, Any]]:
    """The ``limit`` costliest lines of ``kinds`` (spent + projected), unpriced ones last in the report's order:
    the priced read down the ``spend_line_cost`` index and stopped at the limit, the unpriced only when there
    are fewer priced lines than that."""
    rows = snapshot.line_rows.filter(kind__in=kinds)
    priced = rows.filter(cost_usd__isnull=False).order_by("-cost_usd", "position")
    lines = list(priced.values_list("line", flat=True)[:limit])
    if len(lines) < limit:
        unpriced = rows.filter(cost_usd__isnull=True).order_by("position")
        lines += unpriced.values_list("line", flat=True)[: limit - len(lines)]
    return lines


def stored_spend(raw_month: str | None, today: date, pricing_kind: str = "on-demand") -> SpendSnapshot:
    """The month's stored report (``planner.models.SpendSnapshot``), computed by ``spend_for_month`` and stored
    first when there is none for the records' current version and ``today``, or when it is older than
    ``settings.SPEND_STORED_S`` (what the version leaves out: the polls behind utilisation, a quote coming into
    force at midnight). Beat's ``planner.refresh_spend`` stores this month's every few minutes
    (``refresh_spend``), so a page finds it made. InputError with field names: a bad month."""
    year, month = month_or_error(raw_month, today)
    text = month_text(year, month)
    key = _spend_key(text, pricing_kind, today)
    fresh_after = timezone.now() - timedelta(seconds=float(settings.SPEND_STORED_S))
    found = SpendSnapshot.objects.filter(month=text, pricing_kind=pricing_kind, key=key, computed_at__gt=fresh_after)
    snapshot = found.first()
    if snapshot is None:
        report = spend_for_month(year, month, today=today, pricing_kind=pricing_kind).to_dict()
        snapshot = _store(text, pricing_kind, key, report)
    return snapshot


def refresh_spend(today: date | None = None) -> SpendSnapshot:
    """Store this month's report anew (beat, with the stored answers): pages then read it made."""
    today = today or timezone.now().date()
    year, month = today.year, today.month
    report = spend_for_month(year, month, today=today).to_dict()
    return _store(month_text(year, month), "on-demand", _spend_key(month_text(year, month), "on-demand", today), report)


def _spend_key(month: str, pricing_kind: str, today: date) -> str:
    parts = (month, pricing_kind, today.isoformat(), str(settings.BILL_VARIANCE_PCT), _spend_version())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _store(month: str, pricing_kind: str, key: str, report: dict[str, Any]) -> SpendSnapshot:
    """Replace the month's stored report by ``report`` (``SpendReport.to_dict()``) in one transaction."""
    clusters, deployments = report["clusters"], report["deployments"]
    summary = {k: v for k, v in report.items() if k not in ("clusters", "deployments")}
    with transaction.atomic():
        snapshot, _ = SpendSnapshot.objects.select_for_update().update_or_create(
            month=month,
            pricing_kind=pricing_kind,
            defaults={
                "key": key,
                "computed_at": timezone.now(),
                "summary": summary,
                "clusters": len(clusters),
                "lines": len(deployments),
            },
        )
        snapshot.line_rows.all().delete()
        rows = [
            SpendSnapshotLine(
                snapshot=snapshot, position=n, kind=line.get("kind", "cluster"), name=line["name"],
                cost_usd=line.get("cost_usd"), line=line,
            )
            for n, line in enumerate([*clusters, *deployments])
        ]  # fmt: skip
        SpendSnapshotLine.objects.bulk_create(rows, batch_size=2000)
        # A report older than SPEND_STORED_S is never read again (stored_spend computes anew): other months'
        # such reports and their lines go, so what is kept is bounded by the months asked for lately.
        too_old = timezone.now() - timedelta(seconds=float(settings.SPEND_STORED_S))
        SpendSnapshot.objects.filter(computed_at__lt=too_old).exclude(pk=snapshot.pk).delete()
    _refresh_line_statistics()
    return snapshot


def _refresh_line_statistics() -> None:
    """On PostgreSQL, ANALYZE the stored lines once a report has replaced them wholesale. Autovacuum gets to it
    within a minute or so; until then the planner believes the table as it last sampled it (empty, or another
    report), estimates one line and sorts every line of the report instead of reading the costliest down
    ``spend_line_cost`` (bench at 10,000 deployments: 12.6 ms against 0.1 ms; docs/benchmarks.md). SQLite plans
    without statistics of this kind."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(SpendSnapshotLine._meta.db_table)}")


def _spend_version() -> str:
    """The fleet's version with the bills' (an import finishing, a bill deleted) and the exchange rates'."""
    return page_cache.fleet_version((CloudBill, ("finished_at",)), (ExchangeRate, ("updated",)))


def _pct(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.1")))


def reconcile(spend: MonthSpend, billed: Billed, threshold_pct: float) -> dict[str, Any]:
    """Billed (done FOCUS bills, ``fleet.bills.billed_by_cluster``) against modelled spend (each cluster's
    actual cost: the days through today) per cluster: variance = billed - modelled, in USD and as a
    percentage of modelled; flagged beyond ``threshold_pct`` either way, or billed where nothing was
    modelled (or modelled unpriced). Without any bill for the month, no cluster is compared."""
    threshold = Decimal(str(threshold_pct))
    modelled: dict[str, Decimal | None] = {}
    for line in spend.clusters:
        priced = line.actual.gpu_hours or not line.actual.unpriced_gpu_hours
        modelled[line.name] = line.actual.cost_usd if priced else None
    rows = []
    if billed.bills:
        for slug in sorted(set(modelled) | set(billed.by_cluster)):
            bill_usd = billed.by_cluster.get(slug, Decimal(0))
            model_usd = modelled.get(slug, Decimal(0))
            if model_usd is None:
                variance = pct = None
                flagged = True
            else:
                variance = bill_usd - model_usd
                pct = variance * 100 / model_usd if model_usd else None
                flagged = abs(pct) > threshold if pct is not None else bool(bill_usd)
            rows.append(
                {
                    "cluster": slug,
                    "billed_usd": dec_str(bill_usd),
                    "modelled_usd": dec_str(model_usd),
                    "variance_usd": dec_str(variance),
                    "variance_pct": None if pct is None else _pct(pct),
                    "flagged": flagged,
                    "rows": billed.rows_by_cluster.get(slug, 0),
                }
            )
    return {
        "threshold_pct": _pct(threshold),
        "bills": billed.bills,
        "clusters": rows,
        "flagged": sum(r["flagged"] for r in rows),
        "unmatched_usd": dec_str(billed.unmatched_usd),
        "unmatched_rows": billed.unmatched_rows,
        "not_compared_usd": dec_str(billed.not_compared_usd),
    }


def _utilisation(
    deployments: list[Deployment], first: date, last_actual: date | None
) -> tuple[dict[str, Any], dict[str, int], list[str], dict[str, dict[str, int]]]:
    """Per deployment slug: utilisation over the trusted polls of [first, last_actual] (running
    sequences over the admitted capacity, ``planner.engine.utilisation_from_polls``) and the polls
    behind it; notes on the deployments whose capacity is unknown or whose polls were left out; and the
    untrusted polls left out per slug and reason (``fleet.models.polls.poll_distrust``)."""
    if last_actual is None or not deployments:
        return {}, {}, [], {}
    end = last_actual + timedelta(days=1)
    totals = running_totals(first, end)
    slugs = {d.pk: d.slug for d in deployments}
    left_out = {slugs[pk]: counts for pk, counts in left_out_totals(first, end, list(slugs)).items()}
    util: dict[str, Any] = {}
    polls: dict[str, int] = {}
    notes = [
        f"{slug}: {left_out_text(counts)}, so not in its utilisation or idle cost."
        for slug, counts in sorted(left_out.items())
    ]
    # The admitted capacity as the workers last computed it (the stored snapshots: no sizing per view).
    for h in stored_headroom(d for d in deployments if d.pk in totals):
        running, n = totals[h.deployment.pk]
        polls[h.deployment.slug] = n
        if not h.capacity:
            why = "its capacity is not computed yet" if h.state == "pending" else h.error or "it does not fit"
            notes.append(f"{h.deployment.slug}: no admitted capacity ({why}), so no utilisation.")
            continue
        util[h.deployment.slug] = utilisation_from_polls(running, n, h.capacity)
    return util, polls, notes, left_out


def _owned_draw(
    owned: dict[str, Any],
    segments: list[StateSegment],
    shares: list[DeploymentShare],
    utilisation: dict[str, Any],
    year: int,
    month: int,
) -> dict[tuple[str, int, int], Decimal]:
    """Per owned cluster of the month, the share of its GPUs' power range in use: the GPU-weighted mean of
    its deployments' polled utilisation, its unassigned GPUs counted idle; absent (full load) when a
    deployment on it has no utilisation."""
    if not owned:
        return {}
    gpus = {s.cluster: s.gpus for s in segments if s.cluster in owned}
    out: dict[tuple[str, int, int], Decimal] = {}
    for cluster, total in gpus.items():
        mine = [d for d in shares if d.cluster == cluster]
        if not mine or not total or any(utilisation.get(d.deployment) is None for d in mine):
            continue
        busy = sum((Decimal(d.gpus) * utilisation[d.deployment] for d in mine), Decimal(0))
        out[(cluster, year, month)] = min(Decimal(1), busy / total)
    return out


def spend_for_month(
    year: int, month: int, today: date, pricing_kind: str = "on-demand", trend: bool = True, detail: bool = True
) -> SpendReport:
    """Spend of every cluster in ``year``-``month``: actual through ``today`` (the hardware in force
    each day at the quote in force that day), projected after it (at today's quotes), per cluster,
    deployment (and each cluster's unassigned GPUs), team, provider and model; warnings where a
    quote is missing (``planner.engine.spend_month``). With ``trend``, the totals of the
    ``TREND_MONTHS`` months ending with it as well (from the first month a cluster's history reaches).
    Without ``detail``, clusters and totals only (no deployment lines, no utilisation: two queries
    fewer, for ``/metrics``).

    The rate each day is the cluster's price in force (``planner.engine.price_in_force``: its
    provider's own quote for its SKU, else that provider's public list price); without either the
    GPU-hours are unpriced (a ``missing`` warning). Utilisation (for idle cost) is the
    mean running sequences over the admitted capacity across the actual days' polls (the daily
    poll counters, ``fleet.poll_rollups.running_totals``).
    """
    first_month = month_after(year, month, -(TREND_MONTHS - 1)) if trend else (year, month)
    last = date(year, month, calendar_month_days(year, month))
    rows = ClusterState.objects.filter(effective_from__lte=last).select_related("cluster", "sku", "provider")
    segments = [
        StateSegment(
            cluster=s.cluster.slug,
            team=s.team,
            provider=s.provider.name,
            sku=s.sku.slug,
            effective_from=s.effective_from,
            gpus=s.gpus,
            hours_per_day=s.hours_per_day,
            status=s.status,
        )
        for s in rows
    ]
    quotes = PriceBook.load(until=max(last, today), kind=pricing_kind).quotes
    owned_slugs = {s.cluster.slug for s in rows if s.cluster.owned}
    owned = OwnedBook.load(owned_slugs) if owned_slugs else OwnedBook()
    first = date(year, month, 1)
    last_actual = min(today, last) if today >= first else None
    # The snapshot's capacity columns and the records' versions, nothing wide (no figures' JSON, no model
    # layer groups): what the lines and the utilisation read, in one narrow query.
    rows = stored_headroom_rows(
        Deployment.objects.all(), "replicas", "tp", "pp", "dp", "created", "cluster__slug", "model__slug"
    )
    deployments = list(rows) if detail else []
    utilisation, polls, notes, left_out = _utilisation(deployments, first, last_actual)
    shares = [DeploymentShare(d.slug, d.cluster.slug, d.model.slug, d.gpus, d.created.date()) for d in deployments]
    draw = _owned_draw(owned.clusters, segments, shares, utilisation, year, month)
    rate = rate_from_quotes(quotes, pricing_kind, owned=owned.clusters, utilisation=draw)
    result = spend_month(segments, year, month, today, rate, deployments=shares, utilisation=utilisation, polls=polls)
    result.assumptions.append(
        f"Rates: each day, the cluster's price in force: its provider's own {pricing_kind} quote for the SKU, "
        "else that provider's public list price; without either those GPU-hours are unpriced (a 'missing' "
        "warning), never priced at another provider's rate or an assumption."
    )
    if owned_slugs:
        result.assumptions.append(
            "Owned clusters are priced at their own cost (depreciation, energy, colocation, support, staff) over "
            "the GPU-hours switched on, not at a quote; energy at the polled utilisation where every deployment on "
            "the cluster has one (its unassigned GPUs idle), else at full load. Projected days use today's rate."
        )
        result.assumptions.extend(f"{slug}: unpriced, {why}." for slug, why in sorted(owned.unpriced.items()))
    result.assumptions.append(
        "Utilisation (for idle cost) = mean requests running over the admitted capacity (the sizing engine's "
        "concurrent sequences at the deployment's planning context), across the actual days' polls; a poll that "
        "found the endpoint down counts 0. Idle cost = actual cost x (1 - utilisation); without polls it is unknown. "
        "Untrusted polls (the endpoint serves another model, or rates averaged over a gap) are left out."
    )
    result.assumptions.extend(notes)
    months = []
    if trend:
        # A month that ended before today is the same until a cluster's history or a quote changes: its
        # key is both, whole (frozen records, hashed: a changed, added or deleted row is another key).
        inputs = (pricing_kind, frozenset(segments), frozenset(quotes), frozenset(owned.clusters.items()))
        # From the first month a cluster was registered in (its dated history): no empty months before.
        since = min((s.effective_from for s in segments), default=last)
        y, m = max(first_month, (since.year, since.month))
        while (y, m) < (year, month):
            if (y, m) >= FIRST_MONTH:
                months.append(_trend_month(inputs, segments, y, m, today, rate))
            y, m = month_after(y, m)
        months.append(result)
    billed = reconcile(result, billed_by_cluster(year, month), settings.BILL_VARIANCE_PCT) if detail else None
    return SpendReport(result, months, pricing_kind, left_out, billed)


#: The trend's closed months computed in this process, newest use last (``_trend_month``).
_CLOSED_MONTHS: OrderedDict[tuple, MonthSpend] = OrderedDict()
#: How many closed months a process keeps (a year of trend for ten pricing kinds or histories).
CLOSED_MONTHS_KEPT = 120


def _trend_month(
    inputs: tuple, segments: list[StateSegment], y: int, m: int, today: date, rate: Callable
) -> MonthSpend:
    """``spend_month`` of a trend month; a month that ended before ``today`` is computed once per process
    for the same ``inputs`` (pricing kind, the history segments and the quotes it was priced from), since
    nothing else moves it: the spend page's eleven past months were eleven ledger walks of every
    cluster on every view (docs/benchmarks.md, "Pages"). Results are shared: callers must not mutate."""
    if date(y, m, calendar_month_days(y, m)) >= today:
        return spend_month(segments, y, m, today, rate)
    key = (y, m, *inputs)
    hit = _CLOSED_MONTHS.get(key)
    if hit is None:
        hit = _CLOSED_MONTHS[key] = spend_month(segments, y, m, today, rate)
        if len(_CLOSED_MONTHS) > CLOSED_MONTHS_KEPT:
            _CLOSED_MONTHS.popitem(last=False)
    else:
        _CLOSED_MONTHS.move_to_end(key)
    return hit


#: Columns of the spend CSV (API ``?format=csv`` and ``manage.py spend --csv``). ``cost_usd`` is
#: actual + projected; only ``actual_cost_usd`` was spent. ``month_hours``: the calendar month's hours
#: (744 in December; ``calendar_month_hours``), not rent vs API's 30-day 720 h.
CSV_HEADER = (
    "month",
    "month_hours",
    "kind",
    "name",
    "team",
    "provider",
    "sku",
    "gpus",
    "active_days",
    "gpu_hours",
    "usd_per_gpu_hour",
    "cost_usd",
    "idle_cost_usd",
    "actual_cost_usd",
    "projected_cost_usd",
    "unpriced_gpu_hours",
    "cluster",
    "model",
    "utilisation",
)


def spend_csv(data: dict[str, Any]) -> str:
    """A spend report's ``to_dict()`` as CSV: one row per cluster, deployment (and unassigned GPUs),
    team, provider and model subtotal, the total, and one ``warning`` row per warning; plain
    numbers (no thousands separators) and a header row, so it opens in any spreadsheet. Anything
    else (an error body) becomes a one-column ``error`` table. Written by the product's one CSV writer
    (``fleet.tables.csv_text``: a cell a spreadsheet would run as a formula is neutralised)."""
    if not isinstance(data, dict) or "clusters" not in data:
        return csv_text(["error"], [[str(data)]])
    month = f"{data['year']:04d}-{data['month']:02d}"
    rows: list[list[Any]] = []

    def row(kind: str, name: str, line: dict[str, Any], **extra: Any) -> None:
        values = {
            "month": month,
            "kind": kind,
            "name": name,
            "month_hours": data.get("month_hours"),
            **{k: line.get(k) for k in CSV_HEADER[4:] if k in line},
            **extra,
        }
        rows.append([values.get(k) for k in CSV_HEADER])

    for c in data["clusters"]:
        row("cluster", c["cluster"], c)
    for d in data["deployments"]:
        row(d["kind"], d["name"], d)
    for kind, key in (("team", "by_team"), ("provider", "by_provider"), ("model", "by_model")):
        for name, sub in data[key].items():
            row(kind, name, sub, gpus=None, **{kind: name})
    for w in data["warnings"]:
        row(w["kind"] + " quote" if w["kind"] != "over_assigned" else "over-assigned", w["message"], w)
    row(
        "total",
        "all clusters",
        {
            "gpu_hours": data["total_gpu_hours"],
            "cost_usd": data["total_cost_usd"],
            "idle_cost_usd": data["total_idle_cost_usd"],
            "actual_cost_usd": data["actual_cost_usd"],
            "projected_cost_usd": data["projected_cost_usd"],
            "unpriced_gpu_hours": data["unpriced_gpu_hours"],
        },
    )
    return csv_text(CSV_HEADER, rows)
