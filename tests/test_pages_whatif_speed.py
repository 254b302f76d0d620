"""What-if page: the decode step's breakdown as chart data (json_script + a canvas of the breakdown
kind) and a table, and the sensitivity band as text naming its most influential factor."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

URL = "/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16&kv_cache_dtype=fp8&context_tokens=131072"


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


def _json_script(html: str, element_id: str) -> dict:
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    assert match, f"no json_script {element_id}"
    return json.loads(match.group(1))


@pytest.mark.django_db
def test_breakdown_bar_data_and_table(viewer, catalog):
    html = viewer.get(URL, HTTP_HX_REQUEST="true").content.decode()
    data = _json_script(html, "whatif-breakdown")
    assert set(data) >= {"memory_ms", "compute_ms", "communication_ms", "overhead_ms", "overlap_saved_ms", "step_ms"}
    assert all(data[k] >= 0 for k in data)
    assert 'data-chart="breakdown" data-source="whatif-breakdown"' in html
    # The step is the larger of memory and compute plus communication and overhead (pp 1: one stage).
    step = max(data["memory_ms"], data["compute_ms"]) + data["communication_ms"] + data["overhead_ms"]
    step -= data["overlap_saved_ms"]  # what two-batch overlap hid
    assert data["step_ms"] == pytest.approx(step, rel=1e-9)
    # The numbers are also in the table beside the chart.
    table = html[html.index('id="whatif-breakdown-table"') :]
    assert f"{data['memory_ms']:.2f} ms" in table and f"{data['communication_ms']:.2f} ms" in table
    # No inline script: the chart is drawn by static/js/charts.js, which knows this kind.
    assert "<script>" not in html
    from django.contrib.staticfiles import finders

    with open(finders.find("js/charts.js")) as js:
        assert "breakdown(data)" in js.read()


@pytest.mark.django_db
def test_band_text_contains_the_central_tpot_and_names_a_factor(viewer, catalog):
    html = viewer.get(URL, HTTP_HX_REQUEST="true").content.decode()
    band = html[html.index('id="whatif-band"') :].split("</p>")[0]
    low, high, central = (
        float(x) for x in re.search(r"TPOT ([\d.]+)\u2013([\d.]+) ms \(central ([\d.]+)\)", band).groups()
    )
    assert low <= central <= high
    shown = re.search(r"Time per output token</th><td class=\"num\">([\d.]+) ms", html).group(1)
    assert float(shown) == central  # the band is around the estimate the page shows, not another one
    factor = re.search(r'id="whatif-band-factor">([^<]+)<', band).group(1)
    assert factor in {"memory bandwidth efficiency", "compute efficiency", "link efficiency", "step overhead"} or (
        factor.endswith(("efficiency", "overhead"))
    )
    assert "USD per million output tokens" in band  # the catalogue has an H200 quote in force
    assert 'id="whatif-sensitivity"' in html


@pytest.mark.django_db
def test_the_page_and_the_api_agree_on_the_step(viewer, catalog, viewer_api):
    """The page's breakdown is the API's for the same inputs (two front doors, one service)."""
    html = viewer.get(URL, HTTP_HX_REQUEST="true").content.decode()
    page = _json_script(html, "whatif-breakdown")
    batch = int(re.search(r"256-token answers, (\d+) sequences per replica", html).group(1))
    body = {
        "model": "kimi-k3",
        "sku": "h200-141gb",
        "tp": 8,
        "dp": 2,
        "ep": 16,
        "kv_cache_dtype": "fp8",
        "context_tokens": 131072,
        "prompt_tokens": 2048,
        "output_tokens": 256,
        "batch": batch,
    }
    api = viewer_api.post("/api/v1/estimate/", body, format="json").json()
    for key, value in page.items():
        assert api["breakdown"][key] == pytest.approx(value, rel=1e-12), key


@pytest.mark.django_db
def test_ttft_shows_its_definition_on_hover_and_idle_ttft_beside_it(viewer, catalog):
    """Issue 25: the TTFT row carries its definition (hover and a line) and its parts; idle TTFT is the next row."""
    from planner.engine import IDLE_TTFT_DEFINITION, TTFT_DEFINITION

    html = viewer.get(URL, HTTP_HX_REQUEST="true").content.decode()
    row = html[html.index('id="whatif-ttft"') :].split("</tr>")[0]
    assert "mean under load" in row and "queue" in row and "decode sharing" in row and "prefill" in row
    assert 'title="Mean time from a request reaching one replica' in row
    idle = html[html.index('id="whatif-idle-ttft"') :].split("</tr>")[0]
    assert "Idle time to first token" in idle and re.search(r"\d ms", idle)
    line = html[html.index('id="whatif-ttft-definition"') :].split("</td>")[0]
    assert TTFT_DEFINITION.code in line and IDLE_TTFT_DEFINITION.code in line
