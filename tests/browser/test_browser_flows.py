"""The dashboard in a real browser: Playwright drives Debian's Chromium against a live server.

Flows from the acceptance list: log in; register a cluster and a deployment and see its headroom;
calibrate a deployment from its startup log in place;
change the context on the what-if page and see capacity change without a page load; start a plan
and watch the progress bar reach 100% (a real Celery worker runs it); record a decision as finance
and be refused as viewer; download the spend CSV.
"""

from __future__ import annotations

import csv
import io
import uuid
from datetime import date
from io import StringIO
from pathlib import Path

import pytest
from celery_workers import start_worker, stop_worker
from django.core.management import call_command
from priced import acme_quoting_the_seeds_rate

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider, Workload
from planner.models import Decision, Plan

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "startup_logs"


@pytest.fixture
def catalog(make_user):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="agent",
        name="Coding agent",
        team="dev",
        requests_per_day=200_000,
        mean_prompt_tokens=12_000,
        mean_output_tokens=600,
        p95_context_tokens=64_000,
        prefix_cache_hit_rate=0.9,
        peak_concurrency=256,
        ttft_slo_ms=2000,
        tpot_slo_ms=50,
    )
    for role in ("viewer", "platform", "finance"):
        make_user(role, role)


def test_register_a_cluster_and_a_deployment_and_see_its_headroom(open_page, live_server, catalog, monkeypatch):
    """The deployment's capacity is computed by a real worker (the registration's save sends
    planner.refresh_answers through the outbox) and the fleet page's 5-second refresh shows it."""
    from fleet.project.celery import app

    queue = f"answers-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    worker = start_worker(queue)
    try:
        _register_and_see_headroom(open_page, live_server)
    finally:
        stop_worker(worker)


def _register_and_see_headroom(open_page, live_server) -> None:
    page = open_page("platform")
    page.click("text=Register a cluster")
    page.fill("#id_name", "K3 pool")
    page.fill("#id_slug", "k3-pool")
    page.select_option("#id_sku", label="NVIDIA H100 SXM 80GB")
    page.fill("#id_nodes", "1")
    page.select_option("#id_provider", "Lambda")  # picked from the list (the catalogue's providers)
    page.fill("#id_team", "platform")
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{live_server.url}/clusters/k3-pool/")
    page.click("text=Add a deployment")
    page.fill("#id_slug", "llama-prod")
    page.select_option("#id_model", label="Llama-3.1-70B-Instruct")
    page.fill("#id_tp", "4")
    page.fill("#id_replicas", "2")
    page.select_option("#id_kv_cache_dtype", "fp8")
    page.fill("#id_max_model_len", "32768")
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{live_server.url}/deployments/llama-prod/")
    capacity = Deployment.objects.get(slug="llama-prod").sizing().max_concurrent_sequences
    page.goto(f"{live_server.url}/")
    meter = page.locator("tr[data-deployment='llama-prod'] [role=meter]")
    meter.wait_for(timeout=60_000)  # the worker computes it; the table refreshes every 5 s
    assert meter.get_attribute("aria-valuemax") == str(capacity) and capacity > 0
    assert f"/ {capacity}" in page.locator("tr[data-deployment='llama-prod']").inner_text()


def test_what_if_capacity_changes_without_a_page_load(open_page, live_server, catalog):
    page = open_page("viewer")
    page.goto(
        f"{live_server.url}/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16"
        "&kv_cache_dtype=fp8&context_tokens=131072"
    )
    before = int(page.inner_text("#whatif-capacity").replace(",", ""))
    # The decode-step bar is drawn by static/js/charts.js from its json_script data (no inline script).
    page.wait_for_selector("canvas[data-chart=breakdown][data-drawn='1']")
    page.evaluate("window.__noReload = 'still here'")
    page.fill("input[name=context_tokens]", "524288")
    page.wait_for_function(
        "before => Number(document.querySelector('#whatif-capacity').textContent.replace(/,/g, '')) !== before",
        arg=before,
    )
    after = int(page.inner_text("#whatif-capacity").replace(",", ""))
    assert 0 < after < before
    assert page.evaluate("window.__noReload") == "still here"  # the same document: no page load
    page.wait_for_selector("canvas[data-chart=breakdown][data-drawn='1']")  # redrawn after the swap
    assert "central" in page.inner_text("#whatif-band")
    assert "context_tokens=524288" in page.url  # the inputs are in the shareable URL


def test_start_a_plan_and_watch_the_progress_bar_reach_100(open_page, live_server, catalog, monkeypatch):
    from fleet.project.celery import app

    queue = f"browser-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    worker = start_worker(queue)
    try:
        page = open_page("platform")
        page.goto(f"{live_server.url}/plans/")
        page.locator("#id_workload").press_sequentially("agen")  # the picker suggests; choosing fills it
        page.click("#id_workload-options button[data-pick=agent]")
        assert page.input_value("#id_workload") == "agent"
        page.click("button:has-text('Start the search')")
        page.wait_for_url(f"{live_server.url}/plans/*/")
        page.wait_for_function("() => document.querySelector('#plan-progress').value === 100", timeout=90_000)
        assert page.inner_text("#plan-state") == "done"
        assert page.locator("#plan-ranking tbody tr").count() > 0
        assert page.locator("canvas[data-chart=pareto]").count() == 1
    finally:
        stop_worker(worker)
    assert Plan.objects.get().status == "done"


def test_record_a_decision_as_finance_and_be_refused_as_viewer(open_page, live_server, catalog):
    url = f"{live_server.url}/rent-vs-api/?workload=agent&gpus=8&sku=h100-sxm-80gb&api_price=kimi-k3-api&on=2026-08-01"
    finance = open_page("finance")
    finance.goto(url)
    finance.select_option("select[name=tier]", "3")
    finance.fill("input[name=note]", "the API wins at our volume")
    finance.click("button:has-text('Record decision')")
    finance.wait_for_url(f"{live_server.url}/decisions/")
    assert "the API wins at our volume" in finance.inner_text("main")
    viewer = open_page("viewer")
    viewer.goto(url)
    assert viewer.locator("#record-decision").count() == 0  # not shown...
    status = viewer.evaluate(
        """async () => {
            const headers = document.querySelector('body').getAttribute('hx-headers');
            const token = headers.match(/"x-csrftoken": "([^"]+)"/)[1];
            const body = new URLSearchParams(
                {workload: 'agent', gpus: '8', sku: 'h100-sxm-80gb', api_price: 'kimi-k3-api', tier: '1'});
            const r = await fetch('/rent-vs-api/decide/', {method: 'POST', body, headers: {'X-CSRFToken': token}});
            return r.status;
        }"""
    )
    assert status == 403  # ...and not accepted
    assert Decision.objects.count() == 1


def test_download_the_spend_csv(open_page, live_server, catalog):
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    Cluster(slug="k", name="K", sku=sku, nodes=1, provider=acme_quoting_the_seeds_rate(sku), team="ml").save(
        effective_from=date(2026, 7, 17)
    )
    page = open_page("finance")
    page.goto(f"{live_server.url}/spend/?month=2026-07")
    with page.expect_download() as info:
        page.click("#spend-csv")
    download = info.value
    assert download.suggested_filename == "gpu-spend-2026-07.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert rows[0]["name"] == "k" and rows[0]["gpu_hours"] == "2880.00" and rows[0]["cost_usd"] == "7200.00"
    assert rows[-1]["kind"] == "total"


def test_calibrate_a_deployment_from_its_startup_log_without_a_page_load(open_page, live_server, catalog):
    """Paste a real vLLM startup log on the deployment's page: the table appears in place (HTMX)."""
    sku = HardwareSku.objects.get(slug="h200-141gb")
    cluster = Cluster.objects.create(
        slug="h200", name="H200", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="ml"
    )
    model = ModelSpec.objects.get(slug="qwen3-next-80b-a3b")
    Deployment.objects.create(slug="next", cluster=cluster, model=model, tp=2, engine="vllm")
    log = (FIXTURES / "vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log").read_text(encoding="utf-8")
    page = open_page("platform")
    page.goto(f"{live_server.url}/deployments/next/")
    page.evaluate("window.__marker = 'same page'")
    page.fill("#id_log", log)
    page.click("button:has-text('Calibrate')")
    table = page.locator("#calibration-figures")
    table.wait_for()
    assert page.evaluate("window.__marker") == "same page"  # swapped in place, no navigation
    # "Maximum concurrency for 262,144 tokens per request: 14.77x"
    assert "14.77" in table.locator("tr", has_text="Maximum concurrency").inner_text()
    assert page.locator("#id_log").input_value() == ""  # a fresh form for the next log
