"""The poll guard's loopback ports (issue 29): by default the poller may not reach this installation's
own services on loopback (its database, broker, cache and web server, and PostgreSQL's and Redis's
default ports), at registration (API and page form: a 400 naming ``base_url``) and at poll time;
every other loopback port (``make run``'s demo on 8100, the tests' fake engines) stays reachable."""

from __future__ import annotations

import logging

import pytest

from fleet.egress import bind_port, database_port, loopback_refused_ports, url_port
from fleet.models import Deployment, EndpointPoll
from fleet.poller import poll_deployment, run_poll_cycle
from fleet.polling.client import PUBLIC_REASONS, PollStatus
from fleet.polling.fakeserver import FakeEngineServer

REFUSED_BY_DEFAULT = ["http://127.0.0.1:5432", "http://127.0.0.1:6379/", "http://localhost:6379", "http://[::1]:5432",
                      "http://127.0.0.1:8000"]  # fmt: skip


@pytest.fixture
def api_body(cluster, llama70b) -> dict:
    return {"slug": "infra", "cluster": cluster.slug, "model": llama70b.slug, "tp": 4, "served_model_id": "m"}


@pytest.fixture
def form_data(cluster, llama70b) -> dict:
    return {"slug": "infra", "cluster": cluster.slug, "model": llama70b.pk, "replicas": 1, "tp": 4, "pp": 1, "dp": 1,
            "ep": 1, "engine": "vllm", "served_model_id": "m", "kv_cache_dtype": "bf16",
            "gpu_memory_utilization": 0.9, "poll_interval_s": 15}  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("url", REFUSED_BY_DEFAULT)
def test_the_guard_refuses_the_postgresql_and_redis_ports_on_loopback_by_default(
    url, platform_api, api_body, client, make_user, form_data
):
    """Before: with no FLEETCAP_POLL_ALLOWED_PORTS every loopback port was accepted and polled."""
    port = url.rstrip("/").rsplit(":", 1)[1]
    r = platform_api.post("/api/v1/deployments/", {**api_body, "base_url": url}, format="json")
    assert r.status_code == 400, r.content
    (message,) = r.json()["base_url"]
    assert f"port {port} of this machine" in message and "is refused" in message, message
    client.force_login(make_user("p", "platform"))
    page = client.post("/deployments/new/", {**form_data, "base_url": url})
    assert page.status_code == 400
    html = page.content.decode()
    assert f"port {port} of this machine" in html and 'id="id_base_url"' in html
    assert not Deployment.objects.exists()


@pytest.mark.django_db
def test_an_edit_onto_a_refused_port_is_refused_and_other_loopback_ports_are_not(platform_api, api_body):
    r = platform_api.post("/api/v1/deployments/", {**api_body, "base_url": "http://127.0.0.1:8100"}, format="json")
    assert r.status_code == 201, r.content  # make run's demo endpoint
    r = platform_api.patch("/api/v1/deployments/infra/", {"base_url": "http://127.0.0.1:6379"}, format="json")
    # Named as what it is here: Redis's default port, or this installation's own broker when Redis is the
    # broker (CI's services), whichever the guard met first.
    assert r.status_code == 400, r.json()
    (message,) = r.json()["base_url"]
    assert "port 6379 of this machine" in message, message
    assert "Redis's default port" in message or "this installation's Celery broker" in message, message
    r = platform_api.patch("/api/v1/deployments/infra/", {"base_url": "http://127.0.0.1:30001"}, format="json")
    assert r.status_code == 200 and Deployment.objects.get().base_url == "http://127.0.0.1:30001"


@pytest.mark.django_db
def test_a_stored_endpoint_on_a_refused_port_is_refused_at_poll_time(cluster, llama70b, caplog):
    """A row stored before the rule (or written around registration) is never polled on those ports:
    an ``error`` poll with the public sentence; the guard's reason only in the worker's log."""
    for slug, url in (("pg", "http://127.0.0.1:5432"), ("redis", "http://localhost:6379"),
                      ("web", "http://127.0.0.1:8000")):  # fmt: skip
        Deployment.objects.create(slug=slug, cluster=cluster, model=llama70b, tp=4, base_url=url, served_model_id="m")
    with caplog.at_level(logging.INFO, logger="fleet"):
        report = run_poll_cycle()
    assert report.polled == 3
    for poll in EndpointPoll.objects.all():
        assert poll.status == "error" and poll.reason == PUBLIC_REASONS[PollStatus.ERROR]
    for words in ("port 5432 of this machine", "port 6379 of this machine", "fleetcap's own web server"):
        assert words in caplog.text


@pytest.mark.django_db
def test_the_apps_own_ports_come_from_its_settings(cluster, llama70b, settings, platform_api, api_body, caplog):
    """The web server's port is FLEETCAP_BIND's (runstack sets it for its processes); no request leaves."""
    with FakeEngineServer("vllm") as server:
        settings.WEB_BIND = f"127.0.0.1:{server.port}"
        r = platform_api.post("/api/v1/deployments/", {**api_body, "base_url": server.url}, format="json")
        assert r.status_code == 400 and "fleetcap's own web server" in r.json()["base_url"][0], r.json()
        d = Deployment.objects.create(slug="self", cluster=cluster, model=llama70b, tp=4, base_url=server.url,
                                      served_model_id=server.model_id)  # fmt: skip
        with caplog.at_level(logging.INFO, logger="fleet"):
            assert poll_deployment(d).status == "error"
        assert server.requests == [] and "fleetcap's own web server" in caplog.text
        settings.WEB_BIND = "0.0.0.0:8000"
        assert poll_deployment(d).status == "up"  # any other loopback port is polled as before
        settings.POLL_LOOPBACK_REFUSED_PORTS = [server.port]
        assert "FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS" in loopback_refused_ports()[server.port]
        r = platform_api.post("/api/v1/deployments/", {**api_body, "base_url": server.url}, format="json")
        assert r.status_code == 400 and "FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS" in r.json()["base_url"][0]


def test_the_refused_ports_are_the_installations_own(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6380/0;redis://127.0.0.1:6381/0"
    settings.CACHE_URL = "redis://cache.internal/1"
    settings.WEB_BIND = "[::]:9000"
    settings.POLL_LOOPBACK_REFUSED_PORTS = None
    refused = loopback_refused_ports()
    assert {5432, 6379, 6380, 6381, 9000} <= set(refused)
    assert refused[6380] == refused[6381] == "this installation's Celery broker"
    assert refused[6379] == "this installation's cache" and refused[9000] == "fleetcap's own web server"
    settings.POLL_LOOPBACK_REFUSED_PORTS = []
    assert loopback_refused_ports() == {}  # FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS=none


def test_ports_read_from_urls_binds_and_databases():
    assert url_port("redis://127.0.0.1/0") == 6379 and url_port("amqp://guest@rabbit:5673//") == 5673
    assert url_port("filesystem://") is None and url_port("redis://[::1") is None
    assert bind_port("0.0.0.0:8000") == 8000 and bind_port("[::]:8080") == 8080
    assert bind_port("unix:/run/gunicorn.sock") is None
    postgres = {"ENGINE": "django.db.backends.postgresql", "HOST": "127.0.0.1", "PORT": ""}
    assert database_port(postgres) == ("PostgreSQL", 5432)
    assert database_port({**postgres, "PORT": 6432}) == ("PostgreSQL", 6432)  # PgBouncer
    assert database_port({**postgres, "HOST": "/var/run/postgresql"}) is None  # a Unix socket
    assert database_port({"ENGINE": "django.db.backends.sqlite3", "NAME": "x"}) is None
