"""The pages that exist today: login, the overview, health, and the offline API docs."""

from __future__ import annotations

import re

import pytest

from fleet.models import Provider


@pytest.mark.django_db
def test_login_page_is_served(client):
    r = client.get("/accounts/login/")
    assert r.status_code == 200 and b'name="password"' in r.content


@pytest.mark.django_db
def test_pages_require_login(client):
    r = client.get("/")
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_login_then_overview(client, make_user, cluster):
    make_user("alice", "viewer")
    r = client.post("/accounts/login/", {"username": "alice", "password": "pw-for-tests-only"})
    assert r.status_code == 302
    page = client.get("/").content.decode()
    assert "H100 pool" in page and "alice" in page and "viewer" in page


@pytest.mark.django_db
def test_overview_query_count_does_not_grow_with_rows(client, make_user, sku, django_assert_max_num_queries):
    from fleet.models import Cluster

    client.force_login(make_user("v", "viewer"))
    Cluster.objects.create(slug="c0", name="C0", sku=sku, nodes=1, provider=Provider.objects.ensure("p"), team="t")
    # 16 when the table is rendered (not served from fleet.page_cache): its records' version is one more.
    with django_assert_max_num_queries(16) as few:
        client.get("/")
    Cluster.objects.bulk_create(
        [
            Cluster(
                slug=f"c{i}",
                name=f"C{i}",
                sku=sku,
                nodes=1,
                gpus_per_node=8,
                provider=Provider.objects.ensure("p"),
                team="t",
            )
            for i in range(1, 40)
        ]
    )
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get("/")


@pytest.mark.django_db
def test_api_docs_and_schema_are_public_by_default(client):
    """Issue 27: a script starts from the contract; it holds shapes and rules, never a record."""
    assert client.get("/api/v1/docs/").status_code == 200
    r = client.get("/api/v1/schema/")
    assert r.status_code == 200 and b"openapi: 3" in r.content[:40]
    assert client.get("/api/v1/schema/?format=json").json()["info"]["title"] == "fleetcap API"


@pytest.mark.django_db
def test_api_docs_and_schema_need_a_token_or_login_when_not_public(client, settings, make_user):
    settings.API_SCHEMA_PUBLIC = False
    assert client.get("/api/v1/docs/").status_code in (401, 403)
    assert client.get("/api/v1/schema/").status_code in (401, 403)
    from api_keys import api_key

    key = api_key(make_user("v", "viewer"), scope="read")
    for scheme in ("Token", "Bearer"):
        assert client.get("/api/v1/schema/", HTTP_AUTHORIZATION=f"{scheme} {key}").status_code == 200
    client.force_login(make_user("w", "viewer"))
    assert client.get("/api/v1/docs/").status_code == 200


@pytest.mark.django_db
def test_schema_documents_one_token_scheme_that_swagger_sends(client):
    schemes = client.get("/api/v1/schema/?format=json").json()["components"]["securitySchemes"]
    assert schemes["tokenAuth"]["scheme"] == "bearer" and "Token <key>" in schemes["tokenAuth"]["description"]
    assert "/api/v1/schema/" not in client.get("/api/v1/schema/?format=json").json()["paths"]


@pytest.mark.django_db
def test_swagger_ui_is_served_offline(client, make_user):
    client.force_login(make_user("v", "viewer"))
    page = client.get("/api/v1/docs/").content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert any("swagger-ui" in a for a in assets)
    assert all(a.startswith("/") for a in assets), assets  # nothing from a CDN
    for asset in assets:
        if asset.startswith("/static/"):
            assert client.get(asset).status_code == 200, asset


@pytest.mark.django_db
def test_healthz_reports_database_and_workers(client):
    from django.utils import timezone

    from fleet.models import WorkerHeartbeat

    health = client.get("/healthz").json()
    assert {k: health[k] for k in ("status", "database", "workers_alive", "polling")} == {
        "status": "degraded", "database": "ok", "workers_alive": 0, "polling": "never"
    }  # fmt: skip
    WorkerHeartbeat.objects.create(worker="w1", last_seen=timezone.now())
    assert client.get("/healthz").json()["workers_alive"] == 1


@pytest.mark.django_db
def test_healthz_answers_a_probe_by_ip_whatever_the_allowed_hosts(client, settings):
    """Issue 29: behind a proxy ALLOWED_HOSTS names the public host; a load balancer probing by IP got a
    400 from /healthz. Only /healthz is exempt: every other path still refuses an unknown host."""
    settings.ALLOWED_HOSTS = ["fleet.example.com"]
    probe = client.get("/healthz", HTTP_HOST="10.0.0.5:8000")
    assert probe.status_code == 200 and probe.json()["database"] == "ok" and probe.json()["workers_alive"] == 0
    assert client.head("/healthz", HTTP_HOST="10.0.0.5").status_code == 200
    assert client.get("/", HTTP_HOST="10.0.0.5").status_code == 400
    assert client.get("/healthz/x", HTTP_HOST="10.0.0.5").status_code == 400
    assert client.post("/healthz", HTTP_HOST="10.0.0.5").status_code == 400  # a probe reads, never writes
    assert client.get("/healthz", HTTP_HOST="fleet.example.com").status_code == 200


@pytest.mark.django_db
def test_htmx_is_vendored(client, make_user):
    client.force_login(make_user("v", "viewer"))
    page = client.get("/").content.decode()
    src = re.search(r'<script[^>]+src="([^"]*htmx[^"]*)"', page).group(1)
    assert src.startswith("/static/")
    assert client.get(src).status_code == 200


@pytest.mark.django_db
def test_a_refused_page_is_shown_inside_the_layout_and_forms_have_readable_labels(client, make_user):
    """Issue 15: a bare 403 page, and raw field labels ("Kv cache dtype", "Api key") on the forms."""
    client.force_login(make_user("nobody-role"))
    r = client.get("/")
    assert r.status_code == 403
    page = r.content.decode()
    assert 'id="forbidden"' in page and 'class="topbar"' in page and "Not allowed" in page
    client.force_login(make_user("plat", "platform"))
    form = client.get("/deployments/new/").content.decode()
    for label in ("KV cache dtype", "API key", "Base URL", "GPU memory utilization", "Poll interval (s)"):
        assert label in form
    assert "Kv cache dtype" not in form and "Api key" not in form
