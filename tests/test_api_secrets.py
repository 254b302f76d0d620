"""The endpoint API key is write-only: stored encrypted, never echoed by the API, admin or pages."""

from __future__ import annotations

import json

import pytest

from fleet.models import Deployment

SECRET = "sk-secret-do-not-leak-0123456789"


@pytest.mark.django_db
def test_key_is_stored_encrypted_and_readable_by_the_poller(deployment):
    row = Deployment.objects.get(pk=deployment.pk)
    assert SECRET not in row.api_key_encrypted
    assert row.decrypted_api_key() == SECRET


@pytest.mark.django_db
def test_key_never_returned_by_the_api(viewer_api, platform_api, deployment):
    for api in (viewer_api, platform_api):
        for url in ("/api/v1/deployments/", f"/api/v1/deployments/{deployment.slug}/"):
            body = api.get(url).content.decode()
            assert SECRET not in body and deployment.api_key_encrypted not in body
            assert 'api_key"' not in body.replace("has_api_key", "")
    detail = viewer_api.get(f"/api/v1/deployments/{deployment.slug}/").json()
    assert detail["has_api_key"] is True


@pytest.mark.django_db
def test_key_written_through_the_api_is_not_echoed(platform_api, cluster, kimi_k3):
    body = {
        "slug": "d2",
        "cluster": cluster.slug,
        "model": kimi_k3.slug,
        "tp": 8,
        "dp": 4,
        "ep": 32,
        "max_model_len": 131072,  # a layout that fits (32 H100s, 128k context)
        "api_key": "sk-new-key-xyz",
    }
    r = platform_api.post("/api/v1/deployments/", body, format="json")
    assert r.status_code == 201
    assert "sk-new-key-xyz" not in r.content.decode() and r.json()["has_api_key"] is True
    assert Deployment.objects.get(slug="d2").decrypted_api_key() == "sk-new-key-xyz"
    # Omitting the key keeps it; an empty string clears it.
    platform_api.patch("/api/v1/deployments/d2/", {"enabled": False}, format="json")
    assert Deployment.objects.get(slug="d2").decrypted_api_key() == "sk-new-key-xyz"
    r = platform_api.patch("/api/v1/deployments/d2/", {"api_key": ""}, format="json")
    assert r.json()["has_api_key"] is False and Deployment.objects.get(slug="d2").decrypted_api_key() == ""


@pytest.mark.django_db
def test_key_never_rendered_by_the_admin(client, make_user, deployment):
    client.force_login(make_user("root", "admin", is_staff=True, is_superuser=True))
    page = client.get(f"/admin/fleet/deployment/{deployment.pk}/change/").content.decode()
    assert SECRET not in page and deployment.api_key_encrypted not in page
    assert 'type="password"' in page


@pytest.mark.django_db
def test_admin_blank_key_keeps_and_clear_removes(client, make_user, deployment):
    client.force_login(make_user("root", "admin", is_staff=True, is_superuser=True))
    form = {
        "slug": deployment.slug,
        "cluster": deployment.cluster.slug,  # the page form's picker takes the slug (fleet.pickers)
        "model": deployment.model_id,
        "replicas": 1,
        "tp": 8,
        "pp": 1,
        "dp": 4,
        "ep": 32,
        "engine": "sglang",
        "max_model_len": 131072,
        "base_url": deployment.base_url,
        "served_model_id": deployment.served_model_id,
        "kv_cache_dtype": "bf16",
        "gpu_memory_utilization": 0.9,
        "poll_interval_s": 15,
        "enabled": "on",
        "api_key": "",
    }
    url = f"/admin/fleet/deployment/{deployment.pk}/change/"
    assert client.post(url, form).status_code == 302
    assert Deployment.objects.get(pk=deployment.pk).decrypted_api_key() == SECRET
    assert client.post(url, {**form, "clear_api_key": "on"}).status_code == 302
    assert Deployment.objects.get(pk=deployment.pk).decrypted_api_key() == ""


@pytest.mark.django_db
def test_schema_marks_the_key_write_only(viewer_api):
    schema = json.loads(viewer_api.get("/api/v1/schema/?format=json").content)
    read = schema["components"]["schemas"]["Deployment"]["properties"]
    write = schema["components"]["schemas"]["DeploymentRequest"]["properties"]
    assert "api_key" not in read and "api_key" in write
