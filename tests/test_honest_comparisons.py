"""Rent vs API never compares two models silently, and a layout that does not fit has no capacity
and no rent recommendation, only its deficit (issue 15, "Honest comparisons")."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from priced import acme_quoting_the_seeds_rate

from fleet.models import ApiPrice, Cluster, Deployment, HardwareSku, ModelSpec, Workload
from planner.engine import GIB

URL = "/api/v1/breakeven/"


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


def _deployment(slug: str, model: str, sku: str, gpus: int, **extra) -> Deployment:
    hardware = HardwareSku.objects.get(slug=sku)
    cluster = Cluster.objects.create(
        slug=f"c-{slug}", name=slug, sku=hardware, nodes=1, provider=acme_quoting_the_seeds_rate(hardware), team="t"
    )
    return Deployment.objects.create(
        slug=slug, cluster=cluster, model=ModelSpec.objects.get(slug=model), tp=gpus, **extra
    )


VOLUME = {"monthly_input_tokens": 2_000_000_000, "monthly_output_tokens": 200_000_000, "on": "2026-08-01"}


@pytest.mark.django_db
def test_the_catalogue_api_price_names_the_model_it_prices(catalog, viewer_api):
    assert ApiPrice.objects.get(slug="kimi-k3-api").model.slug == "kimi-k3"
    r = viewer_api.get("/api/v1/api-prices/kimi-k3-api/").json()
    assert r["model"] == "kimi-k3"
    assert viewer_api.get("/api/v1/api-prices/?model=kimi-k3").json()["count"] == 2  # Moonshot AI, Fireworks AI
    assert viewer_api.get("/api/v1/api-prices/?model=llama-3.1-70b").json()["count"] == 2  # Together AI, DeepInfra
    assert viewer_api.get("/api/v1/api-prices/?model=kimi-linear-48b-a3b").json()["count"] == 0


@pytest.mark.django_db
def test_a_llama_deployment_against_the_kimi_k3_api_says_it_compares_different_models(catalog, viewer_api):
    """Issue 15: the page priced the demo Llama-70B against the Kimi K3 API without a word."""
    _deployment("llama", "llama-3.1-70b", "h100-sxm-80gb", 4, replicas=2, kv_cache_dtype="fp8")
    r = viewer_api.post(URL, {"deployment": "llama", "api_price": "kimi-k3-api", **VOLUME}, format="json").json()
    models = r["models"]
    assert models["rented"] == "llama-3.1-70b" and models["api"] == "kimi-k3" and models["same"] is False
    assert "The GPUs serve Llama-3.1-70B-Instruct, the API price is for Kimi K3" in models["note"]
    assert "tier 2" in models["note"]
    assert r["assumptions"][0] == models["note"]


@pytest.mark.django_db
def test_the_same_model_on_both_sides_has_no_caveat(catalog, viewer_api):
    _deployment("k3", "kimi-k3", "b200-192gb", 8)
    r = viewer_api.post(URL, {"deployment": "k3", "api_price": "kimi-k3-api", **VOLUME}, format="json").json()
    assert r["models"] == {
        "rented": "kimi-k3", "api": "kimi-k3", "api_model_name": "kimi-k3", "same": True, "rented_api_priced": True,
        "note": "",
    }  # fmt: skip


@pytest.mark.django_db
def test_an_api_price_without_a_model_spec_and_inline_prices_cannot_be_checked(catalog, viewer_api):
    ApiPrice.objects.filter(slug="kimi-k3-api").update(model=None)
    body = {"gpus": 8, "sku": "h100-sxm-80gb", "model": "llama-3.1-70b", **VOLUME}
    r = viewer_api.post(URL, {**body, "api_price": "kimi-k3-api"}, format="json").json()
    assert r["models"]["same"] is None and "names no model spec" in r["models"]["note"]
    inline = {"input_cache_hit_usd_per_mtok": "0.3", "input_cache_miss_usd_per_mtok": "3", "output_usd_per_mtok": "15"}
    r = viewer_api.post(URL, {**body, **inline}, format="json").json()
    assert r["models"]["same"] is None and "Inline API prices name no model" in r["models"]["note"]


@pytest.mark.django_db
def test_kimi_k3_on_one_h200_has_no_capacity_and_no_rent_recommendation(catalog, viewer_api):
    """Issue 15: Kimi K3 on one H200 reported "158.5M tokens/month" and "Renting costs less"."""
    d = _deployment("k3-one", "kimi-k3", "h200-141gb", 1)
    sizing = d.sizing()
    assert not sizing.fits and sizing.deficit_bytes > 1000 * GIB  # ~1.5 TB of weights on a 141 GB GPU
    r = viewer_api.post(URL, {"deployment": "k3-one", "api_price": "kimi-k3-api", **VOLUME}, format="json").json()
    assert r["fits"] is False and r["memory_deficit_bytes_per_gpu"] == sizing.deficit_bytes
    assert r["memory_deficit_gib_per_gpu"] == pytest.approx(sizing.deficit_bytes / GIB)
    assert r["capacity_output_tokens_per_month"] == 0 and r["cheaper"] is None
    assert r["cost_per_mtok_output_rent"] is None and r["unit_economics"] is None
    assert r["verdict"].startswith("This layout does not fit") and "renting it is no option" in r["verdict"]
    assert r["monthly_rent_usd"] == "1800.00"  # the rent is still shown: one GPU always on at 2.50


@pytest.mark.django_db
def test_an_unregistered_layout_that_does_not_fit_gets_the_same_answer(catalog, viewer_api):
    body = {"gpus": 2, "sku": "h200-141gb", "model": "kimi-k3", "tp": 2, "api_price": "kimi-k3-api", **VOLUME}
    r = viewer_api.post(URL, body, format="json").json()
    assert r["fits"] is False and r["cheaper"] is None and r["capacity_output_tokens_per_month"] == 0
    assert r["memory_deficit_bytes_per_gpu"] > 0
    # The same layout on 16 B200s fits and is compared as usual (priced once the catalogue's B200 list
    # prices are in force: the cheapest, Hyperstack's 5.10 of 2026-08-26).
    body |= {"gpus": 16, "sku": "b200-192gb", "tp": 16, "on": "2026-10-01"}
    r = viewer_api.post(URL, body, format="json").json()
    assert r["fits"] is True and r["memory_deficit_bytes_per_gpu"] is None and r["cheaper"] in ("rent", "api")
    assert r["capacity_output_tokens_per_month"] > 0


def _workload() -> Workload:
    return Workload.objects.create(
        slug="chat", name="Chat", team="t", requests_per_day=100_000, mean_prompt_tokens=2_000,
        mean_output_tokens=300, p95_context_tokens=8_000, prefix_cache_hit_rate=0.5, peak_concurrency=64,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip


@pytest.mark.django_db
def test_the_page_preselects_an_api_price_of_the_deployments_model_or_says_they_differ(catalog, client, make_user):
    client.force_login(make_user("v", "viewer"))
    workload = _workload()
    _deployment("llama", "llama-3.1-70b", "h100-sxm-80gb", 4, replicas=2, kv_cache_dtype="fp8", workload=workload)
    ApiPrice.objects.filter(model__slug="llama-3.1-70b").delete()  # the catalogue's: Llama unpriced, as before
    page = client.get("/rent-vs-api/").content.decode()
    assert 'id="models-compared"' in page and "Different models" in page
    assert "No API price on record for Llama-3.1-70B-Instruct." in page
    ApiPrice.objects.create(
        slug="llama-api", provider="Host", model_name="llama-3.1-70b-instruct",
        model=ModelSpec.objects.get(slug="llama-3.1-70b"), input_cache_hit_usd_per_mtok="0.1",
        input_cache_miss_usd_per_mtok="0.6", output_usd_per_mtok="0.8", quoted_on="2026-07-01",
    )  # fmt: skip
    page = client.get("/rent-vs-api/").content.decode()
    assert 'id="models-compared"' not in page and 'value="llama-api" selected' in page


@pytest.mark.django_db
def test_the_page_shows_the_deficit_and_no_recommendation_for_a_layout_that_does_not_fit(catalog, client, make_user):
    client.force_login(make_user("v", "viewer"))
    _deployment("k3-one", "kimi-k3", "h200-141gb", 1)
    _workload()
    page = client.get("/rent-vs-api/?deployment=k3-one&api_price=kimi-k3-api&workload=chat").content.decode()
    assert 'id="does-not-fit"' in page and "GiB short" in page
    assert "none (does not fit)" in page and "no recommendation" in page
    assert "Renting is cheaper" not in page and "Renting costs less" not in page


@pytest.mark.django_db
def test_the_model_pages_what_if_button_lands_on_a_sized_answer(catalog, client, make_user):
    """Issue 15: the model page's "What-if" button landed on "sku: This field is required"."""
    import re
    from html import unescape

    client.force_login(make_user("v", "viewer"))
    page = client.get("/models/llama-3.1-70b/").content.decode()
    href = unescape(re.search(r'id="what-if-link" href="([^"]+)"', page).group(1))
    assert "sku=" in href and "gpus=" in href
    answer = client.get(href)
    body = answer.content.decode()
    assert answer.status_code == 200 and "This field is required" not in body and "has-error" not in body


@pytest.mark.django_db
def test_what_if_quotes_speed_at_the_concurrency_its_pool_admits(catalog):
    """Issue 15: what-if quoted speed and cost at 15 sequences per replica when only 8 fit (split pool)."""
    from planner.sizing import SizingRequest, size_layout, speed_of

    shape = {"model": "kimi-k3", "sku": "h200-141gb", "gpus": 16, "tp": 8, "dp": 2, "ep": 16}
    shape |= {"kv_cache_dtype": "fp8", "context_tokens": 131072}
    unified = size_layout(SizingRequest(**shape, pool="unified"))
    split = size_layout(SizingRequest(**shape, pool="split"))
    admitted = split.result.max_concurrent_sequences_per_replica
    assert 0 < admitted < unified.result.max_concurrent_sequences_per_replica
    assert speed_of(split).batch == admitted
    assert speed_of(unified).batch == unified.result.max_concurrent_sequences_per_replica


#: The catalogue's models with no API price on record (issue 26: no public price was found for them).
UNPRICED = {"kimi-linear-48b-a3b"}


@pytest.mark.django_db
def test_a_model_without_an_api_price_is_said_to_have_none(catalog, viewer_api, client, make_user):
    """Issue 26: a model with no API price on record is named as such, by the API and on the page, never
    silently priced on another model's API."""
    priced = set(ApiPrice.objects.exclude(model=None).values_list("model__slug", flat=True))
    assert set(ModelSpec.objects.values_list("slug", flat=True)) - priced == UNPRICED
    linear = ModelSpec.objects.get(slug="kimi-linear-48b-a3b")
    said = "No API price on record for Kimi-Linear-48B-A3B-Instruct."
    # Nothing to price the API side on: a 400 that names the model.
    body = {"gpus": 8, "sku": "h100-sxm-80gb", "model": linear.slug, **VOLUME}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 400 and r.json()["api_price"][0].startswith(said)
    # Priced on another model's API (picked): said first, then which models are compared.
    r = viewer_api.post(URL, {**body, "api_price": "kimi-k3-api"}, format="json").json()
    assert r["models"]["same"] is False and r["models"]["rented_api_priced"] is False
    assert r["models"]["note"].startswith(said) and "the API price is for Kimi K3" in r["models"]["note"]
    assert r["assumptions"][0] == r["models"]["note"]
    # Inline prices: said too.
    inline = {"input_cache_hit_usd_per_mtok": "0.1", "input_cache_miss_usd_per_mtok": "1", "output_usd_per_mtok": "2"}
    r = viewer_api.post(URL, {**body, **inline}, format="json").json()
    assert r["models"]["note"].startswith(said)
    # The page, on a deployment serving it: the caveat says so beside the API price it picked instead.
    client.force_login(make_user("v", "viewer"))
    _deployment("linear", linear.slug, "h100-sxm-80gb", 2, workload=_workload())
    page = client.get("/rent-vs-api/").content.decode()
    caveat = page.split('id="models-compared"')[1].split("</p>")[0]
    assert "Different models." in caveat and said in caveat


@pytest.mark.django_db
def test_a_priced_model_has_no_such_note(catalog, viewer_api):
    body = {"gpus": 8, "sku": "h100-sxm-80gb", "model": "llama-3.1-70b", "api_price": "kimi-k3-api", **VOLUME}
    r = viewer_api.post(URL, body, format="json").json()
    assert r["models"]["rented_api_priced"] is True and "No API price on record" not in r["models"]["note"]
    del body["api_price"]
    r = viewer_api.post(URL, body, format="json")  # no price given: the usual refusal, no word of the model
    assert r.status_code == 400 and "api_price" not in r.json()
