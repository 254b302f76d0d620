"""Prices people would quote (issue 15): the catalogue's dated public list prices beside the seeds'
2.50 USD assumption (in force nowhere, issue 24), the rule that picks the price in force, and the
pages that manage quotes, API prices, SKUs and workloads (services, forms, roles, bad input, history)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from fleet import prices
from fleet.catalog_loader import CATALOG_DIR
from fleet.errors import InputError
from fleet.models import ApiPrice, Cluster, GpuQuote, HardwareSku, Provider, Workload
from planner.engine import ClusterState, Quote, rate_from_quotes

D = Decimal
TODAY = date(2026, 12, 1)


@pytest.fixture
def catalogue(db):
    call_command("load_catalog", stdout=StringIO())
    Provider.objects.ensure("acme")  # the provider the page tests' quotes name (QUOTE)


@pytest.fixture
def browser_for(make_user):
    """A page client logged in as a new user of ``role``."""

    def make(role: str) -> Client:
        client = Client()
        client.force_login(make_user(f"page-{role}", role))
        return client

    return make


# --- the catalogue --------------------------------------------------------------------------------


def test_every_public_price_has_a_source_a_date_and_is_marked_a_list_price():
    rows = json.loads((CATALOG_DIR / "gpu_quotes.json").read_text())
    public = [r for r in rows if r["provider"] is not None]
    assert len(public) >= 40
    for r in public:
        assert r["list_price"] is True and r["source"].strip(), r
        assert "http" in r["source"] or "API" in r["source"], r  # a URL or a named document
        assert date.fromisoformat(r["quoted_on"]) <= TODAY, r
        assert D(r["usd_per_gpu_hour"]) > 0 and r["pricing_kind"] in {"on-demand", "reserved"}
    # The seeds' assumption stays, one per SKU, with no provider (an assumption, never in force).
    seeds = [r for r in rows if r["provider"] is None]
    assert {r["provider"] for r in public} == {
        p["name"] for p in json.loads((CATALOG_DIR / "providers.json").read_text()) if p["kind"] != "model-api"
    }  # the model-api providers sell tokens, not GPU-hours: the API prices name them
    assert {r["usd_per_gpu_hour"] for r in seeds} == {"2.50"} and not any(r["list_price"] for r in seeds)
    # The SKUs left without a public price are the ones the README names.
    priced = {r["sku"] for r in public}
    readme = (CATALOG_DIR / "README.md").read_text()
    for sku in {r["sku"] for r in seeds} - priced:
        assert f"`{sku}`" in readme, sku


@pytest.mark.django_db
def test_the_seeds_assumption_is_in_force_nowhere(catalogue):
    """Issue 24: on a fresh catalogue no SKU is priced at the seeds' 2.50. Each SKU's price in force is
    its cheapest public list price in force (no provider quoted the fleet yet), and the three SKUs no
    price list covers are unpriced, said plainly, never 2.50."""
    unlisted = {"gb300-288gb", "mi355x-288gb", "rtx-4080-16gb"}
    for sku in HardwareSku.objects.all():
        for on in (date(2026, 7, 17), date(2026, 7, 31), TODAY):
            price = prices.price_of_sku(sku, on)
            listed = GpuQuote.objects.filter(sku=sku, list_price=True).valid_on(on)
            if price is None:
                assert not listed.exists() or sku.slug in unlisted, (sku.slug, on)
                continue
            assert price.basis == "list" and price.quote.provider, (sku.slug, on)
        assert prices.price_of_sku(sku, TODAY) is None or sku.slug not in unlisted
    # Per provider its latest list price, then the cheapest provider (read off the catalogue by hand):
    # H100 today RunPod Community Cloud's 2.69 (2026-11-09; Hyperstack 3.20, Nebius 3.85 now); H200
    # RunPod Community Cloud's 3.59 (Hyperstack's 2.79 is a reserved price); H100 on 2026-07-31 Nebius's
    # 2.95 (the cheaper rows are dated later).
    for slug, on, provider, usd in (
        ("h100-sxm-80gb", TODAY, "RunPod Community Cloud", "2.69"),
        ("h200-141gb", TODAY, "RunPod Community Cloud", "3.59"),
        ("h100-sxm-80gb", date(2026, 7, 31), "Nebius", "2.95"),
    ):
        price = prices.price_of_sku(HardwareSku.objects.get(slug=slug), on)
        assert (price.quote.provider, price.usd_per_gpu_hour) == (provider, D(usd)), (slug, on)
    for slug in unlisted:
        assert prices.price_of_sku(HardwareSku.objects.get(slug=slug), TODAY) is None
    # The RTX 4090 at RunPod Community Cloud's 0.34 is that SKU's price (a provider's real price).
    rtx = prices.price_of_sku(HardwareSku.objects.get(slug="rtx-4090-24gb"), TODAY)
    assert rtx.basis == "list" and rtx.usd_per_gpu_hour < D("2.50")


@pytest.mark.django_db
def test_a_quote_the_fleet_holds_becomes_the_price(catalogue):
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    mine = GpuQuote.objects.create(
        sku=h100, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=D("4.10"), quoted_on=date(2026, 11, 1)
    )
    # An own quote beats every public list price, even cheaper ones (RunPod Community's 2.69).
    assert prices.price_of_sku(h100, TODAY).quote.id == mine.pk
    before = prices.price_of_sku(h100, date(2026, 10, 31))
    assert before.basis == "list" and before.quote.provider != "acme"


@pytest.mark.django_db
def test_sql_and_engine_agree_with_list_prices(sku):
    def add(provider, usd, on, list_price=False, kind="on-demand"):
        return GpuQuote.objects.create(
            sku=sku,
            provider=Provider.objects.ensure(provider),
            usd_per_gpu_hour=D(usd),
            quoted_on=on,
            list_price=list_price,
            pricing_kind=kind,
        )

    fleet_old = add("lambda", "2.80", date(2026, 6, 1))
    add("lambda", "1.00", date(2026, 7, 1), list_price=True)  # newer, cheaper, but a list price
    other = add("coreweave", "2.90", date(2026, 6, 1))
    vast = add("vast", "0.50", date(2026, 6, 1), list_price=True)
    book = prices.PriceBook.load([sku.pk])
    on = date(2026, 7, 5)
    assert book.for_sku(sku.slug, on).quote.id == fleet_old.pk  # own quotes first, the cheapest of them
    assert book.for_rented(sku.slug, "lambda", on).quote.id == fleet_old.pk  # its own, not its list
    assert book.for_rented(sku.slug, "coreweave", on).quote.id == other.pk  # its own, dearer
    assert book.for_rented(sku.slug, "vast", on).quote.id == vast.pk  # no own quote: its list price
    assert book.for_rented(sku.slug, "nebius", on) is None  # neither: unpriced


def _state(provider: str, sku: str = "h100") -> ClusterState:
    return ClusterState(
        cluster="c",
        team="t",
        provider=provider,
        sku=sku,
        effective_from=date(2026, 1, 1),
        gpus=8,
        hours_per_day=24,
    )


def test_a_list_price_prices_only_a_cluster_at_its_provider():
    on = date(2026, 11, 20)
    quotes = [
        Quote(sku="h100", provider="", usd_per_gpu_hour=D("2.50"), pricing_kind="on-demand",
              quoted_on=date(2026, 7, 17), assumption=True),
        Quote(sku="h100", provider="RunPod", usd_per_gpu_hour=D("3.99"), pricing_kind="on-demand",
              quoted_on=date(2026, 11, 9), list_price=True),
        Quote(sku="h100", provider="Vast", usd_per_gpu_hour=D("1.00"), pricing_kind="on-demand",
              quoted_on=date(2026, 11, 9), list_price=True),
    ]  # fmt: skip
    own = rate_from_quotes(quotes)
    assert own(_state("RunPod"), on) == D("3.99")  # the cluster pays its provider's published price
    assert own(_state("acme"), on) is None  # never Vast's 1.00, never the assumption's 2.50
    negotiated = Quote(sku="h100", provider="RunPod", usd_per_gpu_hour=D("3.10"), pricing_kind="on-demand",
                       quoted_on=date(2026, 10, 1))  # fmt: skip
    assert rate_from_quotes([*quotes, negotiated])(_state("RunPod"), on) == D("3.10")  # its own quote first
    assert "list_price" not in quotes[0].to_dict() and quotes[1].to_dict()["list_price"] is True
    assert quotes[0].to_dict()["assumption"] is True


# --- services -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_quote_rows_mark_the_price_in_force_and_why_others_are_not(sku):
    def add(provider, usd, on, until=None, list_price=False):
        return GpuQuote.objects.create(
            sku=sku,
            provider=Provider.objects.ensure(provider),
            usd_per_gpu_hour=D(usd),
            quoted_on=on,
            valid_until=until,
            list_price=list_price,
        )

    old = add("a", "3.00", date(2026, 1, 1))
    price = add("a", "2.40", date(2026, 6, 1))
    dearer = add("b", "2.60", date(2026, 6, 1))
    ended = add("c", "1.00", date(2026, 1, 1), until=date(2026, 2, 1))
    listed = add("d", "0.90", date(2026, 6, 1), list_price=True)
    later = add("e", "1.50", date(2027, 1, 1))
    status = {r.quote.pk: r.status for r in prices.quote_rows(GpuQuote.objects.all(), TODAY)}
    assert status == {
        old.pk: "superseded",
        price.pk: "price",
        dearer.pk: "in-force",
        ended.pk: "expired",
        listed.pk: "list-price",
        later.pk: "future",
    }


@pytest.mark.django_db
def test_a_new_price_supersedes_with_its_own_date_and_slug(catalogue):
    api = ApiPrice.objects.get(slug="kimi-k3-api")
    initial = prices.superseding_api_price(api, TODAY)
    assert initial["slug"] == "kimi-k3-api-2026-12-01" and initial["quoted_on"] == TODAY
    model_id = initial.pop("model")
    again = ApiPrice(**initial, model_id=model_id)
    assert prices.superseding_api_price(again, date(2027, 1, 2))["slug"] == "kimi-k3-api-2027-01-02"
    quote = GpuQuote.objects.filter(list_price=True).first()
    assert prices.superseding_quote(quote, TODAY)["list_price"] is True


@pytest.mark.django_db
def test_deleting_a_record_others_use_is_refused_naming_them(catalogue):
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    Cluster.objects.create(
        slug="pool", name="Pool", sku=h100, nodes=1, provider=Provider.objects.ensure("acme"), team="t"
    )
    with pytest.raises(InputError) as caught:
        prices.delete_record(h100)
    message = caught.value.errors["__all__"][0]
    assert "cannot be deleted" in message and "cluster" in message and "GPU quote" in message
    assert HardwareSku.objects.filter(slug="h100-sxm-80gb").exists()


# --- pages: roles ---------------------------------------------------------------------------------

QUOTE = {
    "sku": None,
    "provider": "acme",
    "usd_per_gpu_hour": "2.10",
    "pricing_kind": "on-demand",
    "quoted_on": "2026-11-01",
    "valid_until": "",
    "source": "Offer from acme, 2026-11-01 (email)",
}


@pytest.mark.django_db
def test_finance_adds_a_quote_and_sees_it_in_force(catalogue, browser_for):
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    finance = browser_for("finance")
    response = finance.post("/quotes/new/", {**QUOTE, "sku": h100.pk, "quoted_on": date.today().isoformat()})
    assert response.status_code == 302 and response["Location"] == "/quotes/?sku=h100-sxm-80gb"
    quote = GpuQuote.objects.get(provider__name="acme")
    page = finance.get(response["Location"]).content.decode()
    assert f'data-quote="{quote.pk}" data-status="price"' in page and "price in force" in page
    history = finance.get(f"/history/gpu-quote/{quote.pk}/").content.decode()
    assert "page-finance" in history and "2.10" in history


@pytest.mark.parametrize("role", ["viewer", "platform"])
@pytest.mark.django_db
def test_who_may_not_write_prices_is_refused_and_offered_nothing(catalogue, browser_for, role):
    client = browser_for(role)
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    assert client.post("/quotes/new/", {**QUOTE, "sku": h100.pk}).status_code == 403
    assert client.post("/api-prices/kimi-k3-api/delete/").status_code == 403
    page = client.get("/quotes/").content.decode()
    assert "Add a quote" not in page and "New price" not in page and "/delete/" not in page and "History" in page
    assert not GpuQuote.objects.filter(provider__name="acme").exists()


@pytest.mark.django_db
def test_viewer_and_finance_may_not_write_the_catalogue(catalogue, browser_for):
    for role in ("viewer", "finance"):
        client = browser_for(role)
        assert client.post("/skus/h100-sxm-80gb/delete/").status_code == 403
        assert client.post("/workloads/new/", {"slug": "x"}).status_code == 403
        page = client.get("/skus/").content.decode()
        assert "Add a SKU" not in page and "/edit/" not in page
    platform = browser_for("platform")
    assert "Add a SKU" in platform.get("/skus/").content.decode()


@pytest.mark.django_db
def test_nav_links_only_for_who_may_view(catalogue, browser_for, make_user):
    page = browser_for("viewer").get("/").content.decode()
    assert 'href="/quotes/"' in page and 'href="/skus/"' in page
    nobody = Client()
    nobody.force_login(make_user("no-role"))
    response = nobody.get("/quotes/")
    assert response.status_code == 403 and 'href="/quotes/"' not in response.content.decode()


# --- pages: forms, bad input, supersede, edit, delete ---------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("usd_per_gpu_hour", "abc", "Enter a number"),
        ("usd_per_gpu_hour", "-1", "greater than zero"),
        ("usd_per_gpu_hour", "1e30", "less than or equal to 10000"),
        ("usd_per_gpu_hour", "99999", "less than or equal to 10000"),
        ("quoted_on", "2026-13-45", "Enter a valid date"),
        ("valid_until", "2026-01-01", "cannot expire before"),
        ("pricing_kind", "free", "Select a valid choice"),
        ("provider", "x" * 500, "Select a valid choice"),  # picked from the list of providers
    ],
)
@pytest.mark.django_db
def test_bad_quote_input_is_an_error_beside_the_field(catalogue, browser_for, field, value, message):
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    response = browser_for("finance").post("/quotes/new/", {**QUOTE, "sku": h100.pk, field: value})
    assert response.status_code == 400 and message in response.content.decode()
    assert not GpuQuote.objects.filter(provider__name="acme").exists()


@pytest.mark.django_db
def test_control_characters_and_unknown_keys_never_500(catalogue, browser_for):
    finance = browser_for("finance")
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    assert finance.post("/quotes/new/", {**QUOTE, "sku": h100.pk, "provider": "a\x00b"}).status_code == 400
    assert finance.post("/quotes/new/", {**QUOTE, "sku": "999999"}).status_code == 400
    assert finance.get("/quotes/new/?from=abc").status_code == 200
    assert finance.get("/quotes/new/?from=999999").status_code == 200
    assert finance.get("/quotes/?sku=no-such-sku").status_code == 200
    assert finance.get("/quotes/999999/edit/").status_code == 404
    assert finance.get("/api-prices/new/?from=nope").status_code == 200


@pytest.mark.django_db
def test_new_price_from_an_old_one_is_prefilled_and_both_stay(catalogue, browser_for):
    finance = browser_for("finance")
    old = GpuQuote.objects.get(sku__slug="h100-sxm-80gb", provider__name="Lambda")
    form = finance.get(f"/quotes/new/?from={old.pk}").content.decode()
    assert 'value="Lambda"' in form and 'name="list_price"' in form and "checked" in form
    source = "https://lambda.ai/pricing 1x H100 SXM (checked 2026-11-30)"
    data = {**QUOTE, "sku": old.sku_id, "provider": "Lambda", "usd_per_gpu_hour": "4.29", "list_price": "on",
            "quoted_on": "2026-11-30", "source": source}  # fmt: skip
    assert finance.post("/quotes/new/", data).status_code == 302
    lambda_h100 = GpuQuote.objects.filter(provider__name="Lambda", sku=old.sku)
    rows = {r.quote.usd_per_gpu_hour: r.status for r in prices.quote_rows(lambda_h100, TODAY)}
    assert rows == {D("3.99"): "superseded", D("4.29"): "list-price"}


@pytest.mark.django_db
def test_a_stored_quote_can_be_ended_but_its_price_never_edited(catalogue, browser_for):
    finance = browser_for("finance")
    quote = GpuQuote.objects.get(sku__slug="h100-sxm-80gb", provider=None)
    response = finance.post(
        f"/quotes/{quote.pk}/edit/",
        {"valid_until": "2026-12-31", "source": quote.source, "usd_per_gpu_hour": "0.01", "quoted_on": "2020-01-01"},
    )
    assert response.status_code == 302
    quote.refresh_from_db()
    assert quote.valid_until == date(2026, 12, 31)
    assert (quote.usd_per_gpu_hour, quote.quoted_on) == (D("2.50"), date(2026, 7, 17))
    history = finance.get(f"/history/gpu-quote/{quote.pk}/").content.decode()
    assert "Valid until" in history and "valid_until" not in history and "2026-12-31" in history


@pytest.mark.django_db
def test_api_price_pages(catalogue, browser_for):
    finance = browser_for("finance")
    page = finance.get("/api-prices/").content.decode()
    assert 'data-api-price="kimi-k3-api"' in page and "current" in page and "Seed article" in page
    data = {**prices.superseding_api_price(ApiPrice.objects.get(slug="kimi-k3-api"), date(2026, 11, 1)),
            "output_usd_per_mtok": "12.00", "source": "https://platform.moonshot.ai/docs/pricing (test)"}  # fmt: skip
    data = {k: ("" if v is None else v) for k, v in data.items()}
    assert finance.post("/api-prices/new/", data).status_code == 302
    rows = {r.price.slug: r.current for r in prices.api_price_rows(ApiPrice.objects.all(), TODAY)}
    assert {k: v for k, v in rows.items() if k.startswith("kimi-k3-api")} == {
        "kimi-k3-api": False,
        "kimi-k3-api-2026-11-01": True,
    }
    assert rows["kimi-k3-fireworks"] is True  # another provider's price of K3: its own, still current
    bad = finance.post("/api-prices/new/", {**data, "slug": "other", "output_usd_per_mtok": "1e40"})
    assert bad.status_code == 400 and "less than or equal to" in bad.content.decode()


WORKLOAD = {
    "name": "Chat",
    "slug": "chat",
    "team": "dev",
    "requests_per_day": "100000",
    "mean_prompt_tokens": "2000",
    "mean_output_tokens": "300",
    "p95_context_tokens": "8000",
    "prefix_cache_hit_rate": "0.5",
    "peak_concurrency": "64",
    "ttft_slo_ms": "2000",
    "tpot_slo_ms": "50",
}


@pytest.mark.django_db
def test_platform_manages_workloads_with_history(db, browser_for):
    platform = browser_for("platform")
    assert platform.post("/workloads/new/", WORKLOAD).status_code == 302
    assert platform.post("/workloads/chat/edit/", {**WORKLOAD, "ttft_slo_ms": "1500"}).status_code == 302
    assert Workload.objects.get(slug="chat").ttft_slo_ms == 1500
    history = platform.get("/history/workload/chat/").content.decode()
    assert (
        "TTFT SLO (ms)" in history
        and "ttft_slo_ms" not in history
        and "2000" in history
        and "1500" in history
        and 'href="/workloads/"' in history
    )
    for field, value in [
        ("requests_per_day", "1" + "0" * 30),
        ("ttft_slo_ms", "1e308"),
        ("prefix_cache_hit_rate", "2"),
    ]:
        response = platform.post("/workloads/new/", {**WORKLOAD, "slug": "big", field: value})
        assert response.status_code == 400 and 'class="error"' in response.content.decode(), field
    assert platform.post("/workloads/chat/delete/").status_code == 302
    assert not Workload.objects.filter(slug="chat").exists()


@pytest.mark.django_db
def test_platform_manages_skus_and_a_used_sku_is_not_deleted(catalogue, browser_for):
    platform = browser_for("platform")
    sku = HardwareSku.objects.get(slug="rtx-4080-16gb")
    form = {name: getattr(sku, name) for name in ("name", "slug", "vendor", *HardwareSku.FIGURES, "source")}
    form = {k: ("" if v is None else v) for k, v in form.items()}
    assert platform.post("/skus/rtx-4080-16gb/edit/", {**form, "bf16_tflops": "1e300"}).status_code == 400
    assert platform.post("/skus/rtx-4080-16gb/edit/", {**form, "hbm_bandwidth_tbps": "0.75"}).status_code == 302
    refused = platform.post("/skus/h100-sxm-80gb/delete/")
    assert refused.status_code == 400 and "cannot be deleted" in refused.content.decode()
    page = platform.get("/skus/").content.decode()
    assert 'data-sku="h100-sxm-80gb"' in page and "2.69" in page  # its price in force: a list price
