"""Locust users for bench/bench_load.py: the main pages and the API, as the four roles.

Each locust user takes the next login of ``LOAD_USERS_FILE`` (written by ``bench/load/prepare.py``: a
session cookie for the pages, a token for the API; no password login, so django-axes is not involved)
and pauses ``LOAD_WAIT_S`` seconds (default 1; 0 for the saturation steps) between requests. Requests are
named by route (``page fleet``, ``api POST sizing``) so the statistics come out per endpoint; any status
but the expected one is a failure.

    locust -f bench/load/locustfile.py --headless --users 50 --spawn-rate 10 --run-time 60s --host http://127.0.0.1:8765
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from locust import FastHttpUser, constant, task

_DATA = json.loads(Path(os.environ["LOAD_USERS_FILE"]).read_text())
_LOGINS = itertools.cycle(_DATA["users"])
T = _DATA["targets"]
HX = {"HX-Request": "true"}
WHAT_IF = "model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16&kv_cache_dtype=fp8&context_tokens=131072&pool=unified"
SIZING = {"model": "kimi-k3", "sku": "h200-141gb", "gpus": 16, "tp": 8, "dp": 2, "ep": 16, "kv_cache_dtype": "fp8"}
ESTIMATE = {"model": "llama-3.1-70b", "sku": "h100-sxm-80gb", "tp": 4, "batch": 16, "prompt_tokens": 1000}
BREAKEVEN = {
    "gpus": 8,
    "sku": "h100-sxm-80gb",
    "api_price": "kimi-k3-api",
    "monthly_input_tokens": 2_000_000_000,
    "monthly_output_tokens": 100_000_000,
}


class Person(FastHttpUser):
    """One logged-in person using pages and the API alike."""

    wait_time = constant(float(os.environ.get("LOAD_WAIT_S", "1")))

    def on_start(self) -> None:
        login = next(_LOGINS)
        self.role = login["role"]
        self.page_headers = {"Cookie": f"sessionid={login['sessionid']}"}
        self.api_headers = {"Authorization": f"Token {login['token']}"}

    def page(self, name: str, url: str, extra: dict[str, str] | None = None) -> None:
        headers = {**self.page_headers, **(extra or {})}
        with self.client.get(url, headers=headers, name=f"page {name}", catch_response=True) as r:
            if r.status_code != 200:
                r.failure(f"{r.status_code}")

    def api(self, method: str, name: str, url: str, body: dict | None = None, expect: int = 200) -> None:
        with self.client.request(
            method, url, headers=self.api_headers, json=body, name=f"api {method} {name}", catch_response=True
        ) as r:
            if r.status_code != expect:
                r.failure(f"{r.status_code}: {(r.text or '')[:200]}")

    # Pages (about 60% of requests; the fleet partial is what every open fleet tab asks every 5 s).
    @task(3)
    def fleet(self) -> None:
        self.page("fleet", "/")

    @task(4)
    def fleet_partial(self) -> None:
        self.page("fleet (htmx)", "/", HX)

    @task(2)
    def cluster(self) -> None:
        self.page("cluster", f"/clusters/{T['cluster']}/")

    @task(3)
    def deployment(self) -> None:
        self.page("deployment", f"/deployments/{T['deployment']}/")

    @task(1)
    def models(self) -> None:
        self.page("models", "/models/")

    @task(2)
    def model(self) -> None:
        self.page("model", f"/models/{T['model']}/")

    @task(2)
    def what_if(self) -> None:
        self.page("what-if", f"/what-if/?{WHAT_IF}")

    @task(3)
    def what_if_partial(self) -> None:
        self.page("what-if (htmx)", f"/what-if/?{WHAT_IF}", HX)

    @task(1)
    def plans(self) -> None:
        self.page("plans", "/plans/")

    @task(1)
    def plan(self) -> None:
        if T["plan"]:
            self.page("plan", f"/plans/{T['plan']}/")

    @task(2)
    def rent_vs_api(self) -> None:
        self.page("rent-vs-api", "/rent-vs-api/")

    @task(2)
    def spend(self) -> None:
        self.page("spend", f"/spend/?month={T['month']}")

    @task(1)
    def decisions(self) -> None:
        self.page("decisions", "/decisions/")

    # API reads and computations (about 40%), and a few writes.
    @task(2)
    def api_deployments(self) -> None:
        self.api("GET", "deployments", "/api/v1/deployments/")

    @task(2)
    def api_deployment(self) -> None:
        self.api("GET", "deployment", f"/api/v1/deployments/{T['deployment']}/")

    @task(1)
    def api_clusters(self) -> None:
        self.api("GET", "clusters", "/api/v1/clusters/")

    @task(1)
    def api_models(self) -> None:
        self.api("GET", "models", "/api/v1/models/")

    @task(1)
    def api_model(self) -> None:
        self.api("GET", "model", f"/api/v1/models/{T['model']}/")

    @task(1)
    def api_quotes(self) -> None:
        self.api("GET", "gpu-quotes", "/api/v1/gpu-quotes/")

    @task(1)
    def api_plans(self) -> None:
        self.api("GET", "plans", "/api/v1/plans/")

    @task(1)
    def api_decisions(self) -> None:
        self.api("GET", "decisions", "/api/v1/decisions/")

    @task(3)
    def api_sizing(self) -> None:
        self.api("POST", "sizing", "/api/v1/sizing/", SIZING)

    @task(3)
    def api_estimate(self) -> None:
        self.api("POST", "estimate", "/api/v1/estimate/", ESTIMATE)

    @task(2)
    def api_breakeven(self) -> None:
        self.api("POST", "breakeven", "/api/v1/breakeven/", BREAKEVEN)

    @task(1)
    def api_record_decision(self) -> None:
        """A write (an append-only Decision) where the role may; a spend read otherwise."""
        if self.role in ("finance", "admin"):
            body = {"workload": T["workload"], "tier": 3, "note": "load test", "breakeven": BREAKEVEN}
            self.api("POST", "decisions", "/api/v1/decisions/", body, expect=201)
        else:
            self.api("GET", "spend", f"/api/v1/spend/?month={T['month']}")
