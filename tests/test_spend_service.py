"""planner.spend.spend_for_month with a fixed ``today``: what was spent and what is projected, from
the records (cluster history, quotes, deployments, polls). Figures worked out by hand beside each."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.errors import InputError
from fleet.models import Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider
from fleet.poll_store import count_poll
from planner import headroom as headroom_module
from planner import spend as spend_module
from planner.spend import spend_for, spend_for_month


@pytest.fixture
def june(db):
    """8 H100s from 1 June 2026 at their provider's own 2.50 USD/GPU-hour (June: 30 days)."""
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()  # only the quotes below: independent of the catalogue's price lists
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    GpuQuote.objects.create(
        sku=h100, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 5, 1)
    )
    c = Cluster(slug="c8", name="C8", sku=h100, nodes=1, provider=Provider.objects.ensure("acme"), team="ml")
    c.save(effective_from=date(2026, 6, 1))
    return c


def line(lines, name):
    return next(x for x in lines if x.name == name)


def test_ten_days_of_a_thirty_day_month_spent_the_rest_projected(june):
    r = spend_for_month(2026, 6, today=date(2026, 6, 10)).spend
    c = line(r.clusters, "c8")
    assert c.actual.cost_usd == Decimal("4800.00")  # 8 GPUs x 24 h x 10 days x 2.50
    assert c.projected.cost_usd == Decimal("9600.00")  # 8 x 24 x 20 x 2.50
    assert (r.actual_days, r.projected_days, r.status) == (10, 20, "partial")
    data = spend_for("2026-06", date(2026, 6, 10)).to_dict()
    assert (data["actual_cost_usd"], data["projected_cost_usd"], data["total_cost_usd"]) == (
        "4800.00",
        "9600.00",
        "14400.00",
    )


def test_past_month_actual_future_month_projected(june):
    past = spend_for("2026-06", date(2026, 8, 2)).to_dict()
    assert past["status"] == "actual" and past["actual_cost_usd"] == "14400.00" and past["projected_cost_usd"] == "0.00"
    ahead = spend_for("2026-09", date(2026, 6, 10)).to_dict()  # September: 30 days, nothing spent yet
    assert ahead["status"] == "projected" and ahead["actual_cost_usd"] == "0.00"
    assert ahead["projected_cost_usd"] == "14400.00"


def test_projection_uses_todays_quote_not_a_later_one(june):
    # A new quote from 20 June: actual days before it are at 2.50; projected days (after 10 June) stay at
    # today's 2.50 even though a 3.00 quote is recorded for later (a price is not foreseen).
    GpuQuote.objects.create(
        sku=june.sku,
        provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("3.00"),
        quoted_on=date(2026, 6, 20),
    )
    r = spend_for_month(2026, 6, today=date(2026, 6, 10)).spend
    assert r.total.projected.cost_usd == Decimal("9600.00")  # 8 x 24 x 20 x 2.50
    after = spend_for_month(2026, 6, today=date(2026, 6, 30)).spend
    # 8 x 24 x (19 x 2.50 + 11 x 3.00) = 192 x 80.5 = 15,456
    assert after.total.actual.cost_usd == Decimal("15456.00")


def test_a_deployment_line_idle_cost_and_the_unassigned_rest(june, monkeypatch):
    d = Deployment.objects.create(slug="llama", cluster=june, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4)
    Deployment.objects.filter(pk=d.pk).update(created=datetime(2026, 6, 1, tzinfo=UTC))
    monkeypatch.setattr(
        spend_module, "stored_headroom", lambda ds: [headroom_module.Headroom(x, 64, True, None) for x in ds]
    )
    # Two polls: 16 and 48 running of 64 admitted: (16 + 48) / (2 x 64) = 0.5. A poll after today does not count.
    for day, running in ((3, 16), (4, 48), (12, 64)):
        count_poll(d.pk, date(2026, 6, day), running)
    r = spend_for_month(2026, 6, today=date(2026, 6, 10)).spend
    llama = line(r.deployments, "llama")
    assert llama.actual.cost_usd == Decimal("2400.00")  # 4 GPUs x 24 h x 10 days x 2.50
    assert llama.projected.cost_usd == Decimal("4800.00")  # 4 x 24 x 20 x 2.50
    assert llama.utilisation == Decimal("0.5000") and llama.idle_cost_usd == Decimal("1200.00")
    rest = line(r.deployments, "c8 (unassigned)")
    assert rest.actual.cost_usd == Decimal("2400.00") and rest.idle_cost_usd is None
    assert {m.name: m.actual.cost_usd for m in r.by_model} == {
        "llama-3.1-70b": Decimal("2400.00"),
        "(unassigned)": Decimal("2400.00"),
    }


def test_polls_without_a_running_figure_leave_utilisation_unknown(june, monkeypatch):
    d = Deployment.objects.create(slug="llama", cluster=june, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4)
    Deployment.objects.filter(pk=d.pk).update(created=datetime(2026, 6, 1, tzinfo=UTC))
    monkeypatch.setattr(
        spend_module, "stored_headroom", lambda ds: [headroom_module.Headroom(x, 64, True, None) for x in ds]
    )
    count_poll(d.pk, date(2026, 6, 3), None)  # up, but no running-requests figure (llama.cpp without metrics)
    llama = line(spend_for_month(2026, 6, today=date(2026, 6, 10)).spend.deployments, "llama")
    assert llama.utilisation is None and llama.idle_cost_usd is None and llama.idle_unknown_usd == Decimal("2400.00")


def test_a_layout_without_capacity_has_no_utilisation_and_says_why(june, monkeypatch):
    d = Deployment.objects.create(slug="llama", cluster=june, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4)
    Deployment.objects.filter(pk=d.pk).update(created=datetime(2026, 6, 1, tzinfo=UTC))
    monkeypatch.setattr(
        spend_module,
        "stored_headroom",
        lambda ds: [headroom_module.Headroom(x, None, False, None, error="too big") for x in ds],
    )
    count_poll(d.pk, date(2026, 6, 3), 3)
    r = spend_for_month(2026, 6, today=date(2026, 6, 10)).spend
    assert line(r.deployments, "llama").utilisation is None
    assert any("llama: no admitted capacity (too big)" in a for a in r.assumptions)


def test_unpriced_days_are_warnings_per_cluster_and_day_range_never_another_providers_price(june):
    h200 = HardwareSku.objects.get(slug="h200-141gb")
    # Another provider's cheaper H200 quote starts 1 June; the cluster's own provider's starts 10 June.
    GpuQuote.objects.create(
        sku=h200,
        provider=Provider.objects.ensure("other"),
        usd_per_gpu_hour=Decimal("4.00"),
        quoted_on=date(2026, 6, 1),
    )
    GpuQuote.objects.create(
        sku=h200,
        provider=Provider.objects.ensure("ACME"),  # the same provider, whatever the case
        usd_per_gpu_hour=Decimal("5.00"),
        quoted_on=date(2026, 6, 10),
    )
    Cluster(slug="h", name="H", sku=h200, nodes=1, provider=Provider.objects.ensure("acme"), team="ml").save(
        effective_from=date(2026, 6, 1)
    )
    data = spend_for("2026-06", date(2026, 6, 20)).to_dict()
    warnings = [(w["kind"], w["part"], w["cluster"], w["first_day"], w["last_day"]) for w in data["warnings"]]
    assert warnings == [("missing", "actual", "h", "2026-06-01", "2026-06-09")]
    h = next(c for c in data["clusters"] if c["cluster"] == "h")
    # 1-9 June unpriced (never other's 4.00): 8 x 24 x 9 = 1,728 GPU-hours; 10-20 June at acme's 5.00:
    # 8 x 24 x 11 x 5 = 10,560; projected 21-30 June at today's 5.00: 8 x 24 x 10 x 5 = 9,600
    assert h["unpriced_gpu_hours"] == "1728.00" and h["actual_cost_usd"] == "10560.00"
    assert h["projected_cost_usd"] == "9600.00"


def test_the_trend_covers_twelve_months_ending_with_the_one_asked_from_the_first_with_a_cluster(june):
    trend = spend_for("2026-07", date(2026, 7, 10)).to_dict()["trend"]
    # c8 came into service on 1 June 2026: no empty months before it (issue 28).
    assert [t["month"] for t in trend] == ["2026-06", "2026-07"]
    assert trend[-2] == {
        "month": "2026-06",
        "status": "actual",
        "actual_cost_usd": "14400.00",
        "projected_cost_usd": "0.00",
        "unpriced_gpu_hours": "0.00",
        "warnings": 0,
    }
    # July: 10 days spent (8 x 24 x 10 x 2.50 = 4,800), 21 projected (8 x 24 x 21 x 2.50 = 10,080)
    assert (trend[-1]["actual_cost_usd"], trend[-1]["projected_cost_usd"]) == ("4800.00", "10080.00")
    # A year and more after: the twelve months ending with the one asked.
    later = spend_for("2027-09", date(2026, 7, 10)).to_dict()["trend"]
    assert [t["month"] for t in later] == [f"2026-{m:02d}" for m in range(10, 13)] + [
        f"2027-{m:02d}" for m in range(1, 10)
    ]


def test_months_outside_the_range_are_refused(june):
    for month in ("1969-12", "3000-01", "2026-13"):
        with pytest.raises(InputError) as exc:
            spend_for(month, date(2026, 6, 10))
        assert "month" in exc.value.errors
    first = spend_for("1970-01", date(2026, 6, 10)).to_dict()
    assert first["previous_month"] is None and len(first["trend"]) == 1


def test_a_providers_public_list_price_prices_its_own_cluster_but_is_never_borrowed(june):
    h200 = HardwareSku.objects.get(slug="h200-141gb")
    GpuQuote.objects.create(
        sku=h200,
        provider=Provider.objects.ensure("listed"),
        usd_per_gpu_hour=Decimal("3.00"),
        quoted_on=date(2026, 5, 1),
        list_price=True,
    )
    Cluster(slug="at-listed", name="L", sku=h200, nodes=1, provider=Provider.objects.ensure("listed"), team="ml").save(
        effective_from=date(2026, 6, 1)
    )
    Cluster(slug="elsewhere", name="E", sku=h200, nodes=1, provider=Provider.objects.ensure("acme"), team="ml").save(
        effective_from=date(2026, 6, 1)
    )
    data = spend_for("2026-06", date(2026, 7, 1)).to_dict()
    clusters = {c["cluster"]: c for c in data["clusters"]}
    assert clusters["at-listed"]["actual_cost_usd"] == "17280.00"  # 8 x 720 h x 3.00, its provider's own price
    # acme holds no H200 quote and a list price of another provider is no quote of the fleet's: unpriced.
    assert clusters["elsewhere"]["unpriced_gpu_hours"] == "5760.00" and clusters["elsewhere"]["actual_cost_usd"] is None
    assert [(w["kind"], w["cluster"]) for w in data["warnings"]] == [("missing", "elsewhere")]


def test_the_trends_closed_months_are_computed_once_until_a_history_or_a_quote_changes(june, monkeypatch):
    """planner.spend._trend_month: a month before today is priced from the clusters' history and the
    quotes alone, so the page walks it once per process; a change to either is a new key."""
    spend_module._CLOSED_MONTHS.clear()
    calls = []
    real = spend_module.spend_month

    def counting(segments, y, m, *args, **kwargs):
        calls.append((y, m))
        return real(segments, y, m, *args, **kwargs)

    monkeypatch.setattr(spend_module, "spend_month", counting)
    first = spend_for_month(2026, 9, today=date(2026, 9, 10))
    assert len(calls) == 4  # September and the months before it from June, when c8 came into service
    trend = [(t.year, t.month, t.total.cost_usd) for t in first.trend]
    calls.clear()
    again = spend_for_month(2026, 9, today=date(2026, 9, 12))  # another day: the closed months stand
    assert calls == [(2026, 9)]  # only the month in progress
    assert [(t.year, t.month, t.total.cost_usd) for t in again.trend] == trend
    assert trend[-2] == (2026, 8, Decimal("14880.00"))  # 8 GPUs x 24 h x 31 days x 2.50
    # A new quote from 1 August: August is priced again, at 3.00.
    GpuQuote.objects.create(
        sku=june.sku,
        provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("3.00"),
        quoted_on=date(2026, 8, 1),
    )
    calls.clear()
    changed = spend_for_month(2026, 9, today=date(2026, 9, 12))
    assert len(calls) == 4
    assert (changed.trend[-2].year, changed.trend[-2].month, changed.trend[-2].total.cost_usd) == (
        2026, 8, Decimal("17856.00"),  # 8 x 24 x 31 x 3.00
    )  # fmt: skip
    # The cluster's history changes (a second node, 8 GPUs more, from 1 July): July and August priced again.
    june.nodes = 2
    june.save(effective_from=date(2026, 7, 1))
    calls.clear()
    spend_for_month(2026, 9, today=date(2026, 9, 12))
    assert len(calls) == 4


def test_utilisation_reads_the_stored_capacity_and_says_when_it_is_not_computed(june):
    from planner.snapshots import refresh_snapshots

    d = Deployment.objects.create(slug="llama", cluster=june, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4)
    Deployment.objects.filter(pk=d.pk).update(created=datetime(2026, 6, 1, tzinfo=UTC))
    count_poll(d.pk, date(2026, 6, 3), 2)
    r = spend_for_month(2026, 6, today=date(2026, 6, 10)).spend
    assert any("llama: no admitted capacity (its capacity is not computed yet)" in a for a in r.assumptions)
    refresh_snapshots()  # the worker's part
    capacity = Deployment.objects.get(pk=d.pk).sizing().max_concurrent_sequences
    assert capacity >= 2
    llama = line(spend_for_month(2026, 6, today=date(2026, 6, 10)).spend.deployments, "llama")
    assert llama.utilisation == (Decimal(2) / Decimal(capacity)).quantize(Decimal("0.0001"))  # 2 running
