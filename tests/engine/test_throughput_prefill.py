"""Prefill: compute-bound FLOPs by hand, quadratic vs linear attention, chunks, prefix cache, KV transfer."""

import json

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.spec import LayerGroup, Layout, ModelArch
from planner.engine.throughput.options import ThroughputOptions
from planner.engine.throughput.prefill import prefill

KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")
H100 = reference.accelerator("h100-sxm-80gb")
B200 = reference.accelerator("b200-192gb")
LLAMA_PARAMS = 70_553_706_496  # Llama-3.1-70B, computed from config.json


def _toy(kind: str) -> ModelArch:
    group = (
        LayerGroup(kind="full", count=4, kv_heads=4, head_dim=128)
        if kind == "full"
        else LayerGroup(kind="linear", count=4, key_heads=4, value_heads=4, key_dim=128, value_dim=128, conv_kernel=4)
    )
    return ModelArch(
        name=kind, total_params=10**9, active_params=10**9, layer_groups=(group,), hidden_size=2048, attention_heads=16
    )


def test_prefill_flops_by_hand_and_compute_bound():
    """Llama-3.1-70B, 4,096 tokens on one B200: 2 x params x P + 80 x 64 heads x 4 x 128 x P(P+1)/2."""
    p = prefill(LLAMA_31_70B, B200, Layout(), 4096)
    dense = 2 * LLAMA_PARAMS * 4096
    attention = 80 * 64 * 4 * 128 * (4096 * 4097 / 2)
    assert p.chunks == 1
    assert p.flops_per_gpu == pytest.approx(dense + attention, rel=1e-12)
    assert p.bound == "compute"
    assert p.compute_time_s == pytest.approx((dense + attention) / (B200.bf16_tflops * 1e12 * 0.6), rel=1e-12)
    # one chunk + its 800 kernels (80 layers x 10), launched eagerly but behind a 0.2 s compute-bound step, so
    # each adds only its 3 us in-stream gap, + the 0.3 ms step overhead
    assert p.time_s == pytest.approx(p.compute_time_s + 800 * 3e-6 + 3e-4, rel=1e-12)


def test_full_attention_is_quadratic_and_linear_attention_linear():
    full, linear = _toy("full"), _toy("linear")
    f1, f2 = (prefill(full, B200, Layout(), n).flops_per_gpu for n in (1000, 2000))
    l1, l2 = (prefill(linear, B200, Layout(), n).flops_per_gpu for n in (1000, 2000))
    dense = 2 * 10**9
    assert l2 == pytest.approx(2 * l1, rel=1e-12)  # everything linear in tokens
    attn1, attn2 = f1 - dense * 1000, f2 - dense * 2000
    assert attn2 / attn1 == pytest.approx(2000 * 2001 / (1000 * 1001), rel=1e-12)  # ~4x: quadratic


def test_prefix_cache_skips_cached_tokens():
    cold = prefill(LLAMA_31_70B, H100, Layout(tp=4), 8000)
    warm = prefill(LLAMA_31_70B, H100, Layout(tp=4), 8000, cached_tokens=6000)
    assert warm.time_s < cold.time_s / 3
    full = 80 * 16 * 4 * 128  # per GPU at tp 4: 16 heads
    expected = 2 * LLAMA_PARAMS / 4 * 2000 + full * (8000 * 8001 - 6000 * 6001) / 2
    assert warm.flops_per_gpu == pytest.approx(expected, rel=1e-12)


def test_long_prompts_are_chunked_and_pipeline_parallel_shortens_them():
    opts = ThroughputOptions(prefill_chunk_tokens=4096)
    p = prefill(LLAMA_31_70B, H100, Layout(tp=2), 20_000, options=opts)
    assert p.chunks == 5 and p.chunk_tokens == 4096
    flat = prefill(LLAMA_31_70B, H100, Layout(tp=2), 32_768)
    piped = prefill(LLAMA_31_70B, H100, Layout(tp=2, pp=4), 32_768)
    assert flat.chunks == piped.chunks == 4
    assert piped.time_s < flat.time_s * 0.6  # chunks overlap across stages: (4 + 3) / 4 of a chunk time vs 4


def test_kv_transfer_bytes_and_exposure():
    """Llama, 4,096 tokens: 327,680 B x 4,096 over 4 NICs x 50 GB/s x 0.7; hidden behind the prefill."""
    p = prefill(LLAMA_31_70B, H100, Layout(tp=4), 4096)
    assert p.kv_transfer_bytes == 327_680 * 4096
    xfer = 327_680 * 4096 / (4 * 50e9 * 0.7) + 35e-6
    assert p.kv_transfer_s == pytest.approx(xfer)
    assert p.kv_transfer_exposed_s == pytest.approx(max(xfer / 80, xfer - p.time_s * 79 / 80))
    assert p.kv_transfer_exposed_s < p.kv_transfer_s
    k3 = prefill(KIMI_K3, B200, Layout(tp=8, dp=2, ep=16), 4096, kv_cache_dtype="fp8")
    assert k3.kv_transfer_bytes == 24 * 576 * 4096 + 449_372_160  # MLA latent (fp8) + the KDA state


def test_prefill_validation_and_json():
    with pytest.raises(EngineInputError) as e:
        prefill(LLAMA_31_70B, H100, Layout(tp=4), 100, cached_tokens=100)
    assert "cached_tokens" in e.value.errors
    with pytest.raises(EngineInputError) as e:
        prefill(LLAMA_31_70B, H100, Layout(tp=4), 0, kv_cache_dtype="nope")
    assert {"prompt_tokens", "kv_cache_dtype"} <= set(e.value.errors)
    d = prefill(KIMI_K3, B200, Layout(tp=8, dp=2, ep=16), 10_000, cached_tokens=2000).to_dict()
    json.dumps(d)
    assert d["chunks"] == 1 and d["assumptions"]
