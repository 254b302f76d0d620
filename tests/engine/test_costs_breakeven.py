"""Rent or API: the seeds' breakeven, the cache-heavy agent mix, capacity and the verdict."""

import json
from decimal import Decimal

import pytest

from planner.engine.costs import (
    api_cost_usd,
    blended_input_usd_per_mtok,
    breakeven,
    breakeven_output_tokens,
    breakeven_output_tokens_mix,
)
from planner.engine.errors import EngineInputError

M = 1_000_000
# Hosted API, July 2026 (the seeds): USD per million tokens
PRICES = {
    "input_cache_hit_usd_per_mtok": Decimal("0.30"),
    "input_cache_miss_usd_per_mtok": Decimal("3.00"),
    "output_usd_per_mtok": Decimal("15.00"),
}
# 8 x H100 at 2.50 always on, 30-day month = 14,400 USD
NODE = {"gpus": 8, "usd_per_gpu_hour": Decimal("2.50")}
# an agent workload: 20 input tokens per output token
AGENT = {"monthly_input_tokens": 2_000 * M, "monthly_output_tokens": 100 * M}

API_FIELDS = {
    "gpu_hours",
    "monthly_rent_usd",
    "monthly_api_usd",
    "breakeven_output_tokens_per_month",
    "breakeven_output_tokens_per_month_mix",
    "cheaper",
    "capacity_output_tokens_per_month",
    "cost_per_mtok_output_rent",
    "download_minutes",
    "download_usd",
    "assumptions",
    "verdict",
    "fits",
    "memory_deficit_bytes_per_gpu",
    "api_wins_at_every_volume",
    "idle_cost_usd",
}


def test_seeds_14400_usd_buys_960m_output_tokens_32m_a_day():
    r = breakeven(**NODE, **PRICES, monthly_input_tokens=0, monthly_output_tokens=0)
    assert r.gpu_hours == 5760
    assert r.monthly_rent_usd == Decimal("14400.00")
    # 14,400 / 15 = 960 million output tokens a month; / 30 days = 32 million a day
    assert r.breakeven_output_tokens_per_month == 960 * M
    assert r.breakeven_output_tokens_per_month // 30 == 32 * M
    assert breakeven_output_tokens(Decimal(14400), Decimal(15)) == 960 * M
    assert any("960.0M" in a and "32.0M a day" in a for a in r.assumptions)
    # no traffic: the API costs nothing, the mix is undefined, the cluster still bills
    assert r.monthly_api_usd == 0
    assert r.breakeven_output_tokens_per_month_mix is None
    assert r.cheaper == "api"


def test_blended_input_price_at_90_percent_hits():
    # 0.9 x 0.30 + 0.1 x 3.00 = 0.27 + 0.30 = 0.57 USD per Mtok
    assert blended_input_usd_per_mtok(0.9, Decimal("0.30"), Decimal("3.00")) == Decimal("0.57")
    assert blended_input_usd_per_mtok(0, Decimal("0.30"), Decimal("3.00")) == Decimal("3.00")


def test_cache_heavy_agent_workload_moves_the_breakeven_further_out():
    """The seeds: repeated context billed at 0.30, not 3.00 USD/M, pushes the breakeven further away."""
    hot = breakeven(**NODE, **PRICES, **AGENT, cache_hit_rate=0.9)
    cold = breakeven(**NODE, **PRICES, **AGENT, cache_hit_rate=0)
    # 90% hits: per output Mtok the API costs 15 + 20 x 0.57 = 26.40 USD
    #   14,400 / 26.4 = 545.4545...M -> 545,454,545 output tokens
    assert hot.breakeven_output_tokens_per_month_mix == 545_454_545
    # 0% hits: 15 + 20 x 3.00 = 75 USD per output Mtok; 14,400 / 75 = 192M
    assert cold.breakeven_output_tokens_per_month_mix == 192 * M
    assert hot.breakeven_output_tokens_per_month_mix > cold.breakeven_output_tokens_per_month_mix
    # the output-only rule of thumb ignores the mix
    assert hot.breakeven_output_tokens_per_month == cold.breakeven_output_tokens_per_month == 960 * M
    # API bill: 2,000 x 0.57 + 100 x 15 = 1,140 + 1,500 = 2,640; cold: 2,000 x 3 + 1,500 = 7,500
    assert hot.monthly_api_usd == Decimal("2640.00")
    assert cold.monthly_api_usd == Decimal("7500.00")
    assert hot.cheaper == cold.cheaper == "api"
    assert (
        breakeven_output_tokens_mix(Decimal(14400), 2_000 * M, 100 * M, Decimal("0.9"), *PRICES.values()) == 545_454_545
    )


def test_api_cost_formula():
    # 1,000M input at 50% hits: 1,000 x (0.5 x 0.30 + 0.5 x 3.00) = 1,650; 10M output x 15 = 150
    assert api_cost_usd(1_000 * M, 10 * M, Decimal("0.5"), *PRICES.values()) == Decimal("1800")


def test_breakeven_beyond_capacity_means_api_wins_at_every_volume():
    # 90% hits: breakeven 545.45M output tokens; the cluster can only produce 400M a month
    r = breakeven(**NODE, **PRICES, **AGENT, cache_hit_rate=0.9, capacity_output_tokens_per_month=400 * M)
    assert r.capacity_output_tokens_per_month == 400 * M
    assert r.api_wins_at_every_volume is True
    assert r.cheaper == "api"
    assert "every volume" in r.verdict
    assert "545.5M" in r.verdict and "400.0M" in r.verdict
    # 14,400 / 400M x 1e6 = 36 USD per output Mtok
    assert r.cost_per_mtok_output_rent == Decimal("36.0000")


def test_breakeven_within_capacity_api_cheaper_at_this_volume():
    # 0% hits: breakeven 192M < capacity 400M, but the workload makes only 100M
    r = breakeven(**NODE, **PRICES, **AGENT, capacity_output_tokens_per_month=400 * M)
    assert r.api_wins_at_every_volume is False
    assert r.cheaper == "api"
    assert r.verdict.startswith("The API is cheaper at this volume")
    assert "192.0M" in r.verdict


def test_rent_cheaper_above_breakeven():
    # 300M output, 6,000M input, 0% hits: 6,000 x 3 + 300 x 15 = 18,000 + 4,500 = 22,500 > 14,400
    r = breakeven(
        **NODE,
        **PRICES,
        monthly_input_tokens=6_000 * M,
        monthly_output_tokens=300 * M,
        capacity_output_tokens_per_month=400 * M,
    )
    assert r.monthly_api_usd == Decimal("22500.00")
    assert r.cheaper == "rent"
    assert r.api_wins_at_every_volume is False
    assert r.verdict.startswith("Renting is cheaper")


def test_workload_beyond_capacity_is_flagged():
    # 500M output at 0% hits and 20:1 -> API 30,000 + 7,500 = 37,500 > rent, but capacity is 400M
    r = breakeven(
        **NODE,
        **PRICES,
        monthly_input_tokens=10_000 * M,
        monthly_output_tokens=500 * M,
        capacity_output_tokens_per_month=400 * M,
    )
    assert r.cheaper == "rent"
    assert "needs more GPUs" in r.verdict
    assert any("exceed the cluster's capacity" in a for a in r.assumptions)


def test_capacity_from_tokens_per_second_and_utilisation():
    # 500 tokens/s x 0.5 x 720 h x 3600 s = 648,000,000 output tokens a month
    r = breakeven(**NODE, **PRICES, **AGENT, output_tokens_per_s=500, utilisation=0.5)
    assert r.capacity_output_tokens_per_month == 648 * M
    # 14,400 / 648 = 22.2222 USD per output Mtok
    assert r.cost_per_mtok_output_rent == Decimal("22.2222")
    # idle: 14,400 x (1 - 0.5) = 7,200
    assert r.idle_cost_usd == Decimal("7200.00")


def test_unknown_capacity():
    r = breakeven(**NODE, **PRICES, **AGENT)
    assert r.capacity_output_tokens_per_month is None
    assert r.api_wins_at_every_volume is None
    assert r.idle_cost_usd is None
    # falls back to the workload's own output: 14,400 / 100 = 144 USD per Mtok
    assert r.cost_per_mtok_output_rent == Decimal("144.0000")


def test_idle_cost_with_given_capacity():
    # paid 5,760 GPU-hours x (1 - 0.6) x 2.50 = 5,760
    r = breakeven(**NODE, **PRICES, **AGENT, capacity_output_tokens_per_month=400 * M, utilisation=0.6)
    assert r.idle_cost_usd == Decimal("5760.00")
    assert r.capacity_output_tokens_per_month == 400 * M  # a given capacity is not scaled again


def test_download_of_the_weights():
    # 1.5 TB at 1 GB/s = 1.5e12 / 1e9 = 1,500 s = 25 minutes
    # all 8 GPUs bill: 8 x 2.50 = 20 USD/h x 1,500 / 3,600 h = 8.333 -> 8.33 USD
    r = breakeven(**NODE, **PRICES, **AGENT, weights_bytes=1_500_000_000_000, download_gbytes_per_s=1)
    assert r.download_minutes == Decimal("25.00")
    assert r.download_usd == Decimal("8.33")
    # one-time: not in the monthly rent
    assert r.monthly_rent_usd == Decimal("14400.00")
    no_download = breakeven(**NODE, **PRICES, **AGENT)
    assert no_download.download_minutes is None and no_download.download_usd is None


def test_to_dict_has_exactly_the_api_fields_and_is_json():
    r = breakeven(
        **NODE,
        **PRICES,
        **AGENT,
        cache_hit_rate=0.9,
        capacity_output_tokens_per_month=400 * M,
        utilisation=0.6,
        weights_bytes=1_500_000_000_000,
        download_gbytes_per_s=1,
    )
    d = r.to_dict()
    assert set(d) == API_FIELDS
    assert d == json.loads(json.dumps(d))
    assert d["gpu_hours"] == "5760.00"
    assert d["monthly_rent_usd"] == "14400.00"
    assert d["monthly_api_usd"] == "2640.00"
    assert d["breakeven_output_tokens_per_month"] == 960_000_000
    assert d["breakeven_output_tokens_per_month_mix"] == 545_454_545
    assert d["cheaper"] == "api"
    assert d["api_wins_at_every_volume"] is True
    assert d["cost_per_mtok_output_rent"] == "36.0000"
    assert d["download_minutes"] == "25.00"
    assert d["download_usd"] == "8.33"
    assert d["idle_cost_usd"] == "5760.00"
    assert isinstance(d["verdict"], str) and d["verdict"].endswith(".")
    assert all(isinstance(a, str) for a in d["assumptions"])


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"gpus": 0}, "gpus"),
        ({"usd_per_gpu_hour": -1}, "usd_per_gpu_hour"),
        ({"hours_per_day": 0}, "hours_per_day"),
        ({"hours_per_day": 24.5}, "hours_per_day"),
        ({"days_per_month": 0}, "days_per_month"),
        ({"days_per_month": 32}, "days_per_month"),
        ({"cache_hit_rate": 1.1}, "cache_hit_rate"),
        ({"cache_hit_rate": -0.1}, "cache_hit_rate"),
        ({"input_cache_hit_usd_per_mtok": -0.3}, "input_cache_hit_usd_per_mtok"),
        ({"input_cache_miss_usd_per_mtok": -3}, "input_cache_miss_usd_per_mtok"),
        ({"output_usd_per_mtok": 0}, "output_usd_per_mtok"),
        ({"monthly_input_tokens": -1}, "monthly_input_tokens"),
        ({"monthly_output_tokens": -1}, "monthly_output_tokens"),
        ({"capacity_output_tokens_per_month": -5}, "capacity_output_tokens_per_month"),
        ({"utilisation": 1.5}, "utilisation"),
        ({"output_tokens_per_s": -1}, "output_tokens_per_s"),
        ({"capacity_output_tokens_per_month": 1, "output_tokens_per_s": 1}, "output_tokens_per_s"),
        ({"weights_bytes": 10**12}, "download_gbytes_per_s"),
        ({"download_gbytes_per_s": 1}, "weights_bytes"),
        ({"weights_bytes": 10**12, "download_gbytes_per_s": 0}, "download_gbytes_per_s"),
    ],
)
def test_validation(override, field):
    args = {**NODE, **PRICES, **AGENT} | override
    with pytest.raises(EngineInputError) as exc:
        breakeven(**args)
    assert field in exc.value.errors


def test_breakeven_is_keyword_only():
    with pytest.raises(TypeError):
        breakeven(8, Decimal("2.50"))  # type: ignore[misc]
