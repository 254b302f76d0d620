"""Sensitivity band (planner/engine/throughput/sensitivity.py): properties, not the model's own figures.

* the band contains the central value of every figure, for any spread;
* less memory-bandwidth efficiency never lowers TPOT (each efficiency moved down slows, up speeds);
* spread 0 collapses the band onto the central estimate and leaves no elasticity;
* TPOT is affine in the step overhead (one overhead per decode step and per prefill chunk), so the
  central TPOT is the midpoint of the two moved-overhead runs;
* USD per million tokens is price x 1e6 / (3600 x tokens/s per GPU), so its band is the inverse image of
  the tokens/s band (computed here from the price, not read from the model).
"""

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleet.catalog import reference
from planner.engine import EngineInputError, sensitivity
from planner.engine.spec import Layout
from planner.engine.throughput import ThroughputOptions, efficiency_factors, estimate

DEEPSEEK_V3 = reference.model("deepseek-v3")
KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")
GPT_OSS_120B = reference.model("gpt-oss-120b")
H100 = reference.accelerator("h100-sxm-80gb")
H200 = reference.accelerator("h200-141gb")
B200 = reference.accelerator("b200-192gb")

CASES = (
    (LLAMA_31_70B, Layout(tp=4)),
    (LLAMA_31_70B, Layout(tp=2, pp=2)),
    (DEEPSEEK_V3, Layout(tp=8, dp=2, ep=16)),
    (KIMI_K3, Layout(tp=8, dp=4, ep=32)),
    (GPT_OSS_120B, Layout(tp=2)),
)
TODAY = ("memory_bandwidth_efficiency", "compute_efficiency", "link_efficiency", "step_overhead_s")


def _contains(band: dict) -> bool:
    if band["central"] is None:
        return True
    return band["low"] <= band["central"] <= band["high"]


@settings(max_examples=25, deadline=None)
@given(
    case=st.sampled_from(CASES),
    sku=st.sampled_from((H100, H200, B200)),
    spread=st.floats(min_value=0.0, max_value=0.6),
    batch=st.integers(min_value=1, max_value=64),
)
def test_band_contains_the_central_value(case, sku, spread, batch):
    model, layout = case
    band = sensitivity(model, sku, layout, spread=spread, batch=batch, usd_per_gpu_hour="2.5").to_dict()
    for key in ("tpot_ms", "ttft_ms", "tokens_per_s_per_gpu", "usd_per_mtok"):
        assert _contains(band[key]), (key, band[key])


@settings(max_examples=25, deadline=None)
@given(case=st.sampled_from(CASES), sku=st.sampled_from((H100, H200, B200)), batch=st.integers(1, 64))
def test_less_efficiency_never_lowers_tpot(case, sku, batch):
    model, layout = case
    band = sensitivity(model, sku, layout, batch=batch)
    central = band.central.tpot_s
    for f in band.factors:
        if f.name.endswith("_efficiency"):
            assert f.tpot_at_low_s >= central * (1 - 1e-12) >= f.tpot_at_high_s * (1 - 1e-12), f
            assert f.elasticity_tpot is None or f.elasticity_tpot <= 1e-12
        else:  # overheads: more never speeds up
            assert f.tpot_at_low_s <= central * (1 + 1e-12) <= f.tpot_at_high_s * (1 + 1e-12), f


@given(eff=st.floats(min_value=0.05, max_value=1.0), lower=st.floats(min_value=0.01, max_value=0.99))
@settings(max_examples=30, deadline=None)
def test_lower_bandwidth_efficiency_never_lowers_tpot_direct(eff, lower):
    """The property behind the band, on estimate() itself: bandwidth efficiency eff x lower <= eff."""
    kw = {"batch": 8, "prompt_tokens": 1024, "output_tokens": 256}
    at = estimate(LLAMA_31_70B, H100, Layout(tp=4), options=ThroughputOptions(memory_bandwidth_efficiency=eff), **kw)
    less = ThroughputOptions(memory_bandwidth_efficiency=eff * lower)
    assert estimate(LLAMA_31_70B, H100, Layout(tp=4), options=less, **kw).tpot_s >= at.tpot_s


@pytest.mark.parametrize(("model", "layout"), CASES)
def test_zero_spread_collapses_the_band(model, layout):
    band = sensitivity(model, H200, layout, spread=0, batch=4, usd_per_gpu_hour=3)
    central = band.central
    assert band.tpot_s.low == band.tpot_s.central == band.tpot_s.high == central.tpot_s
    assert band.tokens_per_s_per_gpu.low == band.tokens_per_s_per_gpu.high == central.tokens_per_s_per_gpu
    assert band.usd_per_mtok.low == band.usd_per_mtok.high == central.usd_per_mtok
    assert all(f.elasticity_tpot is None for f in band.factors)
    assert band.most_influential is None


def test_the_factors_are_the_efficiency_like_option_fields():
    names = efficiency_factors()
    assert set(TODAY) <= set(names)
    fields = {f.name for f in dataclasses.fields(ThroughputOptions)}
    assert set(names) <= fields
    assert {"kernel_launch_s", "eager_kernel_launch_s"} <= set(names)  # the per-kernel launch costs
    assert all(n.endswith(("_efficiency", "_overhead_s", "_launch_s")) for n in names)
    # Fabric figures are hardware, not efficiencies.
    assert not {"network_gbps", "link_latency_s", "scaleup_domain_gpus", "gemm_tile_tokens", "cuda_graphs"} & set(names)


def test_efficiencies_are_capped_at_one_and_moved_by_the_spread():
    opts = ThroughputOptions(memory_bandwidth_efficiency=0.9, compute_efficiency=0.5)
    band = sensitivity(LLAMA_31_70B, H100, Layout(tp=4), spread=0.2, batch=4, options=opts)
    by = {f.name: f for f in band.factors}
    assert by["memory_bandwidth_efficiency"].high_value == 1.0  # 0.9 x 1.2 = 1.08, capped
    assert by["memory_bandwidth_efficiency"].low_value == pytest.approx(0.72)
    assert by["compute_efficiency"].low_value == pytest.approx(0.4) and by["compute_efficiency"].high_value == 0.6
    assert by["step_overhead_s"].high_value == pytest.approx(opts.step_overhead_s * 1.2)
    # One-sided elasticity where capped: still a slope, still not positive.
    assert by["memory_bandwidth_efficiency"].elasticity_tpot < 0


def test_tpot_is_affine_in_the_step_overhead():
    band = sensitivity(LLAMA_31_70B, H100, Layout(tp=4), batch=16, prompt_tokens=2048, output_tokens=256)
    f = next(f for f in band.factors if f.name == "step_overhead_s")
    assert band.central.tpot_s == pytest.approx((f.tpot_at_low_s + f.tpot_at_high_s) / 2, rel=1e-9)


def test_memory_bound_decode_names_bandwidth_and_its_elasticity_is_near_minus_its_share():
    """Batch 1 of a dense 70B: decode reads 70 GB of weights per token, FLOPs are negligible, so the
    bandwidth factor dominates and d ln TPOT / d ln eff is about -(memory share of the step): between
    -1 and 0, and within 0.1 of -memory_time / TPOT."""
    band = sensitivity(LLAMA_31_70B, H100, Layout(tp=4), batch=1, prompt_tokens=128, output_tokens=2048)
    assert band.most_influential == "memory_bandwidth_efficiency"
    step = band.central.decode
    f = next(f for f in band.factors if f.name == "memory_bandwidth_efficiency")
    share = step.memory_time_s / band.central.tpot_s
    assert -1 <= f.elasticity_tpot < 0
    assert f.elasticity_tpot == pytest.approx(-share, abs=0.1)


def test_usd_band_is_the_inverse_of_the_tokens_band():
    price = 2.5
    band = sensitivity(DEEPSEEK_V3, H200, Layout(tp=8, dp=2, ep=16), batch=32, usd_per_gpu_hour=price)
    per_token = price * 1e6 / 3600
    assert band.usd_per_mtok.high == pytest.approx(per_token / band.tokens_per_s_per_gpu.low, rel=1e-9)
    assert band.usd_per_mtok.low == pytest.approx(per_token / band.tokens_per_s_per_gpu.high, rel=1e-9)
    assert sensitivity(DEEPSEEK_V3, H200, Layout(tp=8, dp=2, ep=16), batch=32).usd_per_mtok is None


def test_batch_is_held_at_the_central_estimate():
    band = sensitivity(LLAMA_31_70B, H100, Layout(tp=4), tpot_slo_ms=40)
    assert band.central.batch >= 1
    assert any(str(band.central.batch) in note for note in band.assumptions)
    assert band.runs == 1 + 2 * len(band.factors) + 2


@pytest.mark.parametrize("spread", [-0.1, 1, 1.5, True, "x", math.nan])
def test_bad_spread_is_a_field_error(spread):
    with pytest.raises(EngineInputError) as exc:
        sensitivity(LLAMA_31_70B, H100, Layout(tp=4), spread=spread)
    assert "spread" in exc.value.errors
