"""Monthly rent: the seeds' money table (2.50 USD per GPU-hour, 30-day month = 720 h)."""

from decimal import Decimal

import pytest

from planner.engine.costs import gpu_hours, monthly_rent, rent_usd
from planner.engine.errors import EngineInputError

RATE = Decimal("2.50")


@pytest.mark.parametrize(
    ("gpus", "hours_per_day", "expected_hours", "expected_usd"),
    [
        (1, 24, 720, "1800.00"),  # 1 x 24 x 30 = 720 h; 720 x 2.50 = 1,800
        (8, 4, 960, "2400.00"),  # 8 x 4 x 30 = 960 h; 960 x 2.50 = 2,400
        (8, 24, 5760, "14400.00"),  # 8 x 24 x 30 = 5,760 h; x 2.50 = 14,400
        (32, 24, 23040, "57600.00"),  # 32 x 24 x 30 = 23,040 h; x 2.50 = 57,600
    ],
)
def test_seeds_money_table(gpus, hours_per_day, expected_hours, expected_usd):
    r = monthly_rent(gpus, RATE, hours_per_day=hours_per_day)
    assert r.gpu_hours == expected_hours
    assert r.rent_usd == Decimal(expected_usd)
    assert gpu_hours(gpus, hours_per_day) == expected_hours
    assert rent_usd(gpus, RATE, hours_per_day) == Decimal(expected_usd)
    d = r.to_dict()
    assert d["gpu_hours"] == f"{expected_hours}.00"
    assert d["rent_usd"] == expected_usd
    assert d["usd_per_gpu_hour"] == "2.5000"
    assert d["assumptions"] and all(isinstance(a, str) for a in d["assumptions"])


def test_thirty_day_month_is_the_default_and_configurable():
    assert monthly_rent(8, RATE).days_per_month == 30
    # July: 8 x 24 x 31 = 5,952 h; x 2.50 = 14,880
    r = monthly_rent(8, RATE, days_per_month=31)
    assert r.gpu_hours == 5952
    assert r.rent_usd == Decimal("14880.00")


def test_fractional_hours_stay_exact():
    # 8 x 4.5 x 30 = 1,080 h; x 2.35 = 2,538
    r = monthly_rent(8, "2.35", hours_per_day=Decimal("4.5"))
    assert r.gpu_hours == Decimal("1080")
    assert r.rent_usd == Decimal("2538.00")
    # a float rate goes through str(): 0.1 is 0.1, not 0.1000000000000000055...
    assert rent_usd(1, 0.1, 1, 1) == Decimal("0.1")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"gpus": 0}, "gpus"),
        ({"gpus": -8}, "gpus"),
        ({"gpus": 1.5}, "gpus"),
        ({"gpus": True}, "gpus"),
        ({"hours_per_day": 0}, "hours_per_day"),
        ({"hours_per_day": 25}, "hours_per_day"),
        ({"days_per_month": 0}, "days_per_month"),
        ({"days_per_month": 32}, "days_per_month"),
        ({"usd_per_gpu_hour": -1}, "usd_per_gpu_hour"),
        ({"usd_per_gpu_hour": "abc"}, "usd_per_gpu_hour"),
        ({"usd_per_gpu_hour": float("nan")}, "usd_per_gpu_hour"),
    ],
)
def test_bad_inputs_are_reported_per_field(kwargs, field):
    args = {"gpus": 8, "usd_per_gpu_hour": RATE, "hours_per_day": 24, "days_per_month": 30} | kwargs
    with pytest.raises(EngineInputError) as exc:
        monthly_rent(**args)
    assert list(exc.value.errors) == [field]
    assert exc.value.errors[field][0]


def test_all_bad_fields_reported_at_once():
    with pytest.raises(EngineInputError) as exc:
        monthly_rent(0, -1, hours_per_day=30, days_per_month=40)
    assert set(exc.value.errors) == {"gpus", "usd_per_gpu_hour", "hours_per_day", "days_per_month"}
