"""POST /api/v1/route/ and GET /api/v1/route/litellm/: the routing advisor over HTTP, errors as 400s,
a bounded number of queries, and no API key in the LiteLLM export."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from fleet.models import ApiPrice, Deployment, GpuQuote, Provider

URL = "/api/v1/route/"
LITELLM = "/api/v1/route/litellm/"
KEY = "sk-fleet-SECRET-4f9a2c"
CLASS = {
    "context_tokens": 8192,
    "prompt_tokens": 4000,
    "output_tokens": 300,
    "prefix_reuse_fraction": 0.8,
    "ttft_slo_ms": 2000,
    "tpot_slo_ms": 50,
    "model": "llama-3.1-70b",
}


def _deployment(cluster, model, slug, *, polled_s_ago=5, status="up", running=4.0, **extra):
    now = timezone.now()
    d = Deployment(
        slug=slug,
        cluster=cluster,
        model=model,
        tp=4,
        replicas=2,
        engine="vllm",
        base_url="http://127.0.0.1:8000",
        served_model_id="meta-llama/Llama-3.1-70B-Instruct",
        max_model_len=32768,
        last_status=status,
        last_polled=None if polled_s_ago is None else now - timedelta(seconds=polled_s_ago),
        last_metrics={"requests_running": running, "requests_waiting": 0.0, "kv_cache_usage": 0.2},
        **extra,
    )
    d.set_api_key(KEY)
    d.save()
    return d


@pytest.fixture
def fleet(cluster, llama70b):
    today = timezone.now().date()
    GpuQuote.objects.create(
        sku=cluster.sku, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=today
    )
    fresh = _deployment(cluster, llama70b, "llama-fresh")
    stale = _deployment(cluster, llama70b, "llama-stale", polled_s_ago=3600)
    down = _deployment(cluster, llama70b, "llama-down", status="down")
    api = ApiPrice.objects.create(
        slug="llama-api",
        provider="Hosted",
        model_name="llama-3.1-70b-instruct",
        model=llama70b,
        input_cache_hit_usd_per_mtok=Decimal("0.10"),
        input_cache_miss_usd_per_mtok=Decimal("0.90"),
        output_usd_per_mtok=Decimal("0.90"),
        context_window=131072,
        quoted_on=today - timedelta(days=1),
    )
    return {"fresh": fresh, "stale": stale, "down": down, "api": api}


@pytest.mark.django_db
def test_route_ranks_the_fresh_deployment_first_with_reasons(viewer_api, fleet):
    r = viewer_api.post(URL, CLASS, format="json")
    assert r.status_code == 200, r.json()
    body = r.json()
    order = [d["slug"] for d in body["destinations"]]
    assert body["best"] == "llama-fresh" == order[0]
    assert set(order) == {"llama-fresh", "llama-stale", "llama-down", "llama-api"}
    first = body["destinations"][0]
    assert first["eligible"] and first["meets_slo"] and first["cache_state"] == "warm"
    assert first["granularity_tokens"] == 16 and first["reusable_prefix_tokens"] == 3200
    assert first["ttft_ms"] > 0 and first["tpot_ms"] > 0 and first["usd_per_request"] > 0
    assert first["headroom_sequences"] >= 1
    by_slug = {d["slug"]: d for d in body["destinations"]}
    assert not by_slug["llama-stale"]["eligible"]
    assert any("Stale" in reason for reason in by_slug["llama-stale"]["reasons"])
    assert not by_slug["llama-down"]["eligible"]
    assert by_slug["llama-api"]["eligible"] and by_slug["llama-api"]["meets_slo"] is None
    # 3200 cached x 0.10 + 800 x 0.90 + 300 x 0.90 USD per million tokens
    assert by_slug["llama-api"]["usd_per_request"] == pytest.approx((3200 * 0.10 + 800 * 0.90 + 300 * 0.90) / 1e6)
    assert all(d["reasons"] for d in body["destinations"])
    assert [d["rank"] for d in body["destinations"]] == [1, 2, 3, 4]


@pytest.mark.django_db
def test_route_reads_the_fleet_in_a_bounded_number_of_queries(
    viewer_api, fleet, cluster, llama70b, django_assert_max_num_queries
):
    for i in range(10):
        _deployment(cluster, llama70b, f"llama-more-{i}")
    viewer_api.post(URL, CLASS, format="json")  # sessions, permissions cached on the user
    with django_assert_max_num_queries(12):
        r = viewer_api.post(URL, CLASS, format="json")
    assert r.status_code == 200
    assert len(r.json()["destinations"]) == 14


@pytest.mark.django_db
def test_route_without_model_ranks_every_destination(viewer_api, fleet):
    body = {k: v for k, v in CLASS.items() if k != "model"}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200 and len(r.json()["destinations"]) == 4


@pytest.mark.django_db
def test_a_context_beyond_every_window_leaves_nothing_eligible(viewer_api, fleet):
    body = {**CLASS, "context_tokens": 200_000, "prompt_tokens": 150_000}
    r = viewer_api.post(URL, body, format="json").json()
    assert r["best"] is None
    assert not any(d["eligible"] for d in r["destinations"])
    assert any("Context window" in reason for d in r["destinations"] for reason in d["reasons"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"prompt_tokens": 8000, "output_tokens": 300}, "context_tokens"),
        ({"prompt_tokens": 0}, "prompt_tokens"),
        ({"context_tokens": -1}, "context_tokens"),
        ({"context_tokens": "many"}, "context_tokens"),
        ({"context_tokens": 10**12}, "context_tokens"),
        ({"prefix_reuse_fraction": 1.5}, "prefix_reuse_fraction"),
        ({"ttft_slo_ms": 0}, "ttft_slo_ms"),
        ({"tpot_slo_ms": "fast"}, "tpot_slo_ms"),
        ({"model": "no-such-model"}, "model"),
        ({"modality": "smell"}, "modality"),
        ({"model": "bad\u0000slug"}, "model"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(viewer_api, fleet, change, field):
    r = viewer_api.post(URL, {**CLASS, **change}, format="json")
    assert r.status_code == 400, r.content
    assert field in r.content.decode()


@pytest.mark.django_db
def test_missing_fields_are_400(viewer_api, fleet):
    r = viewer_api.post(URL, {}, format="json")
    assert r.status_code == 400
    assert {"context_tokens", "prompt_tokens", "output_tokens"} <= set(r.content.decode().replace('"', " ").split())


@pytest.mark.django_db
def test_anonymous_is_refused(fleet):
    assert APIClient().post(URL, CLASS, format="json").status_code in (401, 403)
    assert APIClient().get(LITELLM).status_code in (401, 403)


@pytest.mark.django_db
def test_litellm_export_shape_and_no_key(viewer_api, fleet):
    r = viewer_api.get(LITELLM)
    assert r.status_code == 200
    assert KEY not in r.content.decode() and "api_key" not in r.content.decode()
    entries = r.json()["model_list"]
    assert set(r.json()) == {"model_list"}
    ids = [e["model_info"]["id"] for e in entries]
    assert ids[:3] == [
        "fleetcap-deployment-llama-down",
        "fleetcap-deployment-llama-fresh",
        "fleetcap-deployment-llama-stale",
    ]
    deployment = entries[1]
    assert deployment["model_name"] == "llama-3.1-70b"
    params = deployment["litellm_params"]
    assert params["model"] == "openai/meta-llama/Llama-3.1-70B-Instruct"
    assert params["api_base"] == "http://127.0.0.1:8000/v1"
    assert params["rpm"] >= 1 and params["tpm"] == params["rpm"] * (2048 + 256)
    assert params["input_cost_per_token"] == 0.0 and params["output_cost_per_token"] > 0
    api = entries[-1]
    assert api["model_name"] == "llama-3.1-70b"
    assert api["litellm_params"] == {
        "model": "openai/llama-3.1-70b-instruct",
        "input_cost_per_token": pytest.approx(0.9e-6),
        "cache_read_input_token_cost": pytest.approx(0.1e-6),
        "output_cost_per_token": pytest.approx(0.9e-6),
    }
    assert api["model_info"]["max_input_tokens"] == 131072


@pytest.mark.django_db
def test_litellm_export_strips_credentials_from_the_base_url(viewer_api, fleet):
    Deployment.objects.filter(slug="llama-fresh").update(base_url="http://user:pw-secret@127.0.0.1:8000/?key=abc")
    text = viewer_api.get(LITELLM).content.decode()
    assert "pw-secret" not in text and "key=abc" not in text


@pytest.mark.django_db
def test_the_fleet_snapshot_is_reused_until_a_record_changes(fleet, django_assert_num_queries):
    from planner.engine import RequestClass
    from planner.routing import route

    request = RequestClass(**CLASS)
    assert route(request).result.best.slug == "llama-fresh"
    with django_assert_num_queries(1):  # fleet_version: nothing changed, the snapshot is reused
        again = route(request)
    assert again.result.best.slug == "llama-fresh"
    # A poll lands (the poller's own UPDATE writes last_polled): the next call reads the fleet again.
    Deployment.objects.filter(slug="llama-fresh").update(last_status="down", last_polled=timezone.now())
    with django_assert_num_queries(6):  # the version, deployments, corrections, quotes, API prices, models
        moved = route(request)
    assert moved.result.best.slug == "llama-api"
    # Ages are recomputed for each call's now, so a snapshot never hides a poll going stale.
    later = route(request, now=timezone.now() + timedelta(minutes=5))
    assert all(not d.eligible for d in later.result.destinations if d.kind == "deployment")


@pytest.mark.django_db
def test_litellm_export_gives_no_limits_or_cost_to_a_layout_that_does_not_fit(viewer_api, fleet, cluster, kimi_k3):
    Deployment.objects.create(slug="k3-one-gpu", cluster=cluster, model=kimi_k3, tp=1, base_url="http://127.0.0.1:9")
    entries = {e["model_info"]["fleetcap_slug"]: e for e in viewer_api.get(LITELLM).json()["model_list"]}
    params = entries["k3-one-gpu"]["litellm_params"]
    assert not {"rpm", "tpm", "output_cost_per_token"} & set(params)
    assert entries["llama-fresh"]["litellm_params"]["rpm"] >= 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "raw",
    [
        "[]",
        "null",
        '"route me"',
        '{"context_tokens": true, "prompt_tokens": 1, "output_tokens": 1}',
        '{"context_tokens": 10, "prompt_tokens": 1, "output_tokens": 1, "prefix_reuse_fraction": NaN}',
        '{"context_tokens": 10, "prompt_tokens": 1, "output_tokens": 1, "ttft_slo_ms": 1e400}',
        '{"context_tokens": 10, "prompt_tokens": 1, "output_tokens": 1, "model": ["a"]}',
        '{"context_tokens": 10, "prompt_tokens": 1, "output_tokens": 1, "modality": {"a": 1}}',
        "{not json",
    ],
)
def test_malformed_bodies_are_400_never_500(viewer_api, fleet, raw):
    r = viewer_api.generic("POST", URL, raw, content_type="application/json")
    assert r.status_code == 400, (raw, r.content)


@pytest.mark.django_db
def test_modalities_are_validated_and_route_by_modality(platform_api, viewer_api, fleet, llama70b):
    url = "/api/v1/models/llama-3.1-70b/"
    assert platform_api.patch(url, {"modalities": "text,smell"}, format="json").status_code == 400
    assert platform_api.patch(url, {"modalities": "text, image"}, format="json").status_code == 200
    llama70b.refresh_from_db()
    assert llama70b.modality_list == ("text", "image")
    body = viewer_api.post(URL, {**CLASS, "modality": "image"}, format="json").json()
    assert body["best"] == "llama-fresh"  # the API price is linked to the model: it takes images too
    assert viewer_api.post(URL, {**CLASS, "modality": "audio"}, format="json").json()["best"] is None
