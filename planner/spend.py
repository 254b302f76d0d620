"""Monthly GPU spend from the dated cluster history and the quotes in force each day."""

from __future__ import annotations

import calendar
import csv
import io
import re
from datetime import date
from typing import Any

from fleet.errors import InputError
from fleet.models import ClusterState, GpuQuote
from fleet.poll_rollups import cluster_utilisation
from planner.engine import ClusterState as StateSegment
from planner.engine import Quote, SpendResult, monthly_spend, rate_from_quotes

MONTH = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")


def parse_month(raw: str) -> tuple[int, int] | None:
    """``"2026-07"`` -> ``(2026, 7)``; None when it is not a month written as YYYY-MM."""
    match = MONTH.fullmatch(raw.strip())
    return (int(match[1]), int(match[2])) if match else None


def month_or_error(raw: str | None, today: date) -> tuple[int, int]:
    """``raw`` (``YYYY-MM``; empty means ``today``'s month) as ``(year, month)``, else InputError."""
    if not raw:
        return today.year, today.month
    parsed = parse_month(raw)
    if parsed is None:
        raise InputError.single("month", "Give a month as YYYY-MM, e.g. 2026-07.")
    return parsed


def spend_for(raw_month: str | None, today: date, pricing_kind: str = "on-demand") -> SpendResult:
    """Spend of every cluster in a month given as ``YYYY-MM`` (InputError / EngineInputError with
    field names: a bad month, a day without any quote)."""
    return spend_for_month(*month_or_error(raw_month, today), pricing_kind=pricing_kind)


def spend_for_month(year: int, month: int, pricing_kind: str = "on-demand", through: date | None = None) -> SpendResult:
    """Spend of every cluster in ``year``-``month`` (``through``: only its days up to that one, month to date).

    The rate each day is the cluster's own provider's quote in force for its SKU; when that
    provider has none, the cheapest quote in force for the SKU from any provider (said in the
    assumptions). A day with no quote at all is an error naming the SKU and the day. Idle cost uses
    the busy share of the month's endpoint polls (``fleet.poller.cluster_utilisation``).
    """
    last = date(year, month, calendar.monthrange(year, month)[1])
    rows = ClusterState.objects.filter(effective_from__lte=last).select_related("cluster", "sku")
    segments = [
        StateSegment(
            cluster=s.cluster.slug,
            team=s.team,
            provider=s.provider,
            sku=s.sku.slug,
            effective_from=s.effective_from,
            gpus=s.gpus,
            hours_per_day=s.hours_per_day,
            status=s.status,
        )
        for s in rows
    ]
    quotes = [
        Quote.from_record(q, sku=q.sku.slug) for q in GpuQuote.objects.filter(quoted_on__lte=last).select_related("sku")
    ]
    own = rate_from_quotes(quotes, pricing_kind, match_provider=True)
    market = rate_from_quotes(quotes, pricing_kind, match_provider=False)
    fell_back: set[str] = set()

    def rate(state: StateSegment, day: date):
        found = own(state, day)
        if found is None:
            found = market(state, day)
            if found is not None:
                fell_back.add(f"{state.cluster} ({state.provider}, {state.sku})")
        return found

    utilisation = cluster_utilisation(date(year, month, 1), date(year + month // 12, month % 12 + 1, 1))
    result = monthly_spend(segments, year, month, rate, utilisation=utilisation, through=through)
    if utilisation:
        result.assumptions.append(
            "Utilisation (for idle cost) = share of the month's endpoint polls that saw at least one running "
            f"request, for {len(utilisation)} cluster(s) with polls; other clusters have no idle figure."
        )
    if fell_back:
        result.assumptions.append(
            f"No {pricing_kind} quote from the cluster's own provider for: {', '.join(sorted(fell_back))}; "
            "the cheapest quote in force for the SKU from any provider was used."
        )
    return result


#: Columns of the spend CSV (API ``?format=csv`` and ``manage.py spend --csv``).
CSV_HEADER = (
    "month",
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
)


def spend_csv(data: dict[str, Any]) -> str:
    """A spend result's ``to_dict()`` as CSV: one row per cluster, team subtotal, provider subtotal
    and the total; plain numbers (no thousands separators) and a header row, so it opens in any
    spreadsheet. Anything else (an error body) becomes a one-column ``error`` table."""
    out = io.StringIO()
    writer = csv.writer(out)
    if not isinstance(data, dict) or "clusters" not in data:
        writer.writerow(["error"])
        writer.writerow([str(data)])
        return out.getvalue()
    month = f"{data['year']:04d}-{data['month']:02d}"
    writer.writerow(CSV_HEADER)
    for c in data["clusters"]:
        writer.writerow(
            [
                month,
                "cluster",
                c["cluster"],
                c["team"],
                c["provider"],
                c["sku"],
                c["gpus"],
                c["active_days"],
                c["gpu_hours"],
                c["usd_per_gpu_hour"] or "",
                c["cost_usd"],
                c["idle_cost_usd"] or "",
            ]
        )
    for kind, key in (("team", "by_team"), ("provider", "by_provider")):
        for name, s in data[key].items():
            writer.writerow(
                [
                    month,
                    kind,
                    name,
                    name if kind == "team" else "",
                    name if kind == "provider" else "",
                    "",
                    "",
                    "",
                    s["gpu_hours"],
                    "",
                    s["cost_usd"],
                    s["idle_cost_usd"] or "",
                ]
            )
    writer.writerow(
        [
            month,
            "total",
            "all clusters",
            "",
            "",
            "",
            "",
            "",
            data["total_gpu_hours"],
            "",
            data["total_cost_usd"],
            data["total_idle_cost_usd"] or "",
        ]
    )
    return out.getvalue()
