"""Owned clusters through the service, the API and the pages: this month's own cost, its price in force,
the forms for running costs, purchases and electricity prices, and who may change them.

The hand example (June 2026, 30 days): 1 node x 8 H100 SXM at 700 W, PUE 1.3, 0.12 USD/kWh, 24 h a day:
8 x 700 W x 1.3 = 7.28 kW x 24 h x 30 days = 5,241.6 kWh x 0.12 = 628.992 -> 628.99 USD of energy;
depreciation 250,000 / 48 = 5,208.33; colocation 1 rack x 1,500 = 1,500.00; support 250,000 x 0.08 / 12 =
1,666.67; staff 0. Total 9,003.99 over 8 x 24 x 30 = 5,760 GPU-hours = 1.5632 USD per GPU-hour."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from fleet.models import Cluster, ClusterPurchase, ElectricityPrice, ExchangeRate, OwnedCosts, Provider
from fleet.owned import owned_month

JUNE = datetime(2026, 6, 10, 12, tzinfo=UTC)


@pytest.fixture
def in_june(monkeypatch):
    """Today is 10 June 2026 for the pages and the API (they read ``timezone.now()``)."""
    monkeypatch.setattr(timezone, "now", lambda: JUNE)


@pytest.fixture
def owned(sku):
    sku.tdp_watts = 700
    sku.save()
    cluster = Cluster.objects.create(
        slug="own-h100",
        name="Own H100",
        sku=sku,
        nodes=1,
        provider=Provider.objects.ensure("acme"),
        team="platform",
        ownership=Cluster.Ownership.OWNED,
    )
    OwnedCosts.objects.create(
        cluster=cluster, site="fra-1", pue="1.3", racks=1, usd_per_rack_month=1500, support_share_per_year="0.08"
    )
    ElectricityPrice.objects.create(site="fra-1", valid_from=date(2025, 1, 1), usd_per_kwh="0.12")
    ClusterPurchase.objects.create(
        cluster=cluster, bought_on=date(2026, 1, 15), nodes=1, price=250000, useful_life_months=48
    )
    return cluster


EXPECTED_PARTS = {
    "depreciation": "5208.33",
    "energy": "628.99",
    "colocation": "1500.00",
    "support": "1666.67",
    "staff": "0.00",
}


@pytest.mark.django_db
def test_the_service_gives_the_hand_computed_month(owned):
    answer = owned_month(owned, 2026, 6)
    m = answer.month
    assert answer.unpriced == ""
    assert {k: str(v) for k, v in m.parts.items()} == EXPECTED_PARTS
    assert m.total_usd == Decimal("9003.99")
    assert m.gpu_hours == Decimal("5760.00")
    assert m.usd_per_gpu_hour == Decimal("1.5632")
    assert m.kwh == Decimal("5241.60")
    assert m.unpriced_days == 0
    assert any("700 W per GPU, full load (no utilisation polled)" in a for a in m.assumptions)


@pytest.mark.django_db
def test_the_api_prices_an_owned_cluster_at_its_own_cost(owned, viewer_api, in_june):
    body = viewer_api.get(f"/api/v1/clusters/{owned.slug}/").json()
    assert body["ownership"] == "owned"
    price = body["price_in_force"]
    assert price["basis"] == "owned" and price["usd_per_gpu_hour"] == "1.5632"
    assert price["quote"] is None
    assert (price["valid_from"], price["valid_until"]) == ("2026-06-01", "2026-06-30")
    month = body["owned_month"]
    assert month["month_label"].startswith("June 2026")
    assert month["parts"] == EXPECTED_PARTS
    assert (month["total_usd"], month["gpu_hours"], month["usd_per_gpu_hour"]) == ("9003.99", "5760.00", "1.5632")
    # The list says the same (one owned book for the page).
    listed = {c["slug"]: c for c in viewer_api.get("/api/v1/clusters/").json()["results"]}
    assert listed[owned.slug]["owned_month"]["total_usd"] == "9003.99"


@pytest.mark.django_db
def test_a_rented_cluster_has_no_owned_month_and_ownership_is_writable(cluster, platform_api):
    body = platform_api.get(f"/api/v1/clusters/{cluster.slug}/").json()
    assert body["ownership"] == "rented" and body["owned_month"] is None
    changed = platform_api.patch(f"/api/v1/clusters/{cluster.slug}/", {"ownership": "owned"}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["ownership"] == "owned"
    assert changed.json()["price_in_force"] is None  # no running costs nor purchase yet: unpriced
    refused = platform_api.patch(f"/api/v1/clusters/{cluster.slug}/", {"ownership": "leased"}, format="json")
    assert refused.status_code == 400 and "ownership" in refused.json()


@pytest.mark.django_db
def test_the_cost_records_have_api_endpoints(owned, platform_api, viewer_api):
    purchases = viewer_api.get(f"/api/v1/cluster-purchases/?cluster={owned.slug}").json()["results"]
    assert [(p["cluster"], p["price"], p["currency"]) for p in purchases] == [(owned.slug, "250000.00", "USD")]
    too_much = {"cluster": owned.slug, "bought_on": "2026-02-01", "nodes": 1, "price": "1000", "residual_value": "2000"}
    refused = platform_api.post("/api/v1/cluster-purchases/", too_much, format="json")
    assert refused.status_code == 400
    assert refused.json()["residual_value"] == ["The residual value cannot exceed the purchase price."]
    again = {"site": "fra-1", "valid_from": "2025-01-01", "usd_per_kwh": "0.2"}
    assert platform_api.post("/api/v1/electricity-prices/", again, format="json").status_code == 400
    assert viewer_api.post("/api/v1/electricity-prices/", again, format="json").status_code == 403
    costs = viewer_api.get("/api/v1/owned-costs/").json()["results"]
    assert [(c["cluster"], c["pue"]) for c in costs] == [(owned.slug, "1.30")]


@pytest.mark.django_db
def test_the_cluster_page_shows_what_it_costs_to_own(owned, client, make_user, in_june):
    client.force_login(make_user("p", "platform"))
    html = client.get(f"/clusters/{owned.slug}/").content.decode()
    card = html.split('id="owned-cost"')[1].split("</section>")[0]
    for part, usd in (("depreciation", "5,208.33"), ("energy", "628.99"), ("colocation", "1,500.00"),
                      ("support", "1,666.67"), ("staff", "0.00"), ("total", "9,003.99")):  # fmt: skip
        assert f'data-part="{part}"' in card
        assert usd in card.split(f'data-part="{part}"')[1].split("</tr>")[0], part
    assert "5,760.00" in card and "5,241.60 kWh" in card
    assert '<dd id="owned-rate">1.5632</dd>' in card
    assert "Straight-line" in card or "straight-line" in card  # the engine's assumptions, listed
    assert "2026-01-15" in card and "250,000.00" in card  # the purchase
    assert "fra-1" in card and "Edit the running costs" in card and "Add a purchase" in card
    price = html.split('id="cluster-price"')[1].split("</dd>")[0]
    assert (
        "1.5632 USD/GPU-hour (its own cost this month: depreciation, energy, colocation, support, staff)"
        " · 12.5055 USD/hour for 8 GPUs"
    ) in price
    assert 'data-usd-per-gpu-hour="1.5632"' in price
    # The fleet table says the same.
    fleet = client.get("/").content.decode()
    assert "1.5632 USD/GPU-hour (its own cost this month" in fleet


@pytest.mark.django_db
def test_a_purchase_in_eur_without_a_rate_leaves_the_cluster_unpriced_with_the_reason(
    owned, client, make_user, viewer_api, in_june
):
    ClusterPurchase.objects.create(cluster=owned, bought_on=date(2026, 3, 2), nodes=1, price=200000, currency="EUR")
    client.force_login(make_user("v", "viewer"))
    html = client.get(f"/clusters/{owned.slug}/").content.decode()
    reason = "its purchase of 2026-03-02 is in EUR, with no exchange rate on record within 31 days before that day"
    assert f"Unpriced: {reason}." in html
    assert f"unpriced: {reason}" in html.split('id="cluster-price"')[1].split("</dd>")[0]
    body = viewer_api.get(f"/api/v1/clusters/{owned.slug}/").json()
    assert body["price_in_force"] is None and body["owned_month"] is None
    # With a rate on record the EUR purchase is converted at it: depreciation 250,000/48 + 220,000/48.
    ExchangeRate.objects.create(currency="EUR", on=date(2026, 3, 1), usd_per_unit="1.1")
    month = viewer_api.get(f"/api/v1/clusters/{owned.slug}/").json()["owned_month"]
    assert month["parts"]["depreciation"] == "9791.67"


@pytest.mark.django_db
def test_an_owned_cluster_without_running_costs_says_what_is_missing(sku, client, make_user, in_june):
    cluster = Cluster.objects.create(
        slug="bare", name="Bare", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="ml",
        ownership=Cluster.Ownership.OWNED,
    )  # fmt: skip
    client.force_login(make_user("p", "platform"))
    html = client.get(f"/clusters/{cluster.slug}/").content.decode()
    assert "unpriced: owned, but its running costs (site, PUE, colocation, support) are not on record" in html
    assert "Add the running costs" in html and "No purchase on record." in html


def _errors(response):
    return response.context["form"].errors


@pytest.mark.django_db
def test_the_forms_refuse_bad_input_beside_the_fields(owned, client, make_user):
    client.force_login(make_user("p", "platform"))
    costs = {"site": "fra-1", "node_overhead_w": "0", "pue": "0.5", "racks": "1", "usd_per_rack_month": "1500",
             "support_share_per_year": "0.08", "staff_usd_per_month": "0"}  # fmt: skip
    r = client.post(f"/clusters/{owned.slug}/owned-costs/", costs)
    assert r.status_code == 400 and "pue" in _errors(r)
    costs["pue"] = "1.4"
    r = client.post(f"/clusters/{owned.slug}/owned-costs/", costs)
    assert r.status_code == 302 and OwnedCosts.objects.get(cluster=owned).pue == Decimal("1.40")

    purchase = {"bought_on": "2026-02-01", "nodes": "1", "price": "1000", "price_per": "node", "currency": "usd",
                "useful_life_months": "48", "residual_value": "2000"}  # fmt: skip
    r = client.post(f"/clusters/{owned.slug}/purchases/new/", purchase)
    assert r.status_code == 400
    assert _errors(r)["residual_value"] == ["The residual value cannot exceed the purchase price."]
    r = client.post(f"/clusters/{owned.slug}/purchases/new/", purchase | {"nodes": "-1", "residual_value": "0"})
    assert r.status_code == 400 and "nodes" in _errors(r)
    r = client.post(f"/clusters/{owned.slug}/purchases/new/", purchase | {"currency": "euro", "residual_value": "0"})
    assert r.status_code == 400 and "currency" in _errors(r)
    # Per GPU: 8 x 200 = 1,600 in all, so a residual of 1,000 is below the price.
    r = client.post(f"/clusters/{owned.slug}/purchases/new/", purchase | {"price": "200", "price_per": "gpu",
                                                                            "residual_value": "1000"})  # fmt: skip
    assert r.status_code == 302
    added = ClusterPurchase.objects.get(cluster=owned, bought_on=date(2026, 2, 1))
    assert added.currency == "USD" and added.total_price(8) == Decimal("1600")

    price = {"site": "fra-1", "valid_from": "2025-01-01", "usd_per_kwh": "0.2"}
    r = client.post("/electricity-prices/new/", price)
    assert r.status_code == 400 and _errors(r)  # the site already has a price from that day
    r = client.post("/electricity-prices/new/", price | {"usd_per_kwh": "-1", "valid_from": "2026-07-01"})
    assert r.status_code == 400 and "usd_per_kwh" in _errors(r)
    r = client.post("/electricity-prices/new/", price | {"valid_from": "not a day"})
    assert r.status_code == 400 and "valid_from" in _errors(r)
    r = client.post("/electricity-prices/new/", price | {"valid_from": "2026-07-01"})
    assert r.status_code == 302
    listed = client.get("/electricity-prices/").content.decode()
    assert "2026-07-01" in listed and "Own H100" in listed


@pytest.mark.django_db
def test_a_purchase_is_edited_and_deleted(owned, client, make_user, in_june):
    client.force_login(make_user("f", "finance"))
    purchase = owned.purchases.get()
    page = client.get(f"/clusters/{owned.slug}/purchases/{purchase.pk}/edit/")
    assert page.status_code == 200 and 'value="250000.00"' in page.content.decode()
    r = client.post(f"/clusters/{owned.slug}/purchases/{purchase.pk}/delete/")
    assert r.status_code == 302 and r["Location"] == f"/clusters/{owned.slug}/"
    assert not owned.purchases.exists()
    html = client.get(f"/clusters/{owned.slug}/").content.decode()
    assert "unpriced: owned, but no purchase is on record" in html


@pytest.mark.django_db
def test_the_sku_form_takes_the_power_figures_as_the_engine_does(sku, client, make_user):
    client.force_login(make_user("p", "platform"))
    form = client.get(f"/skus/{sku.slug}/edit/").context["form"]
    data = {name: form.initial.get(name) for name in form.fields if form.initial.get(name) is not None}
    r = client.post(f"/skus/{sku.slug}/edit/", data | {"tdp_watts": "700", "idle_watts": "900"})
    assert r.status_code == 400 and _errors(r)["idle_watts"] == ["Idle power cannot exceed full-load power."]
    r = client.post(f"/skus/{sku.slug}/edit/", data | {"tdp_watts": "700", "idle_watts": "80"})
    assert r.status_code == 302
    sku.refresh_from_db()
    assert (sku.tdp_watts, sku.idle_watts) == (700, 80)


@pytest.mark.django_db
def test_the_cluster_form_sets_the_ownership(cluster, client, make_user):
    client.force_login(make_user("p", "platform"))
    page = client.get(f"/clusters/{cluster.slug}/edit/").content.decode()
    assert 'name="ownership"' in page and "Owned: its own cost instead" in page


@pytest.mark.django_db
def test_a_viewer_sees_no_edit_links_and_may_not_open_the_forms(owned, client, make_user, in_june):
    client.force_login(make_user("v", "viewer"))
    purchase = owned.purchases.get()
    price = ElectricityPrice.objects.get()
    html = client.get(f"/clusters/{owned.slug}/").content.decode()
    card = html.split('id="owned-cost"')[1].split("</section>")[0]
    assert "1.5632" in card  # the figures are there
    for link in ("/owned-costs/", "/purchases/new/", f"/purchases/{purchase.pk}/edit/",
                 f"/purchases/{purchase.pk}/delete/"):  # fmt: skip
        assert link not in card
    assert "/electricity-prices/" in card  # the list is readable
    listed = client.get("/electricity-prices/").content.decode()
    assert "/electricity-prices/new/" not in listed and f"/electricity-prices/{price.pk}/edit/" not in listed
    for url in (f"/clusters/{owned.slug}/owned-costs/", f"/clusters/{owned.slug}/purchases/new/",
                f"/clusters/{owned.slug}/purchases/{purchase.pk}/edit/",
                f"/clusters/{owned.slug}/purchases/{purchase.pk}/delete/", "/electricity-prices/new/",
                f"/electricity-prices/{price.pk}/edit/", f"/electricity-prices/{price.pk}/delete/"):  # fmt: skip
        assert client.get(url).status_code == 403, url
        assert client.post(url, {}).status_code == 403, url
