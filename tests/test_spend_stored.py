"""The stored spend report (issue 30, ``planner.spend.stored_spend``): computed once for the records' version
and the day, read by the page (its costliest clusters and lines, limited queries down an index), the API, the CSV and
the budgets; computed again when a record changes, when it is older than ``SPEND_STORED_S``, or by beat."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet.models import Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider
from planner import spend as spend_service
from planner.models import Budget, SpendSnapshot, SpendSnapshotLine

TODAY = timezone.now().date()
MONTH = TODAY.strftime("%Y-%m")


def _clusters(n: int, start: int = 0) -> None:
    """``n`` one-node H100 clusters ``c-<i>`` at acme, each with one Llama deployment; cluster ``i`` has ``i + 1``
    nodes' worth of hours so their costs differ (more nodes: costlier)."""
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    acme = Provider.objects.ensure("acme")
    for i in range(start, start + n):
        c = Cluster(slug=f"c-{i:02d}", name=f"C {i}", sku=sku, nodes=1 + i % 4, provider=acme, team=f"t{i % 3}")
        c.save(effective_from=TODAY.replace(day=1))
        Deployment.objects.create(slug=f"d-{i:02d}", cluster=c, model=llama, tp=8)


@pytest.fixture
def fleet(db):
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.create(
        sku=HardwareSku.objects.get(slug="h100-sxm-80gb"), provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("2.50"), quoted_on=TODAY - timedelta(days=40),
    )  # fmt: skip
    _clusters(6)


@pytest.fixture
def counted(monkeypatch):
    """How many times the month was computed (``spend_for_month`` called by the stored report)."""
    calls = []
    compute = spend_service.spend_for_month

    def counting(*args, **kwargs):
        calls.append(args)
        return compute(*args, **kwargs)

    monkeypatch.setattr(spend_service, "spend_for_month", counting)
    return calls


def test_the_stored_report_is_the_computed_one_line_for_line(fleet):
    stored = spend_service.spend_report(MONTH, TODAY)
    computed = spend_service.spend_for_month(TODAY.year, TODAY.month, today=TODAY).to_dict()
    assert stored == computed
    snapshot = SpendSnapshot.objects.get()
    assert (snapshot.month, snapshot.clusters, snapshot.lines) == (MONTH, 6, 12)  # 6 deployments, 6 unassigned
    assert SpendSnapshotLine.objects.filter(snapshot=snapshot, kind="cluster").count() == 6


def test_it_is_computed_once_then_again_after_a_change_or_when_old(fleet, counted, settings):
    spend_service.spend_report(MONTH, TODAY)
    spend_service.spend_page(MONTH, TODAY)
    spend_service.spend_report(MONTH, TODAY)
    assert len(counted) == 1
    _clusters(1, start=6)  # a record changed: the next read computes the month again
    assert len(spend_service.spend_report(MONTH, TODAY)["clusters"]) == 7
    assert len(counted) == 2
    SpendSnapshot.objects.update(computed_at=timezone.now() - timedelta(seconds=settings.SPEND_STORED_S + 1))
    spend_service.spend_report(MONTH, TODAY)  # older than SPEND_STORED_S: polls may have moved utilisation
    assert len(counted) == 3
    spend_service.spend_report(MONTH, TODAY + timedelta(days=1))  # another day: other actual days
    assert len(counted) == 4
    assert SpendSnapshot.objects.count() == 1  # one stored report per month and pricing kind


def test_beat_stores_this_months_report(fleet, counted, settings):
    from planner.tasks import refresh_spend

    assert settings.CELERY_BEAT_SCHEDULE["refresh-spend"]["task"] == refresh_spend.name
    assert settings.CELERY_BEAT_SCHEDULE["refresh-spend"]["schedule"] == settings.SPEND_STORED_S
    assert refresh_spend.run() == {"month": MONTH, "clusters": 6, "lines": 12}
    spend_service.spend_page(MONTH, TODAY)
    assert len(counted) == 1  # the page read what beat stored


def test_the_page_shows_the_costliest_with_the_rest_in_the_csv(fleet, client, make_user, monkeypatch):
    monkeypatch.setattr(spend_service, "PAGE_CLUSTERS", 2)
    monkeypatch.setattr(spend_service, "PAGE_LINES", 3)
    client.force_login(make_user("v", "viewer"))
    page = client.get(f"/spend/?month={MONTH}").content.decode()
    report = spend_service.spend_report(MONTH, TODAY)
    by_cost = sorted(report["clusters"], key=lambda c: Decimal(c["cost_usd"]), reverse=True)
    shown = [c["cluster"] for c in by_cost[:2]]
    assert all(f'data-cluster="{name}"' in page for name in shown)
    assert page.count("<tr data-cluster=") == 2
    assert "The 2 costliest of 6 clusters; the other 4 are in the" in page
    assert "The 3 costliest of 12 lines; the other 9 are in the" in page
    # The lines shown: the costliest three (spent + projected), ties in the report's order.
    costliest = sorted(report["deployments"], key=lambda d: Decimal(d["cost_usd"]), reverse=True)[:3]
    shown_lines = spend_service.spend_page(MONTH, TODAY)["lines"]
    assert [d["name"] for d in shown_lines] == [d["name"] for d in costliest]
    # Every line is in the CSV the note links to.
    csv = client.get(f"/api/v1/spend/?month={MONTH}&format=csv").content.decode()
    assert all(f",{c['cluster']}," in csv for c in report["clusters"])


def test_the_page_reads_a_bounded_number_of_rows_whatever_the_fleet(fleet, client, make_user):
    client.force_login(make_user("v", "viewer"))
    client.get(f"/spend/?month={MONTH}")  # stores the report
    with CaptureQueriesContext(connection) as small:
        client.get(f"/spend/?month={MONTH}")
    _clusters(40, start=6)
    client.get(f"/spend/?month={MONTH}")
    with CaptureQueriesContext(connection) as large:
        page = client.get(f"/spend/?month={MONTH}").content.decode()
    # a larger fleet never costs more queries (a small one may read its few unpriced lines with a second one)
    assert len(large.captured_queries) <= len(small.captured_queries)
    assert page.count("<tr data-cluster=") == spend_service.PAGE_CLUSTERS
    lines = [q["sql"] for q in large.captured_queries if "spendsnapshotline" in q["sql"]]
    assert lines and all("LIMIT" in sql or "IN (" in sql for sql in lines)


def test_a_cluster_budget_has_its_figures_though_its_cluster_is_not_shown(fleet, client, make_user, monkeypatch):
    monkeypatch.setattr(spend_service, "PAGE_CLUSTERS", 1)
    cheapest = Cluster.objects.get(slug="c-00")  # one node: among the cheapest
    Budget.objects.create(cluster=cheapest, amount_usd=Decimal("1"))
    report = spend_service.spend_report(MONTH, TODAY)
    line = next(c for c in report["clusters"] if c["cluster"] == "c-00")
    page = spend_service.spend_page(MONTH, TODAY)
    assert "c-00" not in [c["cluster"] for c in page["clusters"]]
    from planner.budgets import figures_for

    figures = figures_for(Budget.objects.get(), page)
    assert figures.projected_usd == Decimal(line["cost_usd"]) > 0
    assert figures_for(Budget.objects.get(), report).projected_usd == figures.projected_usd


def test_a_past_month_is_stored_apart(fleet):
    last = (TODAY.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    spend_service.spend_report(last, TODAY)
    spend_service.spend_report(MONTH, TODAY)
    assert sorted(SpendSnapshot.objects.values_list("month", flat=True)) == sorted([last, MONTH])
    assert date.fromisoformat(spend_service.spend_report(last, TODAY)["today"]) == TODAY


def test_reports_no_read_will_use_are_dropped_when_another_is_stored(fleet, settings):
    last = (TODAY.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    spend_service.spend_report(last, TODAY)
    SpendSnapshot.objects.update(computed_at=timezone.now() - timedelta(seconds=settings.SPEND_STORED_S + 1))
    spend_service.spend_report(MONTH, TODAY)  # stores this month's: last month's old report is never read again
    assert list(SpendSnapshot.objects.values_list("month", flat=True)) == [MONTH]
    assert not SpendSnapshotLine.objects.exclude(snapshot__month=MONTH).exists()


def test_the_costliest_are_priced_by_cost_then_the_unpriced_in_the_reports_order(db):
    """``planner.spend._costliest``: priced lines by cost (spent + projected, ties in the report's order) read
    down the ``spend_line_cost`` index, then unpriced ones in the report's order, to the limit."""
    snapshot = SpendSnapshot.objects.create(
        month=MONTH, pricing_kind="on-demand", key="k", computed_at=timezone.now(), summary={}
    )
    costs = [None, "5.00", "9.00", None, "5.00", "1.00", None]
    SpendSnapshotLine.objects.bulk_create(
        SpendSnapshotLine(
            snapshot=snapshot, position=n, kind="deployment", name=f"d{n}", cost_usd=cost, line={"name": f"d{n}"}
        )
        for n, cost in enumerate(costs)
    )
    kinds = [SpendSnapshotLine.Kind.DEPLOYMENT]
    names = [[line["name"] for line in spend_service._costliest(snapshot, kinds, limit)] for limit in (3, 6, 10)]
    assert names == [
        ["d2", "d1", "d4"],
        ["d2", "d1", "d4", "d5", "d0", "d3"],
        ["d2", "d1", "d4", "d5", "d0", "d3", "d6"],
    ]
    assert spend_service._costliest(snapshot, [SpendSnapshotLine.Kind.CLUSTER], 5) == []
