"""Issue 28 in Chromium: a recorded decision's frozen inputs open as a labelled table with units (the JSON
one more click away, behind its own <details>), fetched when the row opens (the log carries none of them),
the tier links to the glossary, no favicon request fails, and a viewer who presses "Recompute now" on rent
vs API is told it is queued."""

from __future__ import annotations

import pytest

from planner.breakeven import BreakevenRequest
from planner.decisions import record_decision
from planner.models import Decision

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def decided(chat_served, make_user):
    from tests.roles import ensure_role_groups

    ensure_role_groups()
    make_user("viewer", "viewer")
    return record_decision(
        workload="chat", tier=Decision.Tier.RENT, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )


def test_the_frozen_inputs_open_as_a_labelled_table(open_page, live_server, decided):
    page = open_page("viewer")
    failed = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(f"{live_server.url}/decisions/")
    row = page.locator(f'tr.decision[data-decision="{decided.pk}"]')
    table = row.locator("table.frozen-inputs")
    assert table.count() == 0  # not in the log: loaded when the row's details open
    with page.expect_response(f"{live_server.url}/decisions/{decided.pk}/inputs/"):
        row.locator("summary", has_text="Quotes and frozen inputs").click()
    table.wait_for()
    assert table.is_visible()
    assert "h100-sxm-80gb" in row.locator(".frozen-body").inner_text()  # the quotes used, above the table
    assert table.locator('tr[data-key="cache_hit_rate"] td').inner_text() == "50.0 %"
    assert table.locator('tr[data-key="output_usd_per_mtok"] td').inner_text() == "20.00 USD/Mtok"
    assert table.locator("th[scope=rowgroup]", has_text="SKU h100-sxm-80gb").is_visible()
    json = row.locator("details.frozen-json pre")
    assert not json.is_visible()
    row.locator("summary", has_text="The frozen inputs as JSON").click()
    assert '"quotes_used"' in json.inner_text()
    row.locator("a", has_text="Tier 1").click()
    page.wait_for_url(f"{live_server.url}/glossary/#tier-1")
    assert page.locator("#tier-1").is_visible()
    icon = page.eval_on_selector("link[rel=icon]", "l => l.href")
    assert icon.endswith("/static/img/favicon.svg") and page.request.get(icon).status == 200
    assert not [u for u in failed if "favicon" in u], failed


def test_a_viewer_pressing_recompute_is_told_it_is_queued(open_page, live_server, decided):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/rent-vs-api/?workload=chat&deployment=llama&api_price=llama-api")
    page.click("#recompute button")
    page.wait_for_selector("#recompute-queued")
    assert "queued" in page.inner_text("#recompute-queued")
