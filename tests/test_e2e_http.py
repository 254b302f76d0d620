"""A procurement script's first session, over HTTP only (issue 27's end-to-end acceptance), against the live
server with a real Celery worker:

log in with a session (the login form), create a write token through the API (session + CSRF), read the
schema with the token, list SKUs with their prices in force, post a plan for K3 and the coding agent on
H200s, poll it until done, register the best layout as a deployment on a 4-node H200 cluster, retrying that
POST with the same Idempotency-Key in the middle (one deployment, the first answer replayed), and get the
deployment's vLLM launch command. Nothing but HTTP requests after the fixtures (the catalogue, the agent
workload, the cluster and the login).
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest
from celery_workers import start_worker, stop_worker

from fleet.models import Cluster, Deployment, HardwareSku, Provider

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-for-tests-only"


class Http:
    """urllib with a cookie jar: what a script without a framework would do."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def send(self, method: str, path: str, body: object = None, headers: dict | None = None, form: bool = False):
        data = None
        headers = dict(headers or {})
        if body is not None:
            data = urllib.parse.urlencode(body).encode() if form else json.dumps(body).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded" if form else "application/json"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with self.opener.open(request, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.jar if c.name == name)


def test_a_script_from_login_to_launch_command(live_server, catalog_and_agent, make_user, monkeypatch):
    from fleet.project.celery import app

    make_user("buyer", "platform")
    sku = HardwareSku.objects.get(slug="h200-141gb")
    Cluster.objects.create(
        slug="h200s", name="H200s", sku=sku, nodes=4, provider=Provider.objects.ensure("acme"), team="ml"
    )
    queue = f"e2e-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    worker = start_worker(queue)
    try:
        web = Http(live_server.url)
        status, _, page = web.send("GET", "/accounts/login/")
        csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1].decode()
        status, _, _ = web.send(
            "POST", "/accounts/login/", {"username": "buyer", "password": PASSWORD, "csrfmiddlewaretoken": csrf},
            headers={"Referer": live_server.url + "/accounts/login/"}, form=True,
        )  # fmt: skip
        assert status == 200  # followed to the dashboard
        status, _, body = web.send(
            "POST", "/api/v1/tokens/", {"name": "procurement", "scope": "write", "expires_in_days": 30},
            headers={"X-CSRFToken": web.cookie("csrftoken"), "Referer": live_server.url + "/"},
        )  # fmt: skip
        assert status == 201, body
        key = json.loads(body)["key"]

        script = Http(live_server.url)  # no cookies: the token only
        auth = {"Authorization": f"Bearer {key}"}
        status, headers, schema = script.send("GET", "/api/v1/schema/?format=json", headers=auth)
        assert status == 200 and "/api/v1/plans/{id}/deploy/" in json.loads(schema)["paths"]
        status, _, skus = script.send("GET", "/api/v1/skus/?page_size=100", headers=auth)
        h200 = next(s for s in json.loads(skus)["results"] if s["slug"] == "h200-141gb")
        assert h200["price_in_force"]["basis"] in ("own", "list") and h200["price_in_force"]["usd_per_gpu_hour"]

        plan_body = {"model": "kimi-k3", "workload": "agent", "skus": ["h200-141gb"], "max_nodes": 4,
                     "modes": ["aggregated"]}  # fmt: skip
        status, headers, body = script.send("POST", "/api/v1/plans/", plan_body, headers=auth)
        assert status == 202, body
        plan_url = headers["Location"]
        deadline = time.monotonic() + 120
        while True:
            status, _, body = script.send("GET", urllib.parse.urlsplit(plan_url).path, headers=auth)
            plan = json.loads(body)
            if plan["status"] in ("done", "failed", "cancelled") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert plan["status"] == "done", plan.get("error")
        assert plan["summary"]["best"]["sku"] == "h200-141gb"

        deploy = {"rank": 1, "cluster": "h200s", "slug": "k3-procured"}
        retry = {**auth, "Idempotency-Key": f"deploy-{plan['id']}"}
        first = script.send("POST", f"/api/v1/plans/{plan['id']}/deploy/", deploy, headers=retry)
        again = script.send("POST", f"/api/v1/plans/{plan['id']}/deploy/", deploy, headers=retry)  # a retry
        assert first[0] == again[0] == 201, first[2]
        assert again[1]["Idempotent-Replayed"] == "true" and again[2] == first[2]
        assert Deployment.objects.filter(slug="k3-procured").count() == 1

        status, _, body = script.send("GET", "/api/v1/deployments/k3-procured/launch/", headers=auth)
        launch = json.loads(body)
        assert status == 200 and launch["command"].startswith("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size ")
        assert launch == json.loads(first[2])["launch"]
    finally:
        stop_worker(worker)
