"""Unit economics and one-time costs: cost per output Mtok, tokens/s per USD-hour, idle cost,
downloading the weights and keeping them on a volume."""

import json
from decimal import Decimal

import pytest

from planner.engine.costs import (
    capacity_output_tokens,
    download_seconds,
    idle_cost_usd,
    unit_economics,
    weights_download,
    weights_storage,
)
from planner.engine.errors import EngineInputError

RATE = Decimal("2.50")
TB_1_5 = 1_500_000_000_000  # the published K3 repository, ~1.5 TB


def test_unit_economics_of_a_node_half_busy():
    u = unit_economics(8, RATE, output_tokens_per_s=1000, utilisation=Decimal("0.5"))
    # 1,000 tokens/s x 0.5 x 720 h x 3,600 s = 1,296,000,000 output tokens
    assert u.output_tokens_per_month == 1_296_000_000
    # 14,400 / 1,296 = 11.1111 USD per output Mtok
    assert u.cost_per_mtok_output_usd == Decimal("11.1111")
    # cluster bills 8 x 2.50 = 20 USD/h; 1,000 / 20 = 50 tokens/s per USD-hour; effective 25
    assert u.cluster_usd_per_hour == Decimal("20")
    assert u.tokens_per_s_per_usd_hour == Decimal("50.0000")
    assert u.effective_tokens_per_s_per_usd_hour == Decimal("25.0000")
    # idle: 5,760 h x 0.5 = 2,880 h x 2.50 = 7,200 USD
    assert u.idle_gpu_hours == 2880
    assert u.idle_cost_usd == Decimal("7200.00")
    d = u.to_dict()
    assert d == json.loads(json.dumps(d))
    assert d["cost_per_mtok_output_usd"] == "11.1111"
    assert d["assumptions"]


def test_idle_cluster_has_no_cost_per_token():
    u = unit_economics(8, RATE, output_tokens_per_s=1000, utilisation=0)
    assert u.output_tokens_per_month == 0
    assert u.cost_per_mtok_output_usd is None
    assert u.idle_cost_usd == Decimal("14400.00")


def test_idle_cost_primitive():
    # paid hours x (1 - utilisation) x rate = 14,400 x 0.25
    assert idle_cost_usd(Decimal(14400), Decimal("0.75")) == Decimal("3600")


def test_capacity_primitive():
    # 100 tokens/s x 1 x 4 h x 30 days x 3,600 = 43,200,000
    assert capacity_output_tokens(100, 1, 4, 30) == 43_200_000


def test_download_1_5_tb_at_1_gb_per_s_is_25_minutes():
    assert download_seconds(TB_1_5, 1) == 1500
    d = weights_download(TB_1_5, 1, gpus=32, usd_per_gpu_hour=RATE)
    assert d.seconds == 1500
    assert d.minutes == Decimal("25.00")
    # 32 GPUs bill: 32 x 1,500 / 3,600 = 13.3333 GPU-hours x 2.50 = 33.33 USD
    assert d.billed_gpu_hours.quantize(Decimal("0.0001")) == Decimal("13.3333")
    assert d.usd == Decimal("33.33")
    assert d.to_dict()["minutes"] == "25.00"
    assert any("persistent volume" in a for a in d.assumptions)


def test_download_at_10_gb_per_s():
    # 1.5e12 / 10e9 = 150 s = 2.5 minutes
    assert weights_download(TB_1_5, 10, 8, RATE).minutes == Decimal("2.50")


def test_weights_on_a_persistent_volume():
    # 1.5e12 bytes = 1,500 GB x 0.10 USD per GB-month = 150 USD a month
    s = weights_storage(TB_1_5, Decimal("0.10"))
    assert s.gb == 1500
    assert s.usd == Decimal("150.00")
    assert weights_storage(TB_1_5, Decimal("0.10"), months=12).usd == Decimal("1800.00")
    assert s.to_dict()["usd"] == "150.00"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: weights_download(TB_1_5, 0, 8, RATE), "download_gbytes_per_s"),
        (lambda: weights_download(-1, 1, 8, RATE), "weights_bytes"),
        (lambda: weights_download(TB_1_5, 1, 0, RATE), "gpus"),
        (lambda: weights_storage(TB_1_5, -1), "usd_per_gb_month"),
        (lambda: unit_economics(8, 0, 100), "usd_per_gpu_hour"),
        (lambda: unit_economics(8, RATE, 100, utilisation=2), "utilisation"),
        (lambda: unit_economics(8, RATE, -100), "output_tokens_per_s"),
        (lambda: idle_cost_usd(-1, 0.5), "rent_usd"),
    ],
)
def test_validation(call, field):
    with pytest.raises(EngineInputError) as exc:
        call()
    assert field in exc.value.errors
