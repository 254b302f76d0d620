"""Live correction (planner.engine.throughput.correction): fitting observed over predicted speed from
polls, and applying it to an estimate."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

import pytest

from fleet.catalog import reference
from planner.engine import (
    Layout,
    SpeedPrediction,
    SpeedSample,
    apply_correction,
    batch_of,
    estimate,
    fit_correction,
    prediction_of,
)

LLAMA_31_70B = reference.model("llama-3.1-70b")
H100 = reference.accelerator("h100-sxm-80gb")
LAYOUT = Layout(tp=4)
AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def predict(batch: int, context: int | None) -> SpeedPrediction:
    """The engine's figures for Llama 3.1 70B tp4 on H100 at ``batch`` sequences."""
    return prediction_of(estimate(LLAMA_31_70B, H100, LAYOUT, batch=batch))


def synthetic_polls(decode: float, prefill: float, n: int = 300, noise: float = 0.08, seed: int = 13):
    """Polls of a deployment that is ``decode`` x slower than the model per output token and ``prefill``
    x slower on the prefill part of TTFT, with log-normal noise of ``noise`` per figure."""
    rng = random.Random(seed)
    polls = []
    for _ in range(n):
        b = rng.choice([1, 2, 4, 8, 16, 32, 64])
        p = predict(b, None)
        tpot = p.tpot_s * decode * math.exp(rng.gauss(0, noise))
        ttft = (p.prefill_s * prefill + p.ttft_decode_s * decode) * math.exp(rng.gauss(0, noise))
        polls.append(SpeedSample(batch=b, tpot_s=tpot, ttft_s=ttft))
    return polls


def test_a_known_factor_is_recovered_within_2_percent():
    correction = fit_correction(synthetic_polls(1.37, 1.8), predict, fitted_at=AT)
    assert correction.decode_factor == pytest.approx(1.37, rel=0.02)
    assert correction.prefill_factor == pytest.approx(1.8, rel=0.02)
    assert correction.decode_samples == correction.prefill_samples == 300
    # The residual is the noise put in (RMS of log ratios about the fit), not zero and not larger.
    assert 0.06 < correction.decode_residual < 0.10
    assert correction.fitted_at == AT


def test_outliers_do_not_move_the_median():
    polls = synthetic_polls(1.37, 1.0, n=200)
    spikes = [SpeedSample(batch=8, tpot_s=predict(8, None).tpot_s * 20, ttft_s=None) for _ in range(60)]
    correction = fit_correction(polls + spikes, predict)
    assert correction.decode_factor == pytest.approx(1.37, rel=0.05)
    assert correction.decode_samples == 260


def test_idle_polls_and_missing_figures_are_ignored():
    p = predict(4, None)
    busy = [SpeedSample(batch=4, tpot_s=p.tpot_s * 1.5, ttft_s=p.ttft_s * 1.5)] * 10
    idle = [SpeedSample(batch=0, tpot_s=p.tpot_s * 9, ttft_s=p.ttft_s * 9)] * 30
    unknown = [SpeedSample(batch=None, tpot_s=p.tpot_s * 9)] * 5
    blank = [SpeedSample(batch=4, tpot_s=None, ttft_s=None), SpeedSample(batch=4, tpot_s=float("nan"))]
    calls = []

    def counting(batch, context):
        calls.append(batch)
        return predict(batch, context)

    correction = fit_correction(busy + idle + unknown + blank, counting)
    assert correction.decode_factor == pytest.approx(1.5)
    assert correction.decode_samples == 10
    assert correction.ignored_samples == 37
    assert calls == [4]  # one prediction per distinct batch; none for idle polls


def test_no_usable_polls_is_no_correction():
    correction = fit_correction([SpeedSample(batch=0, tpot_s=0.02)], predict)
    assert (correction.decode_factor, correction.decode_samples, correction.decode_residual) == (1.0, 0, None)
    assert (correction.prefill_factor, correction.prefill_samples) == (1.0, 0)


def test_precomputed_predictions_need_no_predictor():
    samples = [SpeedSample(batch=2, tpot_s=0.03, ttft_s=0.5, predicted=SpeedPrediction(0.02, 0.25, 0.0))] * 3
    correction = fit_correction(samples)
    assert correction.decode_factor == pytest.approx(1.5)
    assert correction.prefill_factor == pytest.approx(2.0)
    with pytest.raises(ValueError, match="predict"):
        fit_correction([SpeedSample(batch=2, tpot_s=0.03)])


def test_batch_per_replica():
    assert batch_of(0, 2) is None
    assert batch_of(None) is None
    assert batch_of(0.4, 1) == 1
    assert batch_of(30, 4) == 8


def test_applying_the_fit_reproduces_a_noise_free_poll():
    base = estimate(LLAMA_31_70B, H100, LAYOUT, batch=16, usd_per_gpu_hour="2.50", tpot_slo_ms=1000)
    polls = synthetic_polls(1.37, 1.8, n=50, noise=0.0)
    correction = fit_correction(polls, predict, fitted_at=AT)
    fixed = apply_correction(base, correction, age_s=5400)
    p = prediction_of(base)
    assert fixed.tpot_s == pytest.approx(base.tpot_s * 1.37)
    assert fixed.ttft_s == pytest.approx(p.prefill_s * 1.8 + p.ttft_decode_s * 1.37)
    assert fixed.tokens_per_s_replica == pytest.approx(base.tokens_per_s_replica / 1.37)
    assert fixed.tokens_per_s_per_gpu == pytest.approx(base.tokens_per_s_per_gpu / 1.37)
    assert fixed.usd_per_mtok == pytest.approx(base.usd_per_mtok * 1.37)
    assert fixed.tokens_per_usd == pytest.approx(base.tokens_per_usd / 1.37)
    note = fixed.assumptions[0]
    assert "TPOT x 1.370" in note and "x 1.800" in note and "50 sample(s)" in note and "90 min ago" in note
    assert fixed.assumptions[1:] == base.assumptions
    assert (base.tpot_s, base.batch) == (fixed.tpot_s / 1.37, fixed.batch)  # the model's result is unchanged


def test_slos_are_rechecked_when_given():
    base = estimate(LLAMA_31_70B, H100, LAYOUT, batch=8, tpot_slo_ms=1000)
    slo_ms = base.tpot_s * 1e3 * 1.2
    correction = fit_correction([SpeedSample(batch=8, tpot_s=base.tpot_s * 1.5)] * 3, predict)
    assert apply_correction(base, correction, tpot_slo_ms=slo_ms).meets_tpot is False
    assert apply_correction(base, correction).meets_tpot is base.meets_tpot


def test_a_side_with_too_few_samples_is_not_fitted():
    p = predict(4, None)
    samples = [SpeedSample(batch=4, tpot_s=p.tpot_s * 1.5, ttft_s=p.ttft_s * 3)] * 3
    samples += [SpeedSample(batch=4, tpot_s=p.tpot_s * 1.5)] * 9
    correction = fit_correction(samples, predict, min_samples=10)
    assert (correction.decode_factor, correction.decode_samples) == (pytest.approx(1.5), 12)
    assert (correction.prefill_factor, correction.prefill_samples, correction.prefill_residual) == (1.0, 0, None)
    assert "Prefill: 3 usable sample(s), fewer than 10: not corrected." in correction.assumptions
