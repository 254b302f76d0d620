"""Observed token volumes from poll rates: rate x covered seconds, hand-computed."""

from __future__ import annotations

import pytest

from planner.engine import RateSample, hour_coverage_s, observed_volume

HOUR = 3600.0
MONTH = 720 * HOUR


def test_100_tokens_per_s_for_10_hours_is_3_6_million_tokens():
    samples = [RateSample(HOUR, 100.0, 2000.0) for _ in range(10)]
    v = observed_volume(samples, window_s=MONTH)
    assert v.output_tokens == 3_600_000  # 100 x 36,000 s
    assert v.input_tokens == 72_000_000  # 2,000 x 36,000 s
    assert v.covered_hours == 10
    # 10 of 720 hours: the month at the observed rate is 72 x as much: 259.2 M output tokens.
    assert v.scaled is True
    assert v.monthly_output_tokens == 259_200_000
    assert v.monthly_input_tokens == 5_184_000_000
    assert any("Scaled to a 30-day month" in a for a in v.assumptions)


def test_a_full_month_is_not_scaled_and_unobserved_rates_are_left_out():
    samples = [RateSample(MONTH / 2, 10.0, None), RateSample(MONTH / 2, 30.0, None), RateSample(HOUR, None, None)]
    v = observed_volume(samples, window_s=MONTH)
    # 10 x 1,296,000 s + 30 x 1,296,000 s = 51,840,000 tokens over exactly 720 h: nothing to scale.
    assert v.output_tokens == 51_840_000 and v.monthly_output_tokens == 51_840_000
    assert v.scaled is False
    assert v.monthly_input_tokens is None and v.input_covered_s == 0
    assert any("input volume is unknown" in a for a in v.assumptions)


def test_no_samples_observe_nothing():
    v = observed_volume([], window_s=MONTH)
    assert v.monthly_output_tokens is None and v.output_tokens == 0 and v.scaled is False


def test_mixed_seconds_weight_each_sample_by_its_time():
    # 50 tok/s for 1 h and 200 tok/s for 30 min: 180,000 + 360,000 = 540,000 tokens over 1.5 h.
    v = observed_volume([RateSample(HOUR, 50.0), RateSample(HOUR / 2, 200.0)], window_s=MONTH)
    assert v.output_tokens == 540_000
    assert v.monthly_output_tokens == 259_200_000  # 540,000 x 720 / 1.5


@pytest.mark.parametrize(
    ("polls", "first", "last", "covered"),
    [
        (360, 0.0, 3590.0, 3600.0),  # every 10 s through the hour
        (7, 0.0, 60.0, 70.0),  # 6 intervals of 10 s + one more
        (1, 5.0, 5.0, 0.0),  # a lone poll: no interval known
        (1000, 0.0, 3599.0, 3600.0),  # capped at an hour
    ],
)
def test_hour_coverage(polls, first, last, covered):
    assert hour_coverage_s(polls, first, last) == pytest.approx(covered)
