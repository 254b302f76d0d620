"""Production security (issue 14): HTTPS by environment, the Content-Security-Policy, login lockout,
API throttles, no secrets in URLs or pages, and poll errors that do not tell ports apart."""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
from io import StringIO
from pathlib import Path

import pytest
from api_keys import api_key
from django.core.management import call_command
from django.http import HttpResponse
from django.test import Client
from rest_framework.test import APIClient
from secret_scan import SecretScanner

from fleet.models import Deployment, EndpointPoll, Workload
from fleet.poller import poll_deployment
from fleet.polling.client import PUBLIC_REASONS, PollStatus
from fleet.polling.fakeserver import FakeEngineServer

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "pw-for-tests-only"


# --------------------------------------------------------------------------------------------
# HTTPS by environment: manage.py check --deploy
# --------------------------------------------------------------------------------------------


def _check_deploy(tmp_path, **env: str) -> subprocess.CompletedProcess:
    # (DJANGO_ALLOW_ASYNC_UNSAFE: set by the browser tests in this process; a deploy check refuses it.)
    drop = {
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "FLEETCAP_SECRET_KEY_FILE",
        "FLEETCAP_HTTPS",
        "FLEETCAP_DEBUG",
        "DJANGO_ALLOW_ASYNC_UNSAFE",
    }
    base = {k: v for k, v in os.environ.items() if k not in drop}
    base |= {"FLEETCAP_VAR_DIR": str(tmp_path), "FLEETCAP_SECRET_KEY": secrets.token_urlsafe(60),
             "FLEETCAP_ALLOWED_HOSTS": "fleetcap.example.com", "FLEETCAP_DEBUG": "0"}  # fmt: skip
    code = (
        "import django, os, sys; os.environ['DJANGO_SETTINGS_MODULE'] = 'fleet.project.settings'; django.setup(); "
        "from django.conf import settings as s; "
        "print('SETTINGS', s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_SSL_REDIRECT, s.SECURE_PROXY_SSL_HEADER); "
        "from django.core.management import call_command; "
        "call_command('check', deploy=True, fail_level='WARNING')"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_https_switches_on_hsts_secure_cookies_redirect_and_the_proxy_header(tmp_path):
    """Before: W004, W008, W012 and W016 with no way to switch them off. After: FLEETCAP_HTTPS=1."""
    plain = _check_deploy(tmp_path)
    assert plain.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in plain.stderr, plain.stderr
    https = _check_deploy(tmp_path, FLEETCAP_HTTPS="1")
    assert https.returncode == 0, https.stderr
    assert "SETTINGS 31536000 True True True ('HTTP_X_FORWARDED_PROTO', 'https')" in https.stdout


# --------------------------------------------------------------------------------------------
# Content-Security-Policy, and no inline script or style on the pages
# --------------------------------------------------------------------------------------------


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="agent", name="Coding agent", team="dev", requests_per_day=50_000, mean_prompt_tokens=20_000,
        mean_output_tokens=800, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9, peak_concurrency=200,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
INLINE_STYLE = re.compile(r"<style\b|\sstyle=", re.I)


@pytest.mark.django_db
def test_every_page_has_a_strict_policy_and_no_inline_script_or_style(client, make_user, deployment):
    client.force_login(make_user("a", "admin"))
    pages = ["/", f"/clusters/{deployment.cluster.slug}/", f"/deployments/{deployment.slug}/", "/models/",
             "/models/kimi-k3/", "/what-if/", "/prefix-cache/", "/plans/", "/rent-vs-api/", "/spend/", "/decisions/",
             "/deployments/new/", "/api/v1/docs/"]  # fmt: skip
    for url in pages:
        r = client.get(url)
        assert r.status_code == 200, url  # (spend: a day without a quote is a warning on the page)
        policy = r["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe" not in policy, policy
        assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
        html = r.content.decode()
        assert not INLINE_SCRIPT.search(html), (url, INLINE_SCRIPT.search(html).group(0))
        assert not INLINE_STYLE.search(html), (url, html[INLINE_STYLE.search(html).start() - 80 :][:160])
    assert '"includeIndicatorStyles": false' in client.get("/").content.decode()
    anonymous = Client().get("/accounts/login/")
    assert "script-src 'self'" in anonymous["Content-Security-Policy"] and not INLINE_STYLE.search(
        anonymous.content.decode()
    )
    # Swagger UI's script comes from its own URL, not inline.
    assert client.get("/api/v1/docs/?script=").status_code == 200


# --------------------------------------------------------------------------------------------
# Login lockout (django-axes)
# --------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_hundred_wrong_passwords_lock_the_login_even_for_the_right_one(make_user):
    """Before: 100 wrong passwords, then the right one logged in. After: locked, with a clear page."""
    make_user("target", "viewer")
    browser = Client()
    for _ in range(100):
        r = browser.post("/accounts/login/", {"username": "target", "password": "wrong"})
        assert "_auth_user_id" not in browser.session
    r = browser.post("/accounts/login/", {"username": "target", "password": PASSWORD})
    assert r.status_code == 429 and "_auth_user_id" not in browser.session
    page = r.content.decode()
    assert "Login locked" in page and "Too many failed logins" in page and "target" in page
    # Another username from the same address is not locked.
    make_user("other", "viewer")
    assert Client().post("/accounts/login/", {"username": "other", "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
def test_a_few_mistakes_then_the_right_password_logs_in(make_user, settings):
    make_user("typo", "viewer")
    browser = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert browser.post("/accounts/login/", {"username": "typo", "password": "nope"}).status_code == 200
    r = browser.post("/accounts/login/", {"username": "typo", "password": PASSWORD})
    assert r.status_code == 302 and "_auth_user_id" in browser.session


# --------------------------------------------------------------------------------------------
# API throttles
# --------------------------------------------------------------------------------------------


def _token_client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_key(user)}")
    return api


@pytest.mark.django_db
def test_api_requests_are_throttled_per_user_with_retry_after(make_user, settings):
    """Before: no API throttling at all. After: per user (token), 429 with Retry-After past the rate."""
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["user"] == "600/min"  # the default
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"user": "3/min", "anon": "2/min"}}
    first, second = _token_client(make_user("one", "viewer")), _token_client(make_user("two", "viewer"))
    assert [first.get("/api/v1/skus/").status_code for _ in range(3)] == [200, 200, 200]
    limited = first.get("/api/v1/skus/")
    assert limited.status_code == 429 and 0 < int(limited["Retry-After"]) <= 60
    assert second.get("/api/v1/skus/").status_code == 200  # each user has their own allowance


# --------------------------------------------------------------------------------------------
# No CSRF token or secret in a URL
# --------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_recording_a_decision_never_puts_the_post_body_in_a_url(make_user, catalog):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(make_user("f", "finance"))
    inputs = {"workload": "agent", "gpus": "8", "sku": "h100-sxm-80gb", "api_price": "kimi-k3-api", "on": "2026-08-01"}
    page = browser.get("/rent-vs-api/", inputs)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    done = browser.post("/rent-vs-api/decide/", {**inputs, "tier": "3", "csrfmiddlewaretoken": token})
    assert done.status_code == 302 and done["Location"] == "/decisions/"
    # A refused decision is shown at 400: the token is in hidden inputs only, in no link or action.
    bad = browser.post(
        "/rent-vs-api/decide/", {**inputs, "on": "2020-01-01", "tier": "3", "csrfmiddlewaretoken": token}
    )
    assert bad.status_code == 400
    html = bad.content.decode()
    for attribute in re.findall(r'(?:href|action|hx-get|hx-post)="([^"]*)"', html):
        assert "csrf" not in attribute and token not in attribute, attribute
    # Logged out meanwhile: the login redirect carries the path, never the form.
    browser.logout()
    again = Client(enforce_csrf_checks=False).post("/rent-vs-api/decide/", {**inputs, "tier": "3", "note": "n"})
    assert again.status_code == 302 and again["Location"] == "/accounts/login/?next=/rent-vs-api/decide/"


SECRET_URLS = [
    "http://user:sk-live-0123456789abcdefghij@127.0.0.1:8000",
    "http://127.0.0.1:8000/?api_key=sk-live-0123456789abcdefghij",
    "http://127.0.0.1:8000/?token=sk-live-0123456789abcdefghij",
    "http://127.0.0.1:8000/v1?key=sk-live-0123456789abcdefghij",
    "http://127.0.0.1:8000/#access_token=sk-live-0123456789abcdefghij",
]


@pytest.mark.django_db
@pytest.mark.parametrize("url", SECRET_URLS)
def test_a_key_in_the_base_url_is_refused_pointing_to_the_api_key_field(platform_api, client, make_user, cluster,
                                                                        llama70b, url):  # fmt: skip
    """Before: a query string was accepted, stored and shown to viewers. After: refused at registration."""
    body = {"slug": "leaky", "cluster": cluster.slug, "model": llama70b.slug, "tp": 4, "base_url": url}
    r = platform_api.post("/api/v1/deployments/", body, format="json")
    assert r.status_code == 400 and "API key field" in r.json()["base_url"][0], r.json()
    client.force_login(make_user("p", "platform"))
    form = {"slug": "leaky", "cluster": cluster.slug, "model": llama70b.pk, "replicas": 1, "tp": 4, "pp": 1, "dp": 1,
            "ep": 1, "engine": "vllm", "base_url": url, "kv_cache_dtype": "bf16", "gpu_memory_utilization": 0.9,
            "poll_interval_s": 15}  # fmt: skip
    page = client.post("/deployments/new/", form)
    assert page.status_code == 400 and "API key field" in page.content.decode()
    assert "sk-live-0123456789abcdefghij" not in page.content.decode()  # not even echoed back to its author
    assert not Deployment.objects.filter(slug="leaky").exists()


@pytest.mark.django_db
def test_a_stored_base_url_with_a_key_is_never_shown(client, make_user, cluster, llama70b, viewer_api):
    """A row stored before registration refused such URLs: pages, API and the edit form mask it."""
    leaked = "sk-live-abcdefghijklmnop0123"
    Deployment.objects.create(slug="old", cluster=cluster, model=llama70b, tp=4,
                              base_url=f"http://u:{leaked}@127.0.0.1:8000/?api_key={leaked}")  # fmt: skip
    api = viewer_api.get("/api/v1/deployments/old/").json()
    assert api["base_url"] == "http://127.0.0.1:8000/"
    client.force_login(make_user("v", "viewer"))
    assert "http://127.0.0.1:8000/" in client.get("/deployments/old/").content.decode()
    client.force_login(make_user("p", "platform"))
    edit = client.get("/deployments/old/edit/").content.decode()
    assert leaked not in edit and 'value="http://127.0.0.1:8000/"' in edit
    # Fixed: the audit trail's "before" is the old URL, shown without its key.
    old = Deployment.objects.get(slug="old")
    old.base_url = "http://127.0.0.1:8001"
    old.save()
    page = client.get("/deployments/old/").content.decode()
    assert "http://127.0.0.1:8000/" in page and "http://127.0.0.1:8001" in page and leaked not in page


def test_the_scan_finds_a_key_in_a_response_and_a_log_record(_secret_scan_session, caplog):
    """The session-wide scan (secret_scan.py) sees responses and log records."""
    scanner = SecretScanner()
    response = HttpResponse("token sk-secret-do-not-leak-0123456789 here", headers={"X-Key": "sk-page-secret"})
    scanner.scan_response(type("R", (), {"method": "GET", "path": "/x"})(), response)
    assert len(scanner.findings) == 2
    before = len(_secret_scan_session.findings)
    logging.getLogger("fleet.test").warning("oops %s", "sk-wrong-key-99")
    assert len(_secret_scan_session.findings) == before + 1
    del _secret_scan_session.findings[before:]  # found, as it should be: not this test's failure


# --------------------------------------------------------------------------------------------
# Poller egress: shown reasons do not tell refused from malformed
# --------------------------------------------------------------------------------------------


class _GarbageServer:
    """Accepts connections on loopback and answers bytes that are not HTTP (a non-HTTP service)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(b"-ERR unknown command 'GET'\r\n\x00\x01garbage\r\n\r\n")

    def close(self) -> None:
        self.sock.close()


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


@pytest.mark.django_db
def test_poll_reasons_shown_do_not_tell_a_closed_port_from_a_non_http_one(cluster, llama70b, caplog, viewer_api):
    """Before: "cannot connect: Connection refused" against "malformed HTTP reply: ..." told open ports
    from closed ones. After: one sentence per status; the details only in the worker's log."""
    garbage = _GarbageServer()
    try:
        closed = Deployment.objects.create(slug="closed", cluster=cluster, model=llama70b, tp=4,
                                           base_url=f"http://127.0.0.1:{_closed_port()}")  # fmt: skip
        other = Deployment.objects.create(slug="other", cluster=cluster, model=llama70b, tp=4,
                                          base_url=f"http://127.0.0.1:{garbage.port}")  # fmt: skip
        with caplog.at_level(logging.INFO, logger="fleet"):
            polls = [poll_deployment(closed), poll_deployment(other)]
    finally:
        garbage.close()
    for poll in polls:
        assert poll.reason == PUBLIC_REASONS[PollStatus(poll.status)]
        assert poll.outcome["reason"] == poll.reason and poll.outcome["warnings"] == []
    shown = " ".join(viewer_api.get(f"/api/v1/deployments/{d}/polls/").content.decode() for d in ("closed", "other"))
    for word in ("Connection refused", "cannot connect", "malformed", "garbage", "ERR"):
        assert word not in shown
    assert "Connection refused" in caplog.text and "poll closed" in caplog.text  # the worker log has it
    assert EndpointPoll.objects.count() == 2


@pytest.mark.django_db
def test_only_the_listed_ports_are_polled(cluster, llama70b, settings, platform_api):
    with FakeEngineServer("vllm") as server:
        settings.POLL_ALLOWED_PORTS = [server.port + 1 if server.port < 65535 else 1]
        body = {"slug": "p", "cluster": cluster.slug, "model": llama70b.slug, "tp": 4, "base_url": server.url}
        r = platform_api.post("/api/v1/deployments/", body, format="json")
        assert r.status_code == 400 and f"port {server.port} is not one" in r.json()["base_url"][0]
        d = Deployment.objects.create(slug="p", cluster=cluster, model=llama70b, tp=4, base_url=server.url)
        poll = poll_deployment(d)
        assert poll.status == "error" and server.requests == []  # no request left the poller
        settings.POLL_ALLOWED_PORTS = [server.port]
        assert poll_deployment(d).status != "error"
