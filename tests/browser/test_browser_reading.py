"""Issue 15's "Reading" defects as a user meets them in Chromium: byte counts in binary units with the
exact bytes on hover, TTFT and TPOT on their own axes with their SLO lines, the capacity curve on log
axes with max_model_len marked, the GPU's memory as a line on the memory envelope, and pages that fit
a 375 px phone screen with a menu that opens without any inline script."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from fleet.models import Cluster, Deployment, EndpointPoll, HardwareSku, ModelSpec, Provider, Workload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GIB = 1024**3


@pytest.fixture
def world(make_user):
    call_command("load_catalog", stdout=StringIO())
    workload = Workload.objects.create(
        slug="agent", name="Coding agent", team="dev", requests_per_day=200_000, mean_prompt_tokens=12_000,
        mean_output_tokens=600, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9, peak_concurrency=256,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    cluster = Cluster.objects.create(slug="pool", name="Pool", sku=HardwareSku.objects.get(slug="h100-sxm-80gb"),
                                     nodes=1, provider=Provider.objects.ensure("acme"), team="platform")  # fmt: skip
    deployment = Deployment.objects.create(
        slug="llama", cluster=cluster, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4, max_model_len=32768,
        kv_cache_dtype="fp8", last_status="up", last_metrics={"requests_running": 3}, workload=workload,
    )  # fmt: skip
    now = timezone.now()
    EndpointPoll.objects.bulk_create(
        [
            EndpointPoll(deployment=deployment, polled_at=now - timedelta(minutes=10 - i), status="up",
                         ttft_p95_ms=900 + 40 * i, itl_p95_ms=30 + i, itl_p50_ms=25 + i, requests_running=3)
            for i in range(10)
        ]
    )  # fmt: skip
    make_user("viewer", "viewer")
    make_user("admin", "admin")


def _chart(page, selector: str) -> dict:
    """The drawn Chart.js instance's configuration as the page holds it (datasets, scales)."""
    page.wait_for_selector(f"{selector}[data-drawn='1']", state="attached")
    return page.eval_on_selector(
        selector,
        """canvas => { const c = Chart.getChart(canvas); return {
            datasets: c.data.datasets.map(d => ({ label: d.label, axis: d.yAxisID || null, type: d.type || null,
                                                 data: d.data })),
            scales: Object.fromEntries(Object.entries(c.options.scales).map(([id, s]) =>
                [id, { type: s.type, position: s.position || null, title: s.title && s.title.text }])),
            drawn: Object.keys(c.scales) }; }""",
    )


def test_byte_counts_show_binary_units_with_the_exact_bytes_on_hover(open_page, live_server, world):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16")
    gpu = page.locator("#whatif-gpu-memory .bytes")
    # The driver's figure (the catalogue's hbm_bytes_reported), never the marketing 141 GB (issue 24).
    assert gpu.inner_text() == "139.81 GiB"  # 150,119,844,413 / 2**30
    assert gpu.get_attribute("title") == "150,119,844,413 bytes (binary units: 1 GiB = 1,073,741,824 bytes)"
    gpu.hover()
    result = page.inner_text("#whatif-result")
    assert not re.search(r"\d B\b", result), "a raw byte count beside the binary units"
    for span in page.locator("#whatif-result .bytes").all():
        title = span.get_attribute("title")
        assert re.fullmatch(r"[\d,]+ bytes( \(binary units: .*\))?", title), title
        assert re.fullmatch(r"-?[\d,.]+ (B|KiB|MiB|GiB|TiB)", span.inner_text()), span.inner_text()
    page.goto(f"{live_server.url}/models/kimi-k3/")
    state = page.locator("dt:has-text('State per sequence') + dd .bytes")
    assert state.inner_text() == "428.55 MiB" and state.get_attribute("title").startswith("449,372,160 bytes")


def test_ttft_and_tpot_have_their_own_axes_with_their_slo_lines(open_page, live_server, world):
    """On one axis TPOT (tens of ms) and its SLO lay flat under TTFT (thousands)."""
    page = open_page("viewer")
    page.goto(f"{live_server.url}/deployments/llama/")
    chart = _chart(page, "canvas[data-source='latency-data']")
    assert {"ttft", "tpot"} <= set(chart["drawn"])
    assert chart["scales"]["ttft"]["position"] == "left" and chart["scales"]["tpot"]["position"] == "right"
    assert chart["scales"]["ttft"]["title"] == "TTFT p95 (ms)" and chart["scales"]["tpot"]["title"] == "TPOT p95 (ms)"
    by_label = {d["label"]: d for d in chart["datasets"]}
    assert by_label["TTFT SLO (2,000 ms)"]["axis"] == "ttft" and set(by_label["TTFT SLO (2,000 ms)"]["data"]) == {2000}
    assert by_label["TPOT SLO (50 ms)"]["axis"] == "tpot" and set(by_label["TPOT SLO (50 ms)"]["data"]) == {50}
    assert by_label["TTFT p95 (ms)"]["axis"] == "ttft" and by_label["Time per output token p95 (ms)"]["axis"] == "tpot"
    tpot_axis = page.eval_on_selector(
        "canvas[data-source='latency-data']", "c => { const s = Chart.getChart(c).scales.tpot; return [s.min, s.max]; }"
    )
    assert tpot_axis[1] <= 100  # scaled to TPOT and its SLO, not to TTFT's thousands


def test_capacity_curve_on_log_axes_with_max_model_len_marked(open_page, live_server, world):
    from planner.snapshots import refresh_snapshots

    refresh_snapshots()  # the worker's part: the curve is the stored snapshot's admitted sequences
    page = open_page("viewer")
    page.goto(f"{live_server.url}/deployments/llama/")
    chart = _chart(page, "canvas[data-chart='capacity']")
    assert chart["scales"]["x"]["type"] == "logarithmic" and chart["scales"]["y"]["type"] == "logarithmic"
    mark = next(d for d in chart["datasets"] if d["label"].startswith("max_model_len"))
    assert mark["label"] == "max_model_len: 32,768 tokens"
    assert {p["x"] for p in mark["data"]} == {32768} and len(mark["data"]) == 2
    assert "max_model_len: 32,768 tokens" in page.inner_text("#curve-mark-text")


def test_memory_envelope_draws_the_gpu_memory_line(open_page, live_server, world):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/deployments/llama/")
    chart = _chart(page, "canvas[data-chart='envelope']")
    line = next(d for d in chart["datasets"] if d["label"].startswith("GPU memory"))
    # The H100's driver figure (the catalogue's hbm_bytes_reported, 85,018,877,624 bytes), not 80e9.
    assert line["type"] == "line" and [p["x"] for p in line["data"]] == [pytest.approx(85_018_877_624 / GIB)] * 2
    assert line["label"] == "GPU memory (79.18 GiB)"
    assert "mark" in chart["drawn"]
    assert page.locator("#envelope-gpu .bytes").get_attribute("title").startswith("85,018,877,624 bytes")
    page.goto(f"{live_server.url}/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16")
    chart = _chart(page, "canvas[data-chart='envelope']")
    assert any(d["label"] == "GPU memory (139.81 GiB)" for d in chart["datasets"])


PHONE_PAGES = ["/", "/clusters/pool/", "/deployments/llama/", "/models/", "/models/kimi-k3/", "/what-if/",
               "/plans/", "/rent-vs-api/", "/spend/", "/decisions/", "/deployments/new/", "/quotes/", "/api-prices/",
               "/skus/", "/workloads/", "/quotes/new/"]  # fmt: skip


def test_pages_fit_a_phone_and_the_menu_opens_without_inline_script(open_page, live_server, browser, world):
    page = open_page("admin")
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    page.set_viewport_size({"width": 375, "height": 800})
    for path in PHONE_PAGES:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{path} is {width} px wide at 375"
        clipped = page.evaluate(
            "[...document.querySelectorAll('main select, main input, main textarea')]"
            ".filter(e => e.getBoundingClientRect().right > 375).map(e => e.name)"
        )
        assert clipped == [], f"{path}: inputs past the screen's edge {clipped}"
    menu = page.locator("header .menu")
    assert not page.locator("nav[aria-label=Main] a:has-text('Spend')").is_visible()  # folded away
    menu.locator("summary").click()
    spend = page.locator("nav[aria-label=Main] a:has-text('Spend')")
    assert spend.is_visible()
    spend.click()
    page.wait_for_url(f"{live_server.url}/spend/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    page.set_viewport_size({"width": 1280, "height": 900})  # on a wide screen the links show without a click
    page.goto(f"{live_server.url}/")
    assert page.locator("nav[aria-label=Main] a:has-text('Spend')").is_visible()
    assert violations == []
