"""The prefix-cache page: the example on first load, a trace posted (pasted or uploaded) through HTMX, the
chart's data with the engine's choice, errors beside their inputs, the link from a hybrid model's page."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

URL = "/prefix-cache/"
HEADER = "request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens\n"
TRACE = HEADER + "".join(f"r{i},{i},1500,sys,1000\n" for i in range(3))
FORM = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "engine": "vllm", "tp": "2", "retention": "dense"}


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
def test_first_load_shows_the_example_with_the_engines_block(viewer, catalog):
    html = viewer.get(URL).content.decode()
    assert 'id="prefix-block">544<' in html
    chart = _json_script(html, "prefix-chart-data")
    assert chart["labels"][chart["choice"]] == 544
    assert 'data-chart="prefix-cache" data-source="prefix-chart-data"' in html
    assert "<script>" not in html and "style=" not in html  # CSP: nothing inline


@pytest.mark.django_db
def test_posted_trace_partial(viewer, catalog):
    body = {**FORM, "trace_file": SimpleUploadedFile("t.csv", TRACE.encode(), content_type="text/csv")}
    r = viewer.post(URL, body, HTTP_HX_REQUEST="true")
    assert r.status_code == 200
    html = r.content.decode()
    assert 'id="prefix-result"' in html and "<h1>" not in html
    chart = _json_script(html, "prefix-chart-data")
    reuse = dict(zip(chart["labels"], chart["reuse_percent"], strict=True))
    assert reuse[16] == round(1_984 / 4_500 * 100, 2) and reuse[544] == round(1_088 / 4_500 * 100, 2)
    assert chart["ideal_percent"] == round(2_000 / 4_500 * 100, 2)
    assert 'class="engine-choice"' in html


@pytest.mark.django_db
def test_bad_trace_sits_beside_the_trace_input(viewer, catalog):
    body = {**FORM, "trace_text": HEADER + "r0,0,abc,sys,10\n"}
    r = viewer.post(URL, body)
    assert r.status_code == 400
    html = r.content.decode()
    assert "Row 1 (line 2), column prompt_tokens" in html
    r = viewer.post(URL, {**FORM, "engine_version": "0.1"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and "Check the inputs" in r.content.decode()


@pytest.mark.django_db
def test_hybrid_model_page_links_here(viewer, catalog):
    assert (
        'id="prefix-cache-link" href="/prefix-cache/?model=qwen3-next-80b-a3b"'
        in viewer.get("/models/qwen3-next-80b-a3b/").content.decode()
    )
    assert 'id="prefix-cache-link"' not in viewer.get("/models/llama-3.1-70b/").content.decode()


@pytest.mark.django_db
def test_every_figure_has_its_unit_and_no_byte_count_is_raw(viewer, catalog):
    """Issue 28, "Reading": bytes in binary units, padding and reuse in %, times in s or ms; no raw bytes."""
    body = {**FORM, "trace_text": TRACE}
    html = viewer.post(URL, body, HTTP_HX_REQUEST="true").content.decode()
    # The exact bytes only in brackets after the binary figure (``19.13 MiB (20,054,016 B)``).
    assert not re.search(r"(?<!\()\b\d{1,3}(,\d{3}){2,} B\b(?!\))", html), "a byte count written as raw bytes"
    assert "MiB (20,054,016 B) per GPU" in html
    facts = html[html.index('id="prefix-facts"') : html.index('id="prefix-granularities"')]
    assert 'class="bytes"' in facts and "MiB</span>" in facts
    assert re.search(r"padding \d[\d,.]* % of the unpadded page", facts)
    grans = html[html.index('id="prefix-granularities"') : html.index('id="prefix-modes"')]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", grans, re.S)[1:]
    assert rows
    for row in rows:
        cells = re.findall(r'<td class="num">(.*?)</td>', row, re.S)
        assert cells[2].endswith(" %") and cells[7].endswith((" %", "\u2013")) and cells[8].endswith(" s"), cells
        assert "MiB" in cells[6] or "KiB" in cells[6] or "GiB" in cells[6] or cells[6].startswith("<span")
