"""The prefix-cache page in Chromium: the chart is drawn with the engine's block marked, and a trace
uploaded through the form redraws it in place (HTMX), under the strict CSP (no console errors)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACE = "request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens\n" + "".join(
    f"r{i},{i},1500,sys,1000\n" for i in range(3)
)

CHART = """() => {
  const canvas = document.querySelector('canvas[data-chart="prefix-cache"]');
  const chart = Chart.getChart(canvas);
  const marker = chart.data.datasets.find((d) => d.label.startsWith("Engine's choice"));
  return { drawn: canvas.dataset.drawn, choice: canvas.dataset.choice, labels: chart.data.labels,
           marker: marker ? marker.data : null, markerLabel: marker ? marker.label : null,
           reuse: chart.data.datasets[0].data };
}"""


@pytest.fixture
def world(make_user):
    call_command("load_catalog", stdout=StringIO())
    make_user("viewer", "viewer")


def test_chart_marks_the_engines_block_and_redraws_after_an_upload(open_page, live_server, world, tmp_path):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/models/")  # leave the fleet page first (its own swaps are not this test's)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.goto(f"{live_server.url}/prefix-cache/")
    page.wait_for_selector('canvas[data-chart="prefix-cache"][data-drawn="1"]')
    assert not errors, errors
    first = page.evaluate(CHART)
    assert first["choice"] == "544"
    index = first["labels"].index("544 (engine)")
    assert first["marker"][index] is not None and sum(v is not None for v in first["marker"]) == 1
    assert "vllm 0.33.0 (align): 544 tokens" in first["markerLabel"]
    assert page.locator("#prefix-granularities tr.engine-choice").inner_text().startswith("544")

    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    page.select_option("select[name=retention]", "dense")
    page.set_input_files("input[name=trace_file]", str(trace))
    with page.expect_response(lambda r: r.url.endswith("/prefix-cache/") and r.request.method == "POST"):
        page.click("button:has-text('Analyse')")
    page.wait_for_function("() => document.querySelector('#prefix-verdict').innerText.includes('(dense)')")
    page.wait_for_selector('canvas[data-chart="prefix-cache"][data-drawn="1"]')
    after = page.evaluate(CHART)
    reuse = dict(zip(after["labels"], after["reuse"], strict=True))
    assert reuse["544 (engine)"] == round(1_088 / 4_500 * 100, 2)
    assert reuse["16"] == round(1_984 / 4_500 * 100, 2)
    assert page.locator("h1").count() == 1  # the partial replaced the result, not the page
    assert not errors, errors
