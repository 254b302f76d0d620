"""Issue 15's tables in Chromium: sort by clicking a header, search narrowing the rows without a page
load, the CSV of exactly those rows, two plans compared side by side, and a polls range chosen."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from test_pages_tables import _done_plan

from fleet.models import (
    Cluster,
    Deployment,
    EndpointPoll,
    EndpointPollHourly,
    HardwareSku,
    ModelSpec,
    Provider,
    Workload,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    call_command("load_catalog", stdout=StringIO())
    workload = Workload.objects.create(
        slug="chat", name="Chat", team="dev", requests_per_day=100_000, mean_prompt_tokens=2_000,
        mean_output_tokens=300, p95_context_tokens=8_000, prefix_cache_hit_rate=0.5, peak_concurrency=64,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    make_user("viewer", "viewer")
    return workload


def _mark(page) -> None:
    """A flag on the window: still there afterwards means no page load happened."""
    page.evaluate("window.__noReload = 'kept'")


def _kept(page) -> bool:
    return page.evaluate("window.__noReload") == "kept"


def _contexts(page) -> list[int]:
    """The max context column of the models table, as numbers (shown with thousands separators)."""
    cells = page.locator("#models-table tbody tr td:nth-child(6)").all_inner_texts()
    return [int(t.replace(",", "")) for t in cells]


def test_sort_models_by_clicking_a_header(open_page, live_server, world):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/models/")
    _mark(page)
    page.click("#models-table th[data-sort-key=context] a")
    page.wait_for_selector("#models-table th[data-sort-key=context][aria-sort=ascending]")
    assert "sort=context" in page.url and _kept(page)
    contexts = _contexts(page)
    assert contexts == sorted(contexts) and len(contexts) > 1
    page.click("#models-table th[data-sort-key=context] a")  # again: the other way
    page.wait_for_selector("#models-table th[data-sort-key=context][aria-sort=descending]")
    contexts = _contexts(page)
    assert contexts == sorted(contexts, reverse=True) and "sort=-context" in page.url and _kept(page)


def test_search_narrows_rows_without_reload_and_the_csv_has_them(open_page, live_server, world):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/models/")
    before = page.locator("#models-table tbody tr").count()
    _mark(page)
    page.fill("#models-table-q", "kimi")
    page.wait_for_url(lambda url: "q=kimi" in url)
    page.locator("#models-table-count", has_text="kimi").wait_for()
    slugs = page.locator("#models-table tbody tr[data-model]").evaluate_all("rows => rows.map(r => r.dataset.model)")
    assert 0 < len(slugs) < before and all("kimi" in s for s in slugs) and _kept(page)
    assert page.locator("#models-table-q").input_value() == "kimi"  # the box kept what was typed
    with page.expect_download() as info:
        page.click("#models-table-csv")
    download = info.value
    assert download.suggested_filename == f"models-{timezone.now().date():%Y-%m-%d}.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert [r["slug"] for r in rows] == slugs


def test_compare_two_plans_ticked_on_the_list(open_page, live_server, world):
    a = _done_plan("kimi-k3", world, "h200-141gb", 1.5, 30.0, 16)
    b = _done_plan("kimi-k3", world, "b200-192gb", 0.75, 30.0, 8)
    page = open_page("viewer")
    page.goto(f"{live_server.url}/plans/")
    page.check(f"input[name=plan][value='{a.pk}']")
    page.check(f"input[name=plan][value='{b.pk}']")
    page.click("#compare-ticked")
    # The list is newest first, so the two ticked come as a=b, b=a.
    page.wait_for_url(lambda url: url.endswith(f"/plans/compare/?a={b.pk}&b={a.pk}"))
    sku = page.locator("#plan-compare tr[data-figure=SKU]")
    assert "differs" in (sku.get_attribute("class") or "")
    assert "NVIDIA H200" in sku.inner_text() and "NVIDIA B200" in sku.inner_text()
    tpot = page.locator("#plan-compare tr[data-figure='TPOT (ms)']")
    assert "differs" not in (tpot.get_attribute("class") or "")
    page.goto(f"{live_server.url}/plans/")
    page.check(f"input[name=plan][value='{a.pk}']")
    page.click("#compare-ticked")  # only one ticked: said, not a 500
    assert "Tick two plans to compare (1 ticked)" in page.inner_text("#compare-errors")


def test_choose_a_polls_range(open_page, live_server, world):
    cluster = Cluster.objects.create(
        slug="h100", name="H100 pool", sku=HardwareSku.objects.get(slug="h100-sxm-80gb"), nodes=1,
        provider=Provider.objects.ensure("p"),
        team="t",
    )  # fmt: skip
    d = Deployment.objects.create(
        slug="llama", cluster=cluster, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4, replicas=2,
        kv_cache_dtype="fp8", workload=world,
    )  # fmt: skip
    now = timezone.now()
    EndpointPoll.objects.bulk_create(
        EndpointPoll(deployment=d, polled_at=now - timedelta(minutes=m), status="up", requests_running=3.0,
                     ttft_p95_ms=700.0, itl_p95_ms=30.0, kv_cache_usage=0.3)
        for m in range(0, 120, 2)
    )  # fmt: skip
    old = (now - timedelta(days=20)).replace(minute=0, second=0, microsecond=0)
    EndpointPollHourly.objects.create(
        deployment=d, hour=old, polls=240, up_polls=240, busy_polls=200, requests_running_avg=5.0,
        requests_running_max=12.0, ttft_p95_ms_max=1800.0, itl_p95_ms_max=45.0,
    )  # fmt: skip
    page = open_page("viewer")
    page.goto(f"{live_server.url}/deployments/llama/")
    page.wait_for_selector("#poll-range canvas[data-drawn='1']")
    assert "hourly" not in page.inner_text("#poll-range-summary")
    _mark(page)
    page.select_option("#poll-range select[name=range]", "30d")
    page.locator("#poll-range-summary", has_text="hourly rollups").wait_for()
    assert "range=30d" in page.url and _kept(page)
    assert "300 polls" in page.inner_text("#poll-range-summary")  # 240 rolled up + 60 raw
    page.wait_for_selector("#poll-range canvas[data-source=range-latency-data][data-drawn='1']")
    # From-to: choosing it asks for the dates; given (and Show), that day is drawn from its rollup.
    page.select_option("#poll-range select[name=range]", "custom")
    page.locator("#poll-range-dates").wait_for()
    page.fill("#poll-range input[name=start]", f"{old:%Y-%m-%d}")
    page.fill("#poll-range input[name=end]", f"{old:%Y-%m-%d}")
    page.click("#poll-range button:has-text('Show')")
    page.locator("#poll-range-summary", has_text="240 polls").wait_for()
    assert "range=custom" in page.url and f"start={old:%Y-%m-%d}" in page.url and _kept(page)


def test_fleet_search_and_order_without_reload(open_page, live_server, world):
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    for slug, provider in (("alpha", "zeta-cloud"), ("beta", "acme"), ("gamma", "acme")):
        Cluster.objects.create(
            slug=slug, name=slug.title(), sku=sku, nodes=1, provider=Provider.objects.ensure(provider), team="t"
        )
    page = open_page("viewer")
    page.goto(f"{live_server.url}/")
    _mark(page)
    page.select_option("#fleet-sort", "-name")
    page.wait_for_url(lambda url: "sort=-name" in url)
    page.locator("#fleet-table .cluster h2 a").first.filter(has_text="Gamma").wait_for()
    page.fill("#fleet-q", "acme")
    page.wait_for_url(lambda url: "q=acme" in url)
    page.locator("#fleet-count", has_text="2 clusters").wait_for()
    assert page.locator("#fleet-table .cluster h2 a").all_inner_texts() == ["Gamma", "Beta"] and _kept(page)
