"""Buy vs rent vs API (POST /api/v1/breakeven/ with ``buy_usd_per_gpu``), worked by hand.

The comparison: 8 H100 SXM GPUs always on in a 30-day month (720 h), rented at 2.50 USD per GPU-hour =
14,400 USD; 1,000 M output tokens a month on an API at 15 USD per M output = 15,000 USD. Buying them: one
HGX node at 31,250 USD per GPU = 250,000 USD up front, 48 months straight-line, 700 W per GPU (the
catalogue's H100 TDP, full load: no utilisation given), PUE 1.3, 0.12 USD/kWh, one rack at 1,500 USD a
month, support 8% a year:

- depreciation 250,000 / 48 = 5,208.33; energy 8 x 700 W x 1.3 x 720 h = 5,241.6 kWh x 0.12 = 628.99;
  colocation 1,500.00; support 250,000 x 0.08 / 12 = 1,666.67; monthly 9,003.99 USD
- running (besides depreciation) = 628.992 + 1,500 + 1,666.667 = 3,795.659 USD
- payback vs renting = 250,000 / (14,400 - 3,795.659) = 23.575 -> 23.58 months
- payback vs the API = 250,000 / (15,000 - 3,795.659) = 22.313 -> 22.31 months
- cheapest: buying (9,003.99 < 14,400.00 < 15,000.00)
"""

from __future__ import annotations

import re
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from fleet.models import GpuQuote
from planner.breakeven import BreakevenRequest
from planner.decisions import record_decision
from planner.models import Decision, DecisionReview
from planner.reviews import review_decisions

URL = "/api/v1/breakeven/"
BODY = {
    "gpus": 8,
    "usd_per_gpu_hour": "2.50",
    "sku": "h100-sxm-80gb",
    "monthly_input_tokens": 0,
    "monthly_output_tokens": 1_000_000_000,
    "input_cache_hit_usd_per_mtok": "0.30",
    "input_cache_miss_usd_per_mtok": "3.00",
    "output_usd_per_mtok": "15.00",
    "buy_usd_per_gpu": "31250",
    "buy_pue": "1.3",
    "buy_usd_per_kwh": "0.12",
    "buy_racks": "1",
    "buy_usd_per_rack_month": "1500",
    "buy_support_share_per_year": "0.08",
}


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


@pytest.mark.django_db
def test_buy_rent_api_by_hand(viewer_api, catalog):
    r = viewer_api.post(URL, BODY, format="json")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert (body["monthly_rent_usd"], body["monthly_api_usd"]) == ("14400.00", "15000.00")
    buy = body["buy"]
    assert buy["upfront_usd"] == "250000.00"
    assert buy["parts"] == {
        "depreciation": "5208.33",
        "energy": "628.99",
        "colocation": "1500.00",
        "support": "1666.67",
        "staff": "0.00",
    }
    assert (buy["monthly_usd"], buy["monthly_running_usd"]) == ("9003.99", "3795.66")
    assert (buy["payback_months_vs_rent"], buy["payback_months_vs_api"]) == ("23.58", "22.31")
    assert body["cheapest"] == "buy" and body["cheaper"] == "rent"
    assert "Buying is cheapest" in buy["verdict"] and "23.58 months" in buy["verdict"]
    assert any("full load: no utilisation given" in a for a in body["assumptions"])


@pytest.mark.django_db
def test_buy_needs_its_site_figures_and_says_which(viewer_api, catalog):
    body = {k: v for k, v in BODY.items() if k not in ("buy_pue", "buy_usd_per_kwh")}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 400
    assert set(r.json()) >= {"buy_pue", "buy_usd_per_kwh"}
    body = {k: v for k, v in BODY.items() if k != "buy_usd_per_gpu"}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 400 and "buy_usd_per_gpu" in r.json()


@pytest.mark.django_db
def test_without_buy_figures_the_answer_is_two_way(viewer_api, catalog):
    body = {k: v for k, v in BODY.items() if not k.startswith("buy_") and k != "sku"}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200
    assert r.json()["buy"] is None and r.json()["cheapest"] is None


BUY = {
    "buy_usd_per_gpu": Decimal("31250"),
    "buy_pue": Decimal("1.3"),
    "buy_usd_per_kwh": Decimal("0.12"),
    "buy_racks": Decimal(1),
    "buy_usd_per_rack_month": Decimal(1500),
    "buy_support_share_per_year": Decimal("0.08"),
}


@pytest.mark.django_db
def test_a_decision_stores_all_three_and_its_review_rechecks_them(chat_served):
    """The chat workload on 8 H100s at 2.50 (rent 14,400 USD) against its API (39,000 USD, the
    conftest's hand figures), bought with the figures above (9,003.99 USD a month): buying is cheapest,
    tier 4 is recorded with the three figures, its review holds; a 1.00 USD/GPU-hour quote makes renting
    5,760.00 USD a month (8 x 720 h x 1.00), below buying, and the review says so."""
    workload, deployment, _price = chat_served
    comparison = BreakevenRequest(deployment="llama", api_price="llama-api", **BUY)
    decision = record_decision(workload="chat", tier=Decision.Tier.BUY, comparison=comparison)
    figures = decision.figures
    assert (figures["monthly_rent_usd"], figures["monthly_api_usd"]) == ("14400.00", "39000.00")
    assert figures["buy"]["monthly_usd"] == "9003.99" and figures["cheapest"] == "buy"
    # Payback: 250,000 / (14,400 - 3,795.659) = 23.58 months against renting; / (39,000 - 3,795.659) = 7.10
    # against the API.
    assert (figures["buy"]["payback_months_vs_rent"], figures["buy"]["payback_months_vs_api"]) == ("23.58", "7.10")
    assert decision.inputs["request"]["buy_usd_per_gpu"] == "31250"
    assert review_decisions([workload.pk])["holds"] == 1
    review = DecisionReview.objects.get(decision=decision)
    assert review.reason == (
        "Still holds: buying is cheaper (rent 14,400.00 against API 39,000.00 USD/month, buying 9,003.99)."
    )
    GpuQuote.objects.create(
        sku=deployment.cluster.sku, provider=deployment.cluster.provider, usd_per_gpu_hour=Decimal("1.00"),
        quoted_on=timezone.now().date(),
    )  # fmt: skip
    assert review_decisions([workload.pk])["flipped"] == 1
    review.refresh_from_db()
    assert review.reason.startswith(
        "Renting is now cheaper: rent 14,400.00 -> 5,760.00 USD/month, API 39,000.00 -> 39,000.00 USD/month, "
        "buying 9,003.99 -> 9,003.99 USD/month."
    )
    assert review.favours == "rent"
    # Renting at 5,760 a month now costs more than owning's running 3,795.66: payback 250,000 / 1,964.34.
    assert review.figures["buy"]["payback_months_vs_rent"] == "127.27"


@pytest.mark.django_db
def test_assumptions_carry_figures_rounded_to_their_precision(viewer_api, catalog):
    """A capacity from the throughput model is a float (tokens/s); the sentence shows it to 0.1 token/s."""
    body = {"gpus": 16, "sku": "h200-141gb", "model": "kimi-k3", "tp": 8, "pp": 2, "monthly_input_tokens": 10**9,
            "monthly_output_tokens": 10**8, "api_price": "kimi-k3-api"}  # fmt: skip
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200, r.json()
    capacity = next(a for a in r.json()["assumptions"] if a.startswith("Capacity = "))
    assert re.match(r"Capacity = [\d,]+(\.\d)? output tokens/s", capacity), capacity
