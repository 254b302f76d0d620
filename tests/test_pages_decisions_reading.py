"""Issue 28, "Reading": a recorded decision's frozen inputs as a labelled table (its JSON behind a
<details>), loaded when its row of the log opens (or as a page of their own), the decision log and its
CSV with the deployment, SKU and review state, "tier" explained in
the glossary and linked from where tiers appear, and a favicon that is a real static file."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.utils.html import escape

from planner.breakeven import BreakevenRequest
from planner.decisions import frozen_inputs, record_decision
from planner.models import Decision
from planner.reviews import review_decisions

pytestmark = pytest.mark.django_db


@pytest.fixture
def decided(chat_served, client, make_user) -> Decision:
    """Chat on 2 replicas of Llama 3.1 70B (8 H100s), rent recorded; a viewer logged in."""
    decision = record_decision(
        workload="chat", tier=Decision.Tier.RENT, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )
    client.force_login(make_user("v", "viewer"))
    return decision


def _row(html: str, key: str) -> str:
    match = re.search(rf'<tr data-key="{key}"><th scope="row">(.*?)</th><td class="num">(.*?)</td></tr>', html)
    assert match, key
    return f"{match.group(1)}: {match.group(2)}"


def test_the_log_loads_each_decisions_frozen_inputs_when_its_row_opens(decided, client):
    """The log carries no frozen inputs (17 KB a decision, 25 a page): the row's details fetch them (HTMX) from
    the decision's inputs page, which is also a page of its own for the row's link without JavaScript."""
    log = client.get("/decisions/").content.decode()
    url = f"/decisions/{decided.pk}/inputs/"
    assert "frozen-inputs" not in log and "quotes_used" not in log
    assert f'<details hx-get="{url}" hx-trigger="toggle once" hx-target="find .frozen-body"' in log
    assert f'<a href="{url}">Open the quotes and frozen inputs</a>' in log
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "<html" not in fragment.content.decode()
    assert 'class="compact frozen-inputs"' in fragment.content.decode()
    assert fragment["Vary"] and "HX-Request" in fragment["Vary"]
    page = client.get(url).content.decode()
    assert "<html" in page and f"Decision {decided.pk}: quotes and frozen inputs" in page
    assert 'class="compact frozen-inputs"' in page and 'href="/decisions/"' in page
    assert client.get("/decisions/999999/inputs/").status_code == 404


def test_the_frozen_inputs_are_a_labelled_table_with_units_and_the_json_behind_it(decided, client):
    html = client.get(f"/decisions/{decided.pk}/inputs/", HTTP_HX_REQUEST="true").content.decode()
    table = html[html.index('class="compact frozen-inputs"') : html.index('class="frozen-json"')]
    assert "<pre>" not in table  # the JSON is not the table
    assert _row(table, "usd_per_gpu_hour") == "GPU price: 2.50 USD/GPU-h"
    assert _row(table, "output_usd_per_mtok") == "Output: 20.00 USD/Mtok"
    assert _row(table, "monthly_output_tokens") == "Output tokens a month: 1,500,000,000 tokens"
    assert _row(table, "cache_hit_rate") == "Prefix cache hit rate: 50.0 %"
    assert _row(table, "hbm_bytes_reported") == "HBM the driver reports: 79.18 GiB"
    assert _row(table, "gpu_memory_utilization") == "GPU memory utilization: 90.0 %"
    assert re.search(r'data-key="tpot_ms"><th scope="row">TPOT</th><td class="num">\d+\.\d ms<', table)
    for title in ("Prices", "Volume", "Workload chat", "Deployment llama", "Model llama-3.1-70b", "SKU h100-sxm-80gb"):
        assert f'scope="rowgroup">{title}</th>' in table, title
    json_part = html[html.index('class="frozen-json"') :]
    assert "<summary>The frozen inputs as JSON</summary><pre>" in json_part and "&quot;quotes_used&quot;" in json_part


def test_every_frozen_section_is_flat_and_nested_figures_stay_in_the_json(decided):
    sections = frozen_inputs(decided.inputs)
    assert all(not isinstance(row.value, dict | list) for s in sections for row in s.rows)
    assert "layer_groups" not in {row.key for s in sections for row in s.rows}
    assert all(s.rows for s in frozen_inputs({}))  # nothing frozen: no empty section


def test_the_log_and_its_csv_name_the_deployment_sku_and_review_state(decided, client):
    row = client.get("/decisions/").content.decode()
    assert '<td class="decision-target">llama<br><span class="muted">NVIDIA H100 SXM 80GB</span></td>' in row
    assert 'data-review-state="not reviewed yet"' in row
    review_decisions()
    row = client.get("/decisions/").content.decode()
    assert 'data-review-state="holds"' in row
    rows = list(csv.reader(io.StringIO(client.get("/decisions/export.csv").content.decode())))
    header, first = rows[0], rows[1]
    assert header[:8] == ["id", "decided_at", "workload", "tier", "deployment", "sku", "current", "review"]
    assert first[4:8] == ["llama", "NVIDIA H100 SXM 80GB", "yes", "holds"]


def test_a_superseded_decision_says_so_in_the_csv(decided, client):
    record_decision(
        workload="chat", tier=Decision.Tier.API, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )
    rows = list(csv.reader(io.StringIO(client.get("/decisions/export.csv?sort=decided").content.decode())))
    review = rows[0].index("review")
    assert [r[review] for r in rows[1:]] == ["superseded", "not reviewed yet"]


def test_tiers_are_explained_in_the_glossary_and_linked_where_they_appear(decided, client):
    glossary = client.get("/glossary/").content.decode()
    for value, label in Decision.Tier.choices:
        meaning = escape(Decision.TIER_MEANINGS[value])
        assert f'<dt id="tier-{value}">Tier {value}: {label}</dt><dd>{meaning}</dd>' in glossary
    assert "about 2 GB of runtime" in Decision.TIER_MEANINGS[Decision.Tier.SMALL_MODEL]
    log = client.get("/decisions/").content.decode()
    assert '<a href="/glossary/#tier-1" title="What tier 1 means">Tier 1</a>' in log
    assert 'href="/glossary/#tier-2">tier 2</a>' in client.get("/models/llama-3.1-70b/").content.decode()
    client.logout()
    assert client.get("/glossary/").status_code == 302  # logged-in users only


def test_every_page_links_a_favicon_that_is_a_static_file(decided, client):
    html = client.get("/decisions/").content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in html
    path = finders.find("img/favicon.svg")
    assert path and Path(path).read_text().startswith("<svg")
    assert client.get("/static/img/favicon.svg").status_code == 200
