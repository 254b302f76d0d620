"""GET /api/v1/spend/: pro-rated from the dated history, with subtotals and a spreadsheet-ready CSV."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, GpuQuote, HardwareSku


@pytest.fixture
def fleet(db):
    call_command("load_catalog", stdout=StringIO())
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    # Registered 1 July with one node (8 GPUs), resized to two nodes from 16 July.
    c = Cluster(slug="k3-h100", name="K3 H100", sku=h100, nodes=1, provider="seed-assumption", team="platform")
    c.save(effective_from=date(2026, 7, 1))
    c.nodes = 2
    c.save(effective_from=date(2026, 7, 16))
    # A research cluster at another provider: 8 GPUs, 4 hours a day, from 10 July, its own quote.
    r = Cluster(slug="lab", name="Lab", sku=h100, nodes=1, provider="labcloud", team="research", hours_per_day=4)
    r.save(effective_from=date(2026, 7, 10))
    GpuQuote.objects.create(sku=h100, provider="labcloud", usd_per_gpu_hour=Decimal("2.00"), quoted_on=date(2026, 7, 1))
    # The catalogue's seed quote starts 17 July; date the same rate from June for this provider.
    GpuQuote.objects.create(
        sku=h100, provider="seed-assumption", usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 6, 1)
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
def test_a_provider_without_its_own_quote_pays_the_cheapest_in_force(viewer_api, fleet):
    mi = HardwareSku.objects.get(slug="mi300x-192gb")
    other = Cluster(slug="amd", name="AMD", sku=mi, nodes=1, provider="nocloud", team="research")
    other.save(effective_from=date(2026, 7, 17))  # the catalogue's MI300X quote starts 17 July
    data = viewer_api.get("/api/v1/spend/?month=2026-07").json()
    amd = next(c for c in data["clusters"] if c["cluster"] == "amd")
    assert amd["usd_per_gpu_hour"] == "2.5000" and amd["gpu_hours"] == str(8 * 24 * 15) + ".00"
    assert any("amd (nocloud, mi300x-192gb)" in a for a in data["assumptions"])


@pytest.mark.django_db
def test_days_without_any_quote_are_a_clear_error_not_a_zero(viewer_api, fleet):
    mi = HardwareSku.objects.get(slug="mi300x-192gb")
    Cluster(slug="amd", name="AMD", sku=mi, nodes=1, provider="nocloud", team="research").save(
        effective_from=date(2026, 7, 1)
    )
    r = viewer_api.get("/api/v1/spend/?month=2026-07")
    assert r.status_code == 400
    assert "mi300x-192gb" in r.json()["rates"][0] and "2026-07-01 to 2026-07-16" in r.json()["rates"][0]


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
    ]
    cluster = next(row for row in rows if row["name"] == "k3-h100")
    assert cluster["cost_usd"] == "22560.00" and float(cluster["gpu_hours"]) == 9024
    total = rows[-1]
    assert total["kind"] == "total" and total["cost_usd"] == "23968.00"
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
def test_idle_cost_comes_from_the_months_polls(viewer_api, fleet):
    from datetime import UTC, datetime

    from fleet.models import Deployment, ModelSpec
    from fleet.poll_store import count_poll

    d = Deployment.objects.create(slug="k3d", cluster=fleet, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4)
    # Three polls in July, counted as the poller counts them: one saw running requests, two did not (1/3 busy).
    for day, running in ((5, 2), (6, 0), (7, 0)):
        count_poll(d.pk, datetime(2026, 7, day, tzinfo=UTC).date(), busy=running > 0)
    count_poll(d.pk, datetime(2026, 8, 1, tzinfo=UTC).date(), busy=True)  # another month: not counted
    data = viewer_api.get("/api/v1/spend/?month=2026-07").json()
    k3 = next(c for c in data["clusters"] if c["cluster"] == "k3-h100")
    lab = next(c for c in data["clusters"] if c["cluster"] == "lab")
    assert k3["utilisation"] == "0.3333"
    assert k3["idle_cost_usd"] == str((Decimal("22560.00") * 2 / 3).quantize(Decimal("0.01")))
    assert lab["idle_cost_usd"] is None  # no polls, no idle figure
    assert data["total_idle_cost_usd"] == k3["idle_cost_usd"]
