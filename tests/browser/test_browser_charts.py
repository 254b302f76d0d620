"""Charts and phones (issue 28) in Chromium, on a desktop and a 375 x 812 phone: the charts fill their
column, switching the polls' range (and going back) reports no Content-Security-Policy violation, the
SLO lines are drawn above the data with the polls past them marked, the decode step's parts overlap
rather than stack, rent steps up past the cluster's capacity, and no main page is wider than a phone."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from test_browser_csp import MAIN_PAGES, fleet  # noqa: F401  (fleet: the world, as a fixture)

from fleet.models import Deployment, EndpointPoll, Workload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 812}
VIEWPORTS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
#: Renting 8 H100s that serve 1,000M output tokens a month, for a workload of 3,600M.
RENT_VS_API = (
    "/rent-vs-api/?workload=agent&gpus=8&sku=h100-sxm-80gb&api_price=kimi-k3-api"
    "&capacity_output_tokens_per_month=1000000000"
)
#: Pages beyond MAIN_PAGES with charts or wide tables.
CHART_PAGES = [
    "/rent-vs-api/?workload=agent&gpus=8&sku=h100-sxm-80gb&api_price=kimi-k3-api",
    "/what-if/?model=llama-3.1-70b&sku=h100-sxm-80gb&gpus=4&tp=4&kv_cache_dtype=fp8",
    RENT_VS_API,
    "/route/",
    "/quotes/",
    "/api-prices/",
    "/skus/",
    "/workloads/",
    "/bills/",
    "/prefix-cache/",
]
TPOT_SLO = 50  # the fleet world's workload


@pytest.fixture
def polled(fleet):  # noqa: F811
    """Fifty polls a minute apart, every fifth one's TPOT p95 (60 ms) past the SLO (50 ms)."""
    d = Deployment.objects.get(slug="llama")
    d.workload = Workload.objects.get(slug="agent")
    d.save()
    now = timezone.now().replace(microsecond=0)
    EndpointPoll.objects.bulk_create(
        EndpointPoll(deployment=d, polled_at=now - timedelta(minutes=m), status="up", requests_running=float(m % 7),
                     kv_cache_usage=0.5, generation_tokens_per_s=1500.0, ttft_p95_ms=800.0 + m,
                     itl_p95_ms=60.0 if m % 5 == 0 else 40.0, itl_p50_ms=30.0)
        for m in range(50)
    )  # fmt: skip
    return d


def _watch(page) -> list[str]:
    """The page's Content-Security-Policy reports and script errors, as they come."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    return problems


def _chart(page, selector: str) -> dict:
    """What Chart.js drew on ``selector``: its datasets (label, order, data) in drawing order (last on top)."""
    return page.locator(selector).evaluate(
        """c => { const ch = Chart.getChart(c);
                  const metas = ch.getSortedVisibleDatasetMetas().reverse();  // Chart.js draws the last of these first
                  return { drawn: metas.map(m => ch.data.datasets[m.index].label),
                           datasets: ch.data.datasets.map(d => ({ label: d.label, data: d.data, order: d.order })),
                           stacked: !!(ch.options.scales.x && ch.options.scales.x.stacked),
                           labels: ch.data.labels || [],
                           ticks: Object.fromEntries(Object.entries(ch.scales).map(([id, s]) =>
                             [id, s.ticks.map(t => t.label).filter(l => l !== "" && l !== undefined)])) }; }"""
    )


def _widths(page) -> list[dict]:
    """Each drawn chart's canvas width against its column's content width (the .chart box's parent)."""
    return page.evaluate(
        """() => [...document.querySelectorAll("canvas[data-chart][data-drawn='1']")].map(c => {
             const col = c.parentElement.parentElement, cs = getComputedStyle(col);
             const inner = col.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
             const box = c.getBoundingClientRect();
             return { source: c.dataset.source, canvas: box.width, column: inner, height: box.height,
                      boxed: c.parentElement.classList.contains("chart") }; })"""
    )


@VIEWPORTS
def test_range_controls_keep_the_console_clean_and_charts_fill_their_column(open_page, live_server, polled, viewport):
    page = open_page("admin")
    page.set_viewport_size(viewport)
    problems = _watch(page)
    page.goto(f"{live_server.url}/deployments/llama/")
    page.wait_for_selector("canvas[data-source='range-latency-data'][data-drawn='1']")
    for value in ["24h", "7d", "30d", "custom", "1h"]:
        with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
            page.select_option("select[name=range]", value)
        page.wait_for_selector("canvas[data-source='range-latency-data'][data-drawn='1']", state="attached")
        page.wait_for_timeout(200)  # settled, redrawn
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        page.click("#poll-range-form button[type=submit]")
    page.wait_for_timeout(200)
    for _ in range(3):  # Back: a page reload (no htmx snapshot bringing back the charts' style attributes)
        page.go_back()
        page.wait_for_load_state("load")
        page.wait_for_selector("canvas[data-source='range-latency-data'][data-drawn='1']")
    assert problems == []
    widths = _widths(page)
    assert {w["source"] for w in widths} >= {"latency-data", "range-latency-data", "curve-data", "envelope-data"}
    for w in widths:
        assert w["boxed"] and w["canvas"] >= 0.9 * w["column"], w
        assert w["canvas"] <= viewport["width"] and w["height"] >= 130, w
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]


def test_slo_lines_are_drawn_on_top_and_polls_past_them_marked(open_page, live_server, polled):
    page = open_page("admin")
    page.goto(f"{live_server.url}/deployments/llama/")
    for source in ["latency-data", "range-latency-data"]:
        chart = _chart(page, f"canvas[data-source='{source}']")
        slos = [label for label in chart["drawn"] if "SLO (" in label]
        assert len(slos) == 2, chart["drawn"]
        assert set(chart["drawn"][-2:]) == set(slos)  # drawn last: above the data and the marks
        marks = next(d for d in chart["datasets"] if d["label"] == "TPOT p95 over the SLO")
        over = [v for v in marks["data"] if v is not None]
        assert over and all(v > TPOT_SLO for v in over)  # the 60 ms polls, and only they
        assert len(over) == 10 if source == "range-latency-data" else len(over) >= 2
    # The polls tables mark the same cells.
    assert page.locator("#live td.over-slo").count() >= 2
    assert page.locator("#poll-range-table td.over-slo").count() == 10
    assert all(float(t) > TPOT_SLO for t in page.locator("#poll-range-table td.over-slo").all_text_contents())


def test_capacity_curve_labels_powers_of_ten(open_page, live_server, polled):
    page = open_page("admin")
    page.goto(f"{live_server.url}/deployments/llama/")
    chart = _chart(page, "canvas[data-chart='capacity']")
    for axis in ("x", "y"):
        labels = chart["ticks"][axis]
        assert 1 <= len(labels) <= 8, labels  # 1K, 10K, 100K, 1M: no crowd of 2,000 3,000 ...
        assert all(len(label) <= 5 for label in labels), labels


def test_decode_step_parts_overlap_rather_than_stack(open_page, live_server, fleet):  # noqa: F811
    page = open_page("admin")
    page.goto(f"{live_server.url}/what-if/?model=llama-3.1-70b&sku=h100-sxm-80gb&gpus=4&tp=4&kv_cache_dtype=fp8")
    page.wait_for_selector("canvas[data-chart='breakdown'][data-drawn='1']")
    chart = _chart(page, "canvas[data-chart='breakdown']")
    assert not chart["stacked"]
    parts = dict(zip(chart["labels"], chart["datasets"][0]["data"], strict=True))
    step = parts.pop("Whole step")
    served = json.loads(page.locator("#whatif-breakdown").text_content())
    assert step == served["step_ms"] and all(v <= step + 1e-9 for v in parts.values()), parts
    assert sum(parts.values()) > step  # they do overlap: stacked, they would run past the step


def test_rent_steps_up_past_the_cluster_capacity(open_page, live_server, fleet):  # noqa: F811
    page = open_page("admin")
    page.goto(f"{live_server.url}{RENT_VS_API}")
    page.wait_for_selector("canvas[data-chart='breakeven'][data-drawn='1']")
    served = json.loads(page.locator("#breakeven-data").text_content())
    capacity = served["capacity"]
    assert capacity
    chart = _chart(page, "canvas[data-chart='breakeven']")
    rent = next(d for d in chart["datasets"] if d["label"].startswith("Rent"))["data"]
    within = {p["y"] for p in rent if p["x"] < capacity}
    at = sorted(p["y"] for p in rent if p["x"] == capacity)
    beyond = [p["y"] for p in rent if p["x"] > capacity]
    (one,) = within
    assert at == [one, 2 * one]  # the ceiling: a vertical step to a second cluster
    assert beyond and min(beyond) >= 2 * one and max(beyond) > 2 * one  # and on, a cluster per capacity
    assert [p["y"] for p in rent] == sorted(p["y"] for p in rent)  # it never falls


@pytest.mark.parametrize("path", MAIN_PAGES + CHART_PAGES)
def test_every_main_page_fits_a_phone(open_page, live_server, polled, path):
    page = open_page("admin")
    page.set_viewport_size(PHONE)
    problems = _watch(page)
    page.goto(f"{live_server.url}{path}")
    page.wait_for_load_state("load")
    page.wait_for_timeout(200)  # the charts drawn
    assert problems == []
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    for w in _widths(page):
        assert w["canvas"] <= PHONE["width"] and w["height"] >= 130, w
    if path == "/spend/":  # the spend trend: no longer squashed to a strip
        assert page.locator("#spend-trend[data-drawn='1']").bounding_box()["height"] >= 200
    # A table wider than the screen scrolls inside its card, its first column held in place.
    tables = page.evaluate(
        """() => [...document.querySelectorAll(".card table")].filter(t => t.offsetParent !== null).map(t => {
             const box = t.closest(".card"), first = t.querySelector("tr > :first-child");
             return { wide: t.scrollWidth > box.clientWidth, scrolls: getComputedStyle(box).overflowX,
                      sticky: first ? getComputedStyle(first).position : "none" }; })"""
    )
    for t in tables:
        assert t["sticky"] == "sticky" and (not t["wide"] or t["scrolls"] == "auto"), t


def test_fleet_table_scrolls_to_free_with_the_deployment_in_view(open_page, live_server, fleet):  # noqa: F811
    page = open_page("admin")
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/")
    row = page.locator("tr[data-deployment='llama']")
    free = page.locator("#fleet-table th", has_text="Free")
    box = page.locator("#fleet-table")
    box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
    assert free.bounding_box()["x"] + free.bounding_box()["width"] <= PHONE["width"]
    first = row.locator("td").first.bounding_box()
    assert first["x"] >= 0 and first["x"] < PHONE["width"] / 2  # the deployment's name stays in view
    scrolled = box.evaluate("b => b.scrollLeft")
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):  # the 5 s refresh
        pass
    page.wait_for_timeout(200)
    assert scrolled > 0 and page.locator("#fleet-table").evaluate("b => b.scrollLeft") == scrolled
