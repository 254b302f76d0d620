"""Registration checks (fleet.registration): the endpoint guard and the sizing engine run where a
deployment is registered or edited, through all three front doors (API, page form, admin), and
never from Deployment.full_clean()."""

from __future__ import annotations

import pytest

from fleet.models import Deployment
from planner.engine import EngineInputError

METADATA = "http://169.254.169.254/"


def engine_refuses(self, *args, **kwargs):
    raise EngineInputError({"tp": ["The engine refuses this tp."], "context_tokens": ["Too long for the engine."]})


@pytest.fixture(autouse=True)
def serving_network(settings):
    """The operator lists the serving network (the default is loopback only)."""
    settings.POLL_ALLOWED_NETWORKS = ["127.0.0.0/8", "10.0.0.0/8"]


@pytest.fixture
def form_data(cluster, llama70b) -> dict:
    return {
        "slug": "reg",
        "cluster": cluster.slug,
        "model": llama70b.pk,
        "replicas": 1,
        "tp": 4,
        "pp": 1,
        "dp": 1,
        "ep": 1,
        "engine": "vllm",
        "base_url": "http://10.1.2.3:8000",
        "served_model_id": "meta-llama/Llama-3.1-70B-Instruct",
        "kv_cache_dtype": "bf16",
        "gpu_memory_utilization": 0.9,
        "poll_interval_s": 15,
        "enabled": "on",
    }


@pytest.fixture
def api_body(cluster, llama70b) -> dict:
    return {
        "slug": "reg",
        "cluster": cluster.slug,
        "model": llama70b.slug,
        "tp": 4,
        "base_url": "http://10.1.2.3:8000",
        "served_model_id": "meta-llama/Llama-3.1-70B-Instruct",
    }


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("root", "admin", is_staff=True, is_superuser=True))
    return client


@pytest.mark.django_db
def test_full_clean_resolves_nothing_and_runs_no_engine(cluster, llama70b, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("full_clean() must not reach the network")

    monkeypatch.setattr("fleet.registration.check_url", no_network)
    monkeypatch.setattr(Deployment, "sizing", engine_refuses)
    d = Deployment(slug="plain", cluster=cluster, model=llama70b, tp=4, base_url="http://no-such-host.invalid:8000")
    d.full_clean()  # the layout rules only


@pytest.mark.django_db
def test_the_api_refuses_an_unreachable_address_and_what_the_engine_refuses(platform_api, api_body, monkeypatch):
    r = platform_api.post("/api/v1/deployments/", {**api_body, "base_url": METADATA}, format="json")
    assert r.status_code == 400 and "may not reach" in r.json()["base_url"][0], r.json()
    monkeypatch.setattr(Deployment, "sizing", engine_refuses)
    r = platform_api.post("/api/v1/deployments/", api_body, format="json")
    assert r.status_code == 400
    assert r.json() == {
        "detail": "tp: The engine refuses this tp.",
        "code": "invalid",
        "tp": ["The engine refuses this tp."],
        "max_model_len": ["Too long for the engine."],
    }
    assert not Deployment.objects.exists()


@pytest.mark.django_db
def test_the_api_reports_layout_and_address_errors_together(platform_api, api_body):
    r = platform_api.post("/api/v1/deployments/", {**api_body, "tp": 3, "base_url": METADATA}, format="json")
    assert r.status_code == 400 and {"tp", "base_url"} <= set(r.json()), r.json()


@pytest.mark.django_db
def test_an_api_edit_is_checked_too(platform_api, deployment):
    r = platform_api.patch(f"/api/v1/deployments/{deployment.slug}/", {"base_url": METADATA}, format="json")
    assert r.status_code == 400 and "base_url" in r.json()
    assert Deployment.objects.get(pk=deployment.pk).base_url == "http://127.0.0.1:30000"


@pytest.mark.django_db
def test_the_page_form_shows_both_checks_beside_the_fields(client, make_user, form_data, monkeypatch):
    client.force_login(make_user("p", "platform"))
    page = client.post("/deployments/new/", {**form_data, "base_url": METADATA}).content.decode()
    assert "The poller may not reach this address" in page
    monkeypatch.setattr(Deployment, "sizing", engine_refuses)
    page = client.post("/deployments/new/", form_data).content.decode()
    assert "The engine refuses this tp." in page and "Too long for the engine." in page
    assert not Deployment.objects.exists()


@pytest.mark.django_db
def test_the_admin_form_runs_the_same_checks(admin_client, form_data, monkeypatch):
    r = admin_client.post("/admin/fleet/deployment/add/", {**form_data, "base_url": METADATA})
    assert r.status_code == 200 and "The poller may not reach this address" in r.content.decode()
    monkeypatch.setattr(Deployment, "sizing", engine_refuses)
    r = admin_client.post("/admin/fleet/deployment/add/", form_data)
    assert r.status_code == 200 and "The engine refuses this tp." in r.content.decode()
    assert not Deployment.objects.exists()
    monkeypatch.undo()
    r = admin_client.post("/admin/fleet/deployment/add/", form_data)
    assert r.status_code == 302 and Deployment.objects.filter(slug="reg").exists()


@pytest.mark.django_db
def test_an_endpoint_needs_the_model_id_it_serves(platform_api, api_body, monkeypatch):
    """Issue 15: a blank served model id let a K3 deployment poll a Llama endpoint and show "up"."""
    monkeypatch.setattr("fleet.registration.check_endpoint", lambda url: None)
    r = platform_api.post("/api/v1/deployments/", {**api_body, "served_model_id": ""}, format="json")
    assert r.status_code == 400 and r.json()["served_model_id"][0].startswith("Required with an endpoint")
    no_endpoint = {**api_body, "base_url": "", "served_model_id": ""}
    assert platform_api.post("/api/v1/deployments/", no_endpoint, format="json").status_code == 201
