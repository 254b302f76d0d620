"""GET /api/v1/spend/: pro-rated from the dated history, with subtotals and a spreadsheet-ready CSV."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, GpuQuote, HardwareSku, Provider


@pytest.fixture
def fleet(db):
    call_command("load_catalog", stdout=StringIO())
    # The quotes these tests price with, independent of the catalogue's price lists.
    GpuQuote.objects.all().delete()
    GpuQuote.objects.create(
        sku=HardwareSku.objects.get(slug="mi300x-192gb"),
        provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("2.50"),
        quoted_on=date(2026, 7, 17),
    )
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    # Registered 1 July with one node (8 GPUs), resized to two nodes from 16 July.
    c = Cluster(
        slug="k3-h100",
        name="K3 H100",
        sku=h100,
        nodes=1,
        provider=Provider.objects.ensure("acme"),
        team="platform",
    )
    c.save(effective_from=date(2026, 7, 1))
    c.nodes = 2
    c.save(effective_from=date(2026, 7, 16))
    # A research cluster at another provider: 8 GPUs, 4 hours a day, from 10 July, its own quote.
    r = Cluster(
        slug="lab",
        name="Lab",
        sku=h100,
        nodes=1,
        provider=Provider.objects.ensure("labcloud"),
        team="research",
        hours_per_day=4,
    )
    r.save(effective_from=date(2026, 7, 10))
    GpuQuote.objects.create(
        sku=h100,
        provider=Provider.objects.ensure("labcloud"),
        usd_per_gpu_hour=Decimal("2.00"),
        quoted_on=date(2026, 7, 1),
    )
    GpuQuote.objects.create(
        sku=h100, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 6, 1)
    )
    return c


@pytest.mark.django_db
def test_resized_mid_month_is_pro_rated(viewer_api, fleet):
    r = viewer_api.get("/api/v1/spend/?month=2026-07")
    assert r.status_code == 200, r.content
    data = r.json()
    rows = {c["cluster"]: c for c in data["clusters"]}
    # 8 GPUs x 24 h x 15 days + 16 x 24 x 16 days = 2,880 + 6,144 = 9,024 GPU-hours at 2.50.
    assert rows["k3-h100"]["gpu_hours"] == "9024.00" and rows["k3-h100"]["cost_usd"] == "22560.00"
    # 8 GPUs x 4 h x 22 days (10..31 July) = 704 GPU-hours at labcloud's own 2.00.
    assert rows["lab"]["gpu_hours"] == "704.00" and rows["lab"]["cost_usd"] == "1408.00"
    assert data["by_team"]["platform"]["cost_usd"] == "22560.00"
    assert data["by_provider"]["labcloud"]["cost_usd"] == "1408.00"
    assert data["total_cost_usd"] == "23968.00" and data["days_in_month"] == 31


@pytest.mark.django_db
def test_a_provider_without_its_own_quote_is_unpriced_never_priced_at_another(viewer_api, fleet):
    """Issue 24: a cluster pays its provider's price (own quote, else its list price) or is unpriced,
    said as a warning; never another provider's quote (acme's MI300X 2.50 here)."""
    mi = HardwareSku.objects.get(slug="mi300x-192gb")
    other = Cluster(
        slug="amd", name="AMD", sku=mi, nodes=1, provider=Provider.objects.ensure("nocloud"), team="research"
    )
    other.save(effective_from=date(2026, 7, 17))
    data = viewer_api.get("/api/v1/spend/?month=2026-07").json()
    amd = next(c for c in data["clusters"] if c["cluster"] == "amd")
    # Unpriced all month: no USD figure at all (null, never a 0.00 said as a cost), its GPU-hours said unpriced.
    assert amd["usd_per_gpu_hour"] is None and amd["cost_usd"] is None and amd["actual_cost_usd"] is None
    assert amd["unpriced_gpu_hours"] == str(8 * 24 * 15) + ".00"
    (w,) = [w for w in data["warnings"] if w["cluster"] == "amd"]
    assert (w["kind"], w["first_day"], w["last_day"], w["days"]) == (
        "missing",
        "2026-07-17",
        "2026-07-31",
        15,
    )
    assert {w["kind"] for w in data["warnings"]} <= {"missing", "over_assigned"}


@pytest.mark.django_db
def test_days_without_any_quote_are_a_named_warning_not_a_zero(viewer_api, fleet):
    mi = HardwareSku.objects.get(slug="mi300x-192gb")
    Cluster(slug="amd", name="AMD", sku=mi, nodes=1, provider=Provider.objects.ensure("acme"), team="research").save(
        effective_from=date(2026, 7, 1)
    )
    r = viewer_api.get("/api/v1/spend/?month=2026-07")
    assert r.status_code == 200, r.content
    data = r.json()
    amd = next(c for c in data["clusters"] if c["cluster"] == "amd")
    # 1-16 July: no MI300X quote from acme yet: 8 x 24 x 16 = 3,072 GPU-hours unpriced; 17-31 July at 2.50.
    assert amd["unpriced_gpu_hours"] == "3072.00" and amd["cost_usd"] == str(8 * 24 * 15 * 2.5) + "0"
    missing = [w for w in data["warnings"] if w["kind"] == "missing"]
    assert [(w["cluster"], w["sku"], w["first_day"], w["last_day"]) for w in missing] == [
        ("amd", "mi300x-192gb", "2026-07-01", "2026-07-16")
    ]
    assert data["unpriced_gpu_hours"] == "3072.00"


@pytest.mark.django_db
def test_editing_a_cluster_today_does_not_change_a_past_month(viewer_api, fleet):
    before = viewer_api.get("/api/v1/spend/?month=2026-07").json()
    fleet.nodes = 10
    fleet.hours_per_day = 1
    fleet.save()
    assert viewer_api.get("/api/v1/spend/?month=2026-07").json() == before


@pytest.mark.django_db
def test_csv_has_a_header_and_plain_numbers(viewer_api, fleet):
    r = viewer_api.get("/api/v1/spend/?month=2026-07&format=csv")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    assert 'filename="gpu-spend-2026-07.csv"' in r["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert list(rows[0]) == [
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
    ]
    cluster = next(row for row in rows if row["name"] == "k3-h100")
    assert cluster["cost_usd"] == "22560.00" and float(cluster["gpu_hours"]) == 9024
    total = rows[-1]
    assert total["kind"] == "total" and total["cost_usd"] == "23968.00"
    assert {row["month"] for row in rows} == {"2026-07"} and {row["month_hours"] for row in rows} == {"744"}
    assert all("," not in value for row in rows for value in row.values() if value and value[0].isdigit())


@pytest.mark.django_db
def test_bad_month_is_a_400(viewer_api, fleet):
    r = viewer_api.get("/api/v1/spend/?month=July")
    assert r.status_code == 400 and "month" in r.json()


@pytest.mark.django_db
def test_command_mirrors_the_api(viewer_api, fleet):
    out = StringIO()
    call_command("spend", "--month", "2026-07", "--csv", stdout=out)
    assert out.getvalue() == viewer_api.get("/api/v1/spend/?month=2026-07&format=csv").content.decode()
    text = StringIO()
    call_command("spend", "--month", "2026-07", stdout=text)
    assert "23968.00" in text.getvalue() and "k3-h100" in text.getvalue()


@pytest.mark.django_db
def test_idle_cost_comes_from_running_sequences_over_admitted_capacity(viewer_api, fleet, monkeypatch):
    from datetime import UTC, datetime

    from fleet.models import Deployment, ModelSpec
    from fleet.poll_store import count_poll
    from planner import headroom as headroom_module
    from planner import spend as spend_module

    d = Deployment.objects.create(slug="k3d", cluster=fleet, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4)
    Deployment.objects.filter(pk=d.pk).update(created=datetime(2026, 7, 1, tzinfo=UTC))

    # The admitted capacity is the stored snapshot's; fixed here at 32 sequences to check the arithmetic.
    def fixed(deployments):
        return [headroom_module.Headroom(x, 32, True, None) for x in deployments]

    monkeypatch.setattr(spend_module, "stored_headroom", fixed)
    # Polls as the poller counts them: 8, 16 and 0 running, one that found the endpoint down (0 running),
    # ten up polls with 4 running each, and one up poll without a running figure (not counted):
    # (8 + 16 + 0 + 0 + 10 x 4) = 64 running over 14 polls.
    for day, running, up in ((5, 8, True), (6, 16, True), (7, 0, True), (8, None, False), (9, None, True)):
        count_poll(d.pk, date(2026, 7, day), running, up=up)
    for _ in range(10):
        count_poll(d.pk, date(2026, 7, 2), 4)
    count_poll(d.pk, date(2026, 8, 1), 32)  # another month: not counted
    data = viewer_api.get("/api/v1/spend/?month=2026-07").json()
    line = next(x for x in data["deployments"] if x["name"] == "k3d")
    # utilisation = (24 + 40) / (14 polls x 32) = 64 / 448 = 0.142857 -> 0.1429
    assert line["utilisation"] == "0.1429" and line["polls"] == 14
    # 4 GPUs x 24 h x 31 days x 2.50 = 7,440 USD; idle 7,440 x (1 - 0.1429) = 6,376.82
    assert line["actual_cost_usd"] == "7440.00" and line["idle_cost_usd"] == "6376.82"
    rest = next(x for x in data["deployments"] if x["cluster"] == "k3-h100" and x["kind"] == "unassigned")
    assert rest["actual_cost_usd"] == "15120.00" and rest["idle_cost_usd"] is None  # 22,560 - 7,440
    k3 = next(c for c in data["clusters"] if c["cluster"] == "k3-h100")
    assert k3["idle_cost_usd"] == "6376.82" and k3["idle_unknown_usd"] == "15120.00"
    lab = next(c for c in data["clusters"] if c["cluster"] == "lab")
    assert lab["idle_cost_usd"] is None  # no deployment, no polls: unknown, not zero
    assert data["by_model"]["llama-3.1-70b"]["actual_cost_usd"] == "7440.00"


@pytest.mark.django_db
def test_a_past_month_is_all_actual_with_a_trend_from_the_first_cluster(viewer_api, fleet):
    data = viewer_api.get("/api/v1/spend/?month=2026-07").json()
    assert data["status"] == "actual" and data["projected_cost_usd"] == "0.00"
    assert data["actual_cost_usd"] == data["total_cost_usd"] == "23968.00"
    assert data["previous_month"] == "2026-06" and data["next_month"] == "2026-08"
    # The clusters came into service in July: the trend starts there, not with eleven empty months (issue 28).
    assert [t["month"] for t in data["trend"]] == ["2026-07"]
    assert data["trend"][-1]["actual_cost_usd"] == "23968.00"


@pytest.mark.django_db
def test_a_month_far_ahead_is_all_projected(viewer_api, fleet):
    data = viewer_api.get("/api/v1/spend/?month=2999-12").json()
    assert data["status"] == "projected" and data["actual_cost_usd"] == "0.00" and data["next_month"] is None
    # k3-h100: 16 GPUs x 24 h x 31 days x 2.50 = 29,760; lab: 8 x 4 h x 31 x 2.00 = 1,984
    assert data["projected_cost_usd"] == "31744.00"
