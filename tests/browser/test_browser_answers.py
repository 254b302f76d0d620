"""Stored answers in a real browser (issue 17): a decision the workers' review found flipped is named on
the fleet page and flagged on the decisions page, finance supersedes it in one click; a viewer sees the
flag but no button; a stale capacity snapshot is said to be stale beside its figures."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from priced import acme_quoting_the_seeds_rate

from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Workload
from planner.breakeven import BreakevenRequest
from planner.decisions import record_decision
from planner.models import Decision
from planner.reviews import review_decisions
from planner.snapshots import refresh_snapshots

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def flipped(make_user):
    """Renting was cheaper at 2.50 USD/GPU-hour; a quote of 8.00 from today makes the API cheaper, and the
    worker's review (run here, as the task does) says so."""
    call_command("load_catalog", stdout=StringIO())
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    workload = Workload.objects.create(
        slug="chat", name="Chat", team="web", requests_per_day=100_000, mean_prompt_tokens=1_000,
        mean_output_tokens=500, p95_context_tokens=4_000, prefix_cache_hit_rate=0.5, peak_concurrency=64,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    acme = acme_quoting_the_seeds_rate(sku)
    cluster = Cluster.objects.create(slug="c", name="C", sku=sku, nodes=1, provider=acme, team="t")
    Deployment.objects.create(
        slug="llama", cluster=cluster, model=model, tp=4, replicas=2, kv_cache_dtype="fp8", workload=workload,
        last_status="up", last_metrics={"requests_running": 4},
    )  # fmt: skip
    ApiPrice.objects.create(
        slug="llama-api", provider="acme", model_name="llama-70b", model=model, input_cache_hit_usd_per_mtok="1",
        input_cache_miss_usd_per_mtok="5", output_usd_per_mtok="20",
        quoted_on=timezone.now().date() - timedelta(days=10),
    )  # fmt: skip
    decision = record_decision(
        workload="chat", tier=1, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )
    GpuQuote.objects.create(
        sku=sku,
        provider=acme,
        usd_per_gpu_hour=Decimal("8.00"),
        quoted_on=timezone.now().date(),
    )
    refresh_snapshots()
    review_decisions()
    for role in ("finance", "viewer"):
        make_user(role, role)
    return decision


def test_a_flipped_decision_is_named_flagged_and_superseded_in_one_click(open_page, live_server, flipped):
    page = open_page("finance")
    banner = page.locator("#flipped-decisions")
    assert "1 recorded decision no longer holds" in banner.inner_text()
    assert "API is now cheaper" in banner.inner_text()
    page.click("#flipped-decisions a")
    page.wait_for_url(f"{live_server.url}/decisions/")
    row = page.locator("[data-review='flipped']")
    assert "no longer holds" in row.inner_text() and "46,080.00" in row.inner_text()
    page.click("button:has-text('Supersede: hosted API')")
    page.wait_for_url(f"{live_server.url}/decisions/")
    assert "superseded: Hosted API with our own gateway for Chat" in page.inner_text("body")
    newest = Decision.objects.order_by("-id").first()
    assert newest.supersedes_id == flipped.pk and newest.tier == Decision.Tier.API
    assert page.locator("button:has-text('Supersede')").count() == 0  # the new decision is the current one


def test_a_viewer_sees_the_flag_without_the_button(open_page, live_server, flipped):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/decisions/")
    assert "no longer holds" in page.locator("[data-review='flipped']").inner_text()
    assert page.locator("button:has-text('Supersede')").count() == 0


def test_a_stale_snapshot_is_said_to_be_stale_beside_its_figures(open_page, live_server, flipped):
    d = Deployment.objects.get(slug="llama")
    d.gpu_memory_utilization = 0.85
    d.save()  # a change: the receivers mark the snapshot stale; no worker runs in this test
    page = open_page("viewer")
    flag = page.locator("tr[data-deployment='llama'] .snapshot-flag")
    assert flag.inner_text() == "stale" and "Deployment llama changed" in flag.get_attribute("title")
    assert page.locator("tr[data-deployment='llama'] [role=meter]").get_attribute("aria-valuemax")
    page.goto(f"{live_server.url}/deployments/llama/")
    assert page.inner_text("#snapshot-state") == "stale"
