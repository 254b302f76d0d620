"""An owned cluster's cost and the buy option of rent vs API, worked by hand (planner/engine/costs/owned.py).

The node of every test: one HGX H100 (8 GPUs) bought on 2026-01-15 for 250,000 USD, a 4-year
(48-month) useful life and no residual value; 700 W per GPU at full load (the H100 SXM's TDP, NVIDIA's
datasheet), PUE 1.3, electricity 0.12 USD/kWh, one rack at 1,500 USD a month, support 8% of the
purchase price a year, no staff.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from planner.engine import (
    ClusterState,
    ElectricityPrice,
    EngineInputError,
    OwnedCluster,
    Power,
    Purchase,
    Quote,
    buy_option,
    owned_price,
    rate_from_quotes,
    spend_month,
)

D = Decimal


def node(**power: object) -> OwnedCluster:
    return OwnedCluster(
        cluster="owned-h100",
        gpus_per_node=8,
        purchases=(Purchase(date(2026, 1, 15), 1, D(250_000), 48),),
        power=Power(gpu_full_w=D(700), pue=D("1.3"), **power),
        electricity=(ElectricityPrice(date(2025, 1, 1), D("0.12")),),
        racks=D(1),
        usd_per_rack_month=D(1500),
        support_share_per_year=D("0.08"),
    )


def test_one_owned_h100_node_month_by_hand() -> None:
    """June 2026 (30 days, 720 h), 8 GPUs always on, full load:

    - depreciation = 250,000 / 48 = 5,208.333... -> 5,208.33 USD
    - energy = 8 x 700 W x 1.3 PUE = 7.28 kW x 720 h = 5,241.6 kWh x 0.12 = 628.992 -> 628.99 USD
    - colocation = 1 x 1,500 = 1,500.00 USD; support = 250,000 x 0.08 / 12 = 1,666.67 USD; staff 0
    - total = 5,208.33 + 628.99 + 1,500.00 + 1,666.67 = 9,003.99 USD
    - GPU-hours = 8 x 720 = 5,760; USD per GPU-hour = 9,003.992 / 5,760 = 1.563193... -> 1.5632
    """
    month = node().month(2026, 6, gpus=8)
    assert month.parts == {
        "depreciation": D("5208.33"),
        "energy": D("628.99"),
        "colocation": D("1500.00"),
        "support": D("1666.67"),
        "staff": D("0.00"),
    }
    assert month.total_usd == D("9003.99")
    assert month.kwh == D("5241.60")
    assert month.gpu_hours == D("5760.00")
    assert month.usd_per_gpu_hour == D("1.5632")
    assert month.unpriced_days == 0
    assert any("full load (no utilisation polled)" in n for n in month.assumptions)


def test_draw_follows_utilisation_between_idle_and_full_load() -> None:
    """70 W idle, half utilised, 1,000 W node overhead, June 2026:
    W per GPU = 70 + 0.5 x (700 - 70) = 385 W; (8 x 385 + 1,000) W x 1.3 = 5.304 kW x 720 h
    = 3,818.88 kWh x 0.12 = 458.2656 -> 458.27 USD."""
    month = node(gpu_idle_w=D(70), node_overhead_w=D(1000)).month(2026, 6, gpus=8, utilisation=D("0.5"))
    assert month.kwh == D("3818.88")
    assert month.parts["energy"] == D("458.27")
    assert any("385 W per GPU = 70 W idle + 0.5 utilisation" in n for n in month.assumptions)


def test_fixed_costs_stay_when_fewer_hours_are_on() -> None:
    """8 h a day in June: energy is a third (209.664 -> 209.66), the fixed parts are whole, so the
    GPU-hour costs more: (5,208.333 + 209.664 + 1,500 + 1,666.667) / (8 x 8 x 30 = 1,920) = 4.4712."""
    month = node().month(2026, 6, gpus=8, hours_per_day=8)
    assert month.parts["energy"] == D("209.66")
    assert month.parts["depreciation"] == D("5208.33")
    assert month.usd_per_gpu_hour == D("4.4712")


def test_depreciation_runs_whole_months_from_the_month_of_purchase() -> None:
    """Bought 2026-01-15: January 2026 is the first of 48 months, December 2029 the last; January 2030
    has no purchase in service, so every day is unpriced (never a zero said as a cost)."""
    owned = node()
    assert owned.month(2026, 1, gpus=8).parts["depreciation"] == D("5208.33")
    assert owned.month(2029, 12, gpus=8).parts["depreciation"] == D("5208.33")
    after = owned.month(2030, 1, gpus=8)
    assert after.unpriced_days == 31 and after.total_usd == 0 and after.usd_per_gpu_hour is None
    before = owned.month(2025, 12, gpus=8)
    assert before.unpriced_days == 31


def test_electricity_price_by_date() -> None:
    """0.12 USD/kWh to 2026-06-15, 0.18 from 2026-06-16: 15 days each of 7.28 kW x 24 h = 174.72 kWh;
    energy = 15 x 174.72 x (0.12 + 0.18) = 786.24 USD; a day with no price on record is unpriced."""
    owned = OwnedCluster(
        **{
            **_fields(node()),
            "electricity": (
                ElectricityPrice(date(2026, 6, 1), D("0.12")),
                ElectricityPrice(date(2026, 6, 16), D("0.18")),
            ),
        }
    )
    assert owned.month(2026, 6, gpus=8).parts["energy"] == D("786.24")
    late = OwnedCluster(**{**_fields(node()), "electricity": (ElectricityPrice(date(2026, 6, 11), D("0.12")),)})
    assert late.month(2026, 6, gpus=8).unpriced_days == 10


def _fields(o: OwnedCluster) -> dict:
    return {name: getattr(o, name) for name in OwnedCluster.__slots__}


def test_owned_price_is_the_price_in_force_of_an_owned_cluster() -> None:
    price = owned_price(node(), date(2026, 6, 10), sku="h100-sxm-80gb", provider="Own DC", gpus=8)
    assert price is not None and price.basis == "owned"
    assert price.usd_per_gpu_hour.quantize(D("0.0001")) == D("1.5632")
    assert price.to_dict()["basis"] == "owned" and price.to_dict()["quote"] is None
    assert (price.quote.quoted_on, price.quote.valid_until) == (date(2026, 6, 1), date(2026, 6, 30))
    assert "owned" in price.note and "2026-06-01 to 2026-06-30" in price.note
    assert owned_price(node(), date(2030, 2, 1), sku="h100-sxm-80gb", provider="Own DC", gpus=8) is None


def test_spend_of_an_owned_cluster_is_its_month_cost_and_rented_ones_keep_their_quote() -> None:
    """The ledger prices the owned cluster at its own rate and the rented one at its quote: June 2026's
    spend of the owned node is the month's 9,003.99 USD; the rented 8 GPUs at 2.50 are 14,400.00 USD."""
    states = [
        ClusterState("owned-h100", "ml", "Own DC", "h100-sxm-80gb", date(2026, 1, 15), 8),
        ClusterState("rented", "ml", "CoreWeave", "h100-sxm-80gb", date(2026, 1, 1), 8),
    ]
    quotes = [Quote("h100-sxm-80gb", "CoreWeave", D("2.50"), "on-demand", date(2026, 1, 1), id=1)]
    rate = rate_from_quotes(quotes, owned={"owned-h100": node()})
    spend = spend_month(states, 2026, 6, date(2026, 7, 1), rate)
    costs = {c.name: c.cost_usd for c in spend.clusters}
    assert costs == {"owned-h100": D("9003.99"), "rented": D("14400.00")}


def test_buy_option_payback_by_hand() -> None:
    """Buy the 8 GPUs of a comparison whose rent is 14,400 USD (8 x 720 h x 2.50) and API 20,000 USD:

    - up front = 1 node x 8 x 31,250 = 250,000 USD; monthly = 9,003.99 (the month above, 30 days)
    - running (besides depreciation) = 628.992 + 1,500 + 1,666.667 = 3,795.659 USD
    - payback vs renting = 250,000 / (14,400 - 3,795.659) = 23.575 -> 23.58 months
    - payback vs the API = 250,000 / (20,000 - 3,795.659) = 15.428 -> 15.43 months
    """
    common = dict(
        gpus=8,
        gpus_per_node=8,
        usd_per_gpu=D(31_250),
        power=Power(gpu_full_w=D(700), pue=D("1.3")),
        usd_per_kwh=D("0.12"),
        racks=1,
        usd_per_rack_month=1500,
        support_share_per_year=D("0.08"),
    )
    option = buy_option(**common, monthly_rent_usd=D(14_400), monthly_api_usd=D(20_000))
    assert option.upfront_usd == D("250000.00")
    assert option.monthly_usd == D("9003.99")
    assert option.monthly_running_usd == D("3795.66")
    assert option.payback_months_vs_rent == D("23.58")
    assert option.payback_months_vs_api == D("15.43")
    never = buy_option(**common, monthly_rent_usd=D(3000), monthly_api_usd=D(20_000))
    assert never.payback_months_vs_rent is None


def test_bad_inputs_are_refused_by_field() -> None:
    with pytest.raises(EngineInputError) as caught:
        Power(gpu_full_w=D(700), gpu_idle_w=D(800), pue=D("0.9"))
    assert set(caught.value.errors) == {"power.gpu_idle_w", "power.pue"}
    with pytest.raises(EngineInputError) as caught:
        Purchase(date(2026, 1, 1), 0, D(100), 48, D(200))
    assert set(caught.value.errors) == {"purchase.nodes", "purchase.residual_usd"}
