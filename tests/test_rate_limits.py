"""Per-user limits on the expensive requests (issue 29, fleet/rate_limits.py): calibration, model
import, plans, prefix-cache with a trace. Over the limit the API answers 429 with Retry-After and the
one error shape; a page answers an HTML 429 with the form as it was sent and the limit above it (for
HTMX the partial the page swaps in), never a 500. The API and the page forms draw on one allowance
per user. (tests/conftest.py's ``fresh_cache`` clears the counts before each test.)"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from fleet import rate_limits
from fleet.catalog.reference import model_record, sku_record
from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider
from planner.models import Calibration, Plan

FIXTURES = Path(__file__).resolve().parent / "fixtures"
QWEN3_NEXT = (FIXTURES / "startup_logs" / "vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log").read_text(encoding="utf-8")
QWEN3_8B = json.loads((FIXTURES / "hf-configs" / "Qwen--Qwen3-8B_config.json").read_text())
TRACE = "request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens\n" + "".join(
    f"r{i},{i},1500,sys,1000\n" for i in range(3)
)
PREFIX_FORM = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "engine": "vllm", "tp": "2", "retention": "dense"}


@pytest.fixture
def limit(settings):
    """``limit("calibration", "2/min")``: that scope's rate for this test."""

    def set_rate(scope: str, rate: str) -> None:
        settings.EXPENSIVE_REQUEST_RATES = {**settings.EXPENSIVE_REQUEST_RATES, scope: rate}

    return set_rate


@pytest.fixture
def next_deployment(db) -> Deployment:
    record = model_record("qwen3-next-80b-a3b")
    model = ModelSpec.objects.create(**{**record, "expert_weight_format": record.get("expert_weight_format") or ""})
    sku = HardwareSku.objects.create(**sku_record("h200-141gb"))
    cluster = Cluster.objects.create(
        slug="h200", name="H200", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="ml"
    )
    return Deployment.objects.create(slug="next", cluster=cluster, model=model, tp=2, engine="vllm")


CALIBRATIONS = "calibrations from a startup log"


def assert_api_429(response, what: str = CALIBRATIONS) -> None:
    assert response.status_code == 429, (response.status_code, response.content[:300])
    body = response.json()
    assert body["code"] == "throttled" and set(body) == {"detail", "code"}
    assert body["detail"].startswith(f"Too many {what}: at most 2 a minute per user. Expected available in ")
    assert 1 <= int(response["Retry-After"]) <= 60


def assert_page_429(response) -> str:
    assert response.status_code == 429, (response.status_code, response.content[:300])
    assert 1 <= int(response["Retry-After"]) <= 60
    html = response.content.decode()
    assert "at most 2 a minute per user. Try again in" in html
    return html


# --- the rule -----------------------------------------------------------------------------------------


def test_rates_read_as_drf_reads_them():
    assert rate_limits.parse_rate("10/min") == rate_limits.Rate(10, 60, "minute")
    assert rate_limits.parse_rate(" 3/Hour ") == rate_limits.Rate(3, 3600, "hour")
    assert rate_limits.parse_rate("1/s").seconds == 1 and rate_limits.parse_rate("5/day").seconds == 86400
    assert rate_limits.parse_rate("off") is None
    for bad in ("10", "0/min", "x/min", "10/week", "-1/min", ""):
        with pytest.raises(ValueError):
            rate_limits.parse_rate(bad)


def test_a_sliding_window_per_user_and_scope(make_user, limit):
    limit("plan", "2/min")
    ada, bob = make_user("ada"), make_user("bob")
    assert rate_limits.take("plan", ada, now=1000.0) is None
    assert rate_limits.take("plan", ada, now=1010.0) is None
    refusal = rate_limits.take("plan", ada, now=1030.0)
    # The oldest request (t=1000) leaves the window at 1060: 30 s from now.
    assert refusal is not None and refusal.retry_after_s == 30
    assert refusal.message == "Too many plans started: at most 2 a minute per user. Try again in 30 seconds."
    assert rate_limits.take("plan", bob, now=1030.0) is None  # another user's own allowance
    assert rate_limits.take("calibration", ada, now=1030.0) is None  # another scope
    assert rate_limits.take("plan", ada, now=1061.0) is None  # t=1000 has left the window
    assert rate_limits.take("plan", ada, now=1062.0).retry_after_s == 8  # t=1010 leaves at 1070


def test_off_counts_nothing(make_user, limit):
    limit("calibration", "off")
    ada = make_user("ada")
    assert all(rate_limits.take("calibration", ada) is None for _ in range(50))
    assert cache.get(f"fleetcap:limit:calibration:{ada.pk}") is None


def test_a_bad_rate_fails_the_system_check(limit):
    limit("model_import", "lots")
    (problem,) = rate_limits.check_rates()
    assert problem.id == "fleet.E029" and "FLEETCAP_THROTTLE_MODEL_IMPORT" in problem.hint
    with pytest.raises(ImproperlyConfigured):
        rate_limits.rate_of("model_import")


def test_the_defaults_are_stated(settings):
    assert settings.EXPENSIVE_REQUEST_RATES == {
        "calibration": "10/min", "model_import": "10/min", "plan": "10/min", "prefix_cache": "30/min",
    }  # fmt: skip


# --- the API ------------------------------------------------------------------------------------------


def test_api_calibrations_past_the_limit(platform_api, next_deployment, limit):
    limit("calibration", "2/min")
    url = "/api/v1/calibrations/"
    assert platform_api.post(url, {"log": QWEN3_NEXT, "deployment": "next"}, format="json").status_code == 201
    assert platform_api.post(url, {"log": "not a log", "deployment": "next"}, format="json").status_code == 400
    assert_api_429(
        platform_api.post(url, {"log": QWEN3_NEXT, "deployment": "next"}, format="json"),
        "calibrations from a startup log",
    )
    assert Calibration.objects.count() == 1
    # Reading is not limited.
    assert platform_api.get(url).status_code == 200 and platform_api.get(url).status_code == 200


def test_api_model_import_past_the_limit(platform_api, limit):
    limit("model_import", "2/min")
    url = "/api/v1/models/import/"
    for k in range(2):
        body = {"slug": f"q8-{k}", "name": f"Q8 {k}", "config": QWEN3_8B}
        assert platform_api.post(url, body, format="json").status_code == 201
    assert_api_429(
        platform_api.post(url, {"slug": "q8-2", "name": "Q8", "config": QWEN3_8B}, format="json"),
        "model imports from config.json",
    )
    # The rest of the models API is not limited by it.
    assert platform_api.post("/api/v1/models/", {}, format="json").status_code == 400


def test_api_plans_past_the_limit_and_cancel_is_not_counted(platform_api, catalog_and_agent, limit):
    limit("plan", "2/min")
    body = {"model": "kimi-k3", "workload": "agent", "skus": ["h200-141gb"], "max_nodes": 1}
    plan_id = platform_api.post("/api/v1/plans/", body, format="json").json()["id"]
    for _ in range(3):
        platform_api.post(f"/api/v1/plans/{plan_id}/cancel/")
    assert platform_api.post("/api/v1/plans/", body, format="json").status_code == 202
    assert_api_429(platform_api.post("/api/v1/plans/", body, format="json"), "plans started")
    assert Plan.objects.count() == 2


def test_api_prefix_cache_counts_only_requests_with_a_trace(viewer_api, limit):
    call_command("load_catalog", stdout=StringIO())
    limit("prefix_cache", "2/min")
    url = "/api/v1/prefix-cache/"
    plain = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "tp": 2}
    assert all(viewer_api.post(url, plain, format="json").status_code == 200 for _ in range(4))

    def with_trace():
        trace = SimpleUploadedFile("t.csv", TRACE.encode(), content_type="text/csv")
        return viewer_api.post(url, {**plain, "trace": trace}, format="multipart")

    assert with_trace().status_code == 200 and with_trace().status_code == 200
    assert_api_429(with_trace(), "prefix-cache analyses of a request trace")
    assert viewer_api.post(url, plain, format="json").status_code == 200


# --- the pages ----------------------------------------------------------------------------------------


def test_page_calibration_past_the_limit_keeps_the_log(client, make_user, next_deployment, limit):
    limit("calibration", "2/min")
    client.force_login(make_user("p", "platform"))
    url = "/deployments/next/calibrate/"
    assert client.post(url, {"log": QWEN3_NEXT}).status_code == 302
    assert client.post(url, {"log": QWEN3_NEXT}, HTTP_HX_REQUEST="true").status_code == 200
    log = "INFO GPU KV cache size: 16 tokens <kept> as typed\n"
    # HTMX: the calibration partial (swapped in, base.html's htmx-config), the log as typed, the limit.
    html = assert_page_429(client.post(url, {"log": log, "engine_version": "0.9.9"}, HTTP_HX_REQUEST="true"))
    assert html.lstrip().startswith('<section class="card" id="calibration">') and "<h1>" not in html
    assert "INFO GPU KV cache size: 16 tokens &lt;kept&gt; as typed" in html and 'value="0.9.9"' in html
    # Without HTMX: the whole deployment page, the same.
    html = assert_page_429(client.post(url, {"log": log}))
    assert "<h1>" in html and "&lt;kept&gt; as typed" in html
    assert Calibration.objects.count() == 2


def test_page_and_api_share_one_allowance(client, make_user, next_deployment, limit):
    limit("calibration", "2/min")
    from rest_framework.test import APIClient

    user = make_user("p", "platform")
    client.force_login(user)
    api = APIClient()
    api.force_authenticate(user)
    assert client.post("/deployments/next/calibrate/", {"log": QWEN3_NEXT}).status_code == 302
    assert (
        api.post("/api/v1/calibrations/", {"log": QWEN3_NEXT, "deployment": "next"}, format="json").status_code == 201
    )
    assert_page_429(client.post("/deployments/next/calibrate/", {"log": QWEN3_NEXT}))
    assert_api_429(
        api.post("/api/v1/calibrations/", {"log": QWEN3_NEXT, "deployment": "next"}, format="json"),
        "calibrations from a startup log",
    )


def test_page_model_import_past_the_limit_keeps_the_config(client, make_user, limit):
    limit("model_import", "2/min")
    client.force_login(make_user("p", "platform"))
    text = json.dumps(QWEN3_8B)
    for k in range(2):
        assert (
            client.post("/models/import/", {"config_text": text, "name": f"Q{k}", "slug": f"q-{k}"}).status_code == 302
        )
    html = assert_page_429(client.post("/models/import/", {"config_text": text, "name": "Kept name", "slug": "q-2"}))
    assert 'value="Kept name"' in html and "num_key_value_heads" in html
    assert not ModelSpec.objects.filter(slug="q-2").exists()


def test_page_plan_start_past_the_limit_keeps_the_choices(client, make_user, catalog_and_agent, limit):
    limit("plan", "2/min")
    client.force_login(make_user("p", "platform"))
    form = {"model": "kimi-k3", "workload": "agent", "skus": ["h200-141gb"], "max_nodes": "3"}
    assert client.post("/plans/start/", form).status_code == 302
    assert client.post("/plans/start/", form).status_code == 302
    html = assert_page_429(client.post("/plans/start/", form))
    assert 'name="max_nodes" value="3"' in html
    assert Plan.objects.count() == 2


def test_page_prefix_cache_counts_only_a_users_trace(client, make_user, limit):
    call_command("load_catalog", stdout=StringIO())
    limit("prefix_cache", "2/min")
    client.force_login(make_user("v", "viewer"))
    assert all(client.post("/prefix-cache/", PREFIX_FORM, HTTP_HX_REQUEST="true").status_code == 200 for _ in range(3))
    body = {**PREFIX_FORM, "trace_text": TRACE}
    assert client.post("/prefix-cache/", body, HTTP_HX_REQUEST="true").status_code == 200
    upload = SimpleUploadedFile("t.csv", TRACE.encode(), content_type="text/csv")
    assert (
        client.post("/prefix-cache/", {**PREFIX_FORM, "trace_file": upload}, HTTP_HX_REQUEST="true").status_code == 200
    )
    html = assert_page_429(client.post("/prefix-cache/", body, HTTP_HX_REQUEST="true"))
    assert 'id="prefix-result"' in html and "<h1>" not in html
    html = assert_page_429(client.post("/prefix-cache/", body))
    assert "r2,2,1500,sys,1000" in html  # the trace as pasted, back in its textarea
    assert client.get("/prefix-cache/").status_code == 200  # the example is not limited
