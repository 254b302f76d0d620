"""The Content-Security-Policy in a real browser: the main pages (and an HTMX swap) load without a
single violation reported in the console, Chart.js still draws, and the headroom bars get their width."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider, Workload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: The main pages of the ``fleet`` world below (tests/browser/test_browser_charts.py walks them on a phone too).
MAIN_PAGES = ["/", "/clusters/pool/", "/deployments/llama/", "/models/", "/models/kimi-k3/", "/plans/", "/spend/",
              "/decisions/", "/deployments/new/", "/api/v1/docs/"]  # fmt: skip


@pytest.fixture
def fleet(make_user):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="agent", name="Coding agent", team="dev", requests_per_day=200_000, mean_prompt_tokens=12_000,
        mean_output_tokens=600, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9, peak_concurrency=256,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    cluster = Cluster.objects.create(slug="pool", name="Pool", sku=HardwareSku.objects.get(slug="h100-sxm-80gb"),
                                     nodes=1, provider=Provider.objects.ensure("acme"), team="platform")  # fmt: skip
    Deployment.objects.create(slug="llama", cluster=cluster, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4,
                              max_model_len=32768, kv_cache_dtype="fp8", last_status="up",
                              last_metrics={"requests_running": 3})  # fmt: skip
    from planner.snapshots import refresh_snapshots

    refresh_snapshots()  # the worker's part: the fleet page reads the stored capacity
    make_user("admin", "admin")


def test_main_pages_report_no_content_security_policy_violation(open_page, live_server, fleet):
    page = open_page("admin")
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security Policy" in message.text
            else None)  # fmt: skip
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    for path in MAIN_PAGES:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
    page.goto(f"{live_server.url}/")
    width = page.locator("tr[data-deployment='llama'] .bar .fill").evaluate("e => e.getBoundingClientRect().width")
    assert width > 0  # bars.js drew the headroom bar without an inline style attribute
    page.goto(f"{live_server.url}/rent-vs-api/?workload=agent&gpus=8&sku=h100-sxm-80gb&api_price=kimi-k3-api")
    page.wait_for_selector("canvas[data-chart='breakeven'][data-drawn='1']")
    page.goto(f"{live_server.url}/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16")
    page.wait_for_selector("canvas[data-chart][data-drawn='1']")
    with page.expect_response(lambda r: "/what-if/" in r.url and r.request.headers.get("hx-request") == "true"):
        page.fill("input[name=context_tokens]", "16384")
    page.wait_for_timeout(300)  # the swap settles and the charts redraw
    assert violations == []
