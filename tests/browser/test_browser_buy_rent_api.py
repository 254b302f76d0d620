"""Finance records a buy-vs-rent-vs-API decision in Chromium (issue 26, "Browser tests: finance records a
buy-vs-rent-vs-API decision").

Finance opens rent vs API for the coding agent on 8 H100s at the SKU's price in force on 2026-08-01 against
Kimi K3's API, opens "Or buy the same GPUs", gives the purchase and site figures and compares again. The
buy figures are the hand-worked node of tests/engine/test_costs_owned.py: one HGX H100 node at 31,250 USD
per GPU = 250,000 USD up front; 48 months straight-line = 5,208.33; energy 8 x 700 W x PUE 1.3 x 720 h =
5,241.6 kWh x 0.12 = 628.99; one rack at 1,500.00; support 8% a year = 1,666.67: 9,003.99 USD a month.
The chart carries the flat buy line; the tier the page preselects is the cheapest of three; the decision
is recorded with the three figures, and the decisions page lists it. No CSP violation on the way.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Workload
from planner.models import Decision

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def catalog(make_user):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="agent", name="Coding agent", team="dev", requests_per_day=200_000, mean_prompt_tokens=12_000,
        mean_output_tokens=600, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9, peak_concurrency=256,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    make_user("finance", "finance")


def test_finance_records_a_buy_vs_rent_vs_api_decision(open_page, live_server, catalog):
    page = open_page("finance")
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    url = f"{live_server.url}/rent-vs-api/?workload=agent&gpus=8&sku=h100-sxm-80gb&api_price=kimi-k3-api&on=2026-08-01"
    page.goto(url)
    assert page.locator("#monthly-buy").count() == 0  # no buy figures given: rent vs API only
    page.click("details.buy-inputs summary")
    for name, value in {
        "buy_usd_per_gpu": "31250",
        "buy_pue": "1.3",
        "buy_usd_per_kwh": "0.12",
        "buy_racks": "1",
        "buy_usd_per_rack_month": "1500",
        "buy_support_share_per_year": "0.08",
    }.items():
        page.fill(f"input[name={name}]", value)
    page.click("button:has-text('Compare')")
    page.wait_for_selector("#monthly-buy")
    assert page.inner_text("#monthly-buy") == "9,003.99"
    assert page.inner_text("#buy-upfront") == "250,000.00"
    cheapest = page.inner_text("#cheapest")
    assert cheapest in ("rent", "api", "buy")
    assert page.inner_text("#buy-verdict").startswith(
        {"buy": "Buying is cheapest", "rent": "Renting is cheapest", "api": "The API"}[cheapest]
    )
    labels = page.evaluate(
        "() => Chart.getChart(document.querySelector('canvas[data-chart=breakeven]')).data.datasets.map(d => d.label)"
    )
    assert "Buy (USD/month, with depreciation)" in labels
    tier = {"rent": "1", "api": "3", "buy": "4"}[cheapest]
    assert page.locator("select[name=tier]").input_value() == tier
    page.select_option("select[name=tier]", "4")
    page.fill("input[name=note]", "own the node: cheaper than renting within two years")
    page.click("button:has-text('Record decision')")
    page.wait_for_url(f"{live_server.url}/decisions/")
    assert "own the node" in page.inner_text("main")
    decision = Decision.objects.get()
    assert decision.tier == Decision.Tier.BUY
    assert decision.figures["buy"]["monthly_usd"] == "9003.99"
    assert decision.figures["cheapest"] == cheapest
    assert {"monthly_rent_usd", "monthly_api_usd"} <= set(decision.figures)
    assert violations == []
