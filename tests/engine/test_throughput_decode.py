"""Decode step: hand-computed cases (bandwidth-bound dense model, distinct experts, tp, pp, dp, formats)."""

import dataclasses
import json
import math

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.spec import LayerGroup, Layout, ModelArch
from planner.engine.throughput.decode import decode_step
from planner.engine.throughput.options import ThroughputOptions, compute_rate_format
from planner.engine.throughput.perf import distinct_experts, model_perf

KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")
H100 = reference.accelerator("h100-sxm-80gb")
B200 = reference.accelerator("b200-192gb")
A100 = reference.accelerator("a100-sxm-80gb")
#: A what-if SKU: H100 with no scale-up link stated (``interconnect_gbps`` 0).
H100_NO_LINK = dataclasses.replace(H100, interconnect_gbps=0)

LLAMA_BF16_BYTES = 70_553_706_496 * 2  # 141,107,412,992 B


def test_dense_model_at_batch_1_is_bandwidth_bound():
    """Llama-3.1-70B bf16 on one B200, batch 1: TPOT ~ weight bytes / (8 TB/s x 0.8) = 22.05 ms, plus launches.

    80 layers of full attention (6 kernels) and a dense MLP (4 kernels), tp 1 so no all-reduce kernels:
    800 kernels in one CUDA graph (batch 1 <= 512) at 3 us each = 2.4 ms, plus the 0.3 ms step overhead.
    """
    assert B200.hbm_bandwidth_tbps == 8.0  # the HGX B200 datasheet: 64 TB/s per 8 GPUs
    s = decode_step(LLAMA_31_70B, B200, Layout(), batch=1, context_tokens=1)
    bw = B200.hbm_bandwidth_tbps * 1e12 * 0.8
    assert s.bound == "memory"
    assert s.memory_time_s == pytest.approx((LLAMA_BF16_BYTES + 327_680) / bw, rel=1e-12)  # weights + 1 token of KV
    assert s.communication_time_s == 0  # tp = 1
    assert s.kernels_per_step == 800 and s.cuda_graph
    assert s.launch_time_s == pytest.approx(800 * 3e-6, rel=1e-12)
    assert s.time_s == pytest.approx(s.memory_time_s + 800 * 3e-6 + 3e-4, rel=1e-12)
    assert s.time_s == pytest.approx(LLAMA_BF16_BYTES / bw, rel=0.15)  # weights still ~89% of the step
    assert s.compute_time_s < s.memory_time_s / 100  # 2 x 70.6 GFLOP at 1,350 TFLOPS: 0.1 ms
    assert s.tokens_per_s == pytest.approx(1 / s.time_s)


def test_distinct_experts_formula():
    """E x (1 - (1 - k/E)^B): k at one token, tends to E, hand value at B = 56 for K3 (896, top-16)."""
    assert distinct_experts(896, 16, 1) == pytest.approx(16)
    assert distinct_experts(256, 8, 1) == pytest.approx(8)
    assert distinct_experts(896, 16, 56) == pytest.approx(896 * (1 - (880 / 896) ** 56))  # 569.3
    assert distinct_experts(896, 16, 100_000) == pytest.approx(896)
    values = [distinct_experts(896, 16, b) for b in (1, 2, 8, 64, 512, 4096)]
    assert values == sorted(values) and values[-2] < 896 and values[-1] <= 896
    assert distinct_experts(8, 8, 1) == 8  # top-k = E: every expert every time
    assert distinct_experts(0, 0, 10) == 0


def test_small_batches_read_few_experts_large_ones_nearly_all():
    k3 = model_perf(KIMI_K3)
    layout = Layout(tp=8, dp=2, ep=16)
    one = decode_step(KIMI_K3, B200, layout, batch=1, context_tokens=1024)
    big = decode_step(KIMI_K3, B200, layout, batch=4096, context_tokens=1024)
    per_gpu_all = k3.expert_bytes / 16
    assert one.distinct_experts == pytest.approx(16)
    assert one.expert_bytes_per_gpu == pytest.approx(per_gpu_all * 16 / 896)
    assert big.distinct_experts > 0.99 * 896
    assert big.expert_bytes_per_gpu == pytest.approx(per_gpu_all, rel=0.01)


def test_adding_tp_lowers_memory_time_and_raises_communication():
    """Llama-3.1-70B on H100 (NVLink 900 GB/s), batch 8 at 4k: tp 1 -> 8."""
    steps = [decode_step(LLAMA_31_70B, H100, Layout(tp=tp), 8, 4096) for tp in (1, 2, 4, 8)]
    memory = [s.memory_time_s for s in steps]
    comm = [s.communication_time_s for s in steps]
    assert memory == sorted(memory, reverse=True) and len(set(memory)) == 4
    assert comm == sorted(comm) and comm[0] == 0 and len(set(comm)) == 4
    # tp 2 by hand: 2 all-reduces x 80 layers x (8 us + 2 (tp-1)/tp x 8 seq x 8192 x 2 B / (450 GB/s x 0.7)),
    # 450 GB/s being one direction of the datasheet's 900 GB/s NVLink
    one_way = H100.interconnect_gbps / 2 * 1e9
    assert one_way == 450e9
    expected = 2 * 80 * (8e-6 + 1.0 * 8 * 8192 * 2 / (one_way * 0.7))
    assert steps[1].communication_time_s == pytest.approx(expected, rel=1e-9)
    # the weights split by tp: tp 8 reads an eighth of what tp 1 reads
    assert steps[3].dense_weight_bytes_per_gpu == pytest.approx(steps[0].dense_weight_bytes_per_gpu / 8)


def test_mla_kv_is_not_split_by_tp_but_gqa_kv_is():
    k_tp8 = decode_step(KIMI_K3, B200, Layout(tp=8, dp=2, ep=16), 64, 8192)
    k_tp16 = decode_step(KIMI_K3, B200, Layout(tp=16, ep=16), 64, 8192)
    # per GPU per sequence: MLA 24 layers x 576 x 2 B x 8192 tokens, whatever tp (dp=2 halves the sequences)
    assert k_tp8.kv_bytes_per_gpu == pytest.approx(32 * 24 * 576 * 2 * 8192)
    assert k_tp16.kv_bytes_per_gpu == pytest.approx(64 * 24 * 576 * 2 * 8192)
    l_tp2 = decode_step(LLAMA_31_70B, H100, Layout(tp=2), 4, 1000)
    l_tp8 = decode_step(LLAMA_31_70B, H100, Layout(tp=8), 4, 1000)
    assert l_tp2.kv_bytes_per_gpu == pytest.approx(4 * 327_680 / 2 * 1000)
    assert l_tp8.kv_bytes_per_gpu == pytest.approx(4 * 327_680 / 8 * 1000)


def test_state_is_read_and_written_every_step():
    """K3: 69 KDA layers, 449,372,160 B of state per sequence (tp 1) -> 2 x that per sequence per step."""
    s = decode_step(KIMI_K3, B200, Layout(tp=8, dp=2, ep=16), batch=2, context_tokens=100)
    per_seq_tp8 = 69 * (12 * 128 * 128 * 4 + 3 * (2 * 12 * 128 + 12 * 128) * 2)
    assert s.state_bytes_per_gpu == pytest.approx(2 * per_seq_tp8)  # one sequence per dp rank, read + write


def test_pipeline_bubble_and_tpot():
    """pp 4 at batch 1: one micro-batch, three idle stages; a token crosses all four stages."""
    one = decode_step(LLAMA_31_70B, H100, Layout(tp=2, pp=4), 1, 1000)
    full = decode_step(LLAMA_31_70B, H100, Layout(tp=2, pp=4), 64, 1000)
    assert one.micro_batches == 1 and one.pipeline_bubble_fraction == 0.75
    assert full.micro_batches == 4 and full.pipeline_bubble_fraction == 0
    flat = decode_step(LLAMA_31_70B, H100, Layout(tp=8), 1, 1000)
    assert one.time_s > flat.time_s  # 8 GPUs as tp 2 x pp 4 read 4x the weights per GPU of tp 8


def test_data_parallel_attention_splits_sequences_not_experts():
    lay_dp = Layout(tp=4, dp=4, ep=16)
    s = decode_step(KIMI_K3, B200, lay_dp, batch=64, context_tokens=4096)
    assert s.kv_bytes_per_gpu == pytest.approx(16 * 24 * 576 * 2 * 4096)  # 64 / 4 ranks
    assert s.expert_bytes_per_gpu == pytest.approx(
        model_perf(KIMI_K3).expert_bytes / 16 * distinct_experts(896, 16, 64) / 896
    )


def test_compute_rate_follows_the_weight_format():
    """fp8/int8 -> FP8 rate, NVFP4 -> FP4, MXFP4 -> FP8 (MXFP8 activations), int4 -> BF16; fall back down."""
    assert compute_rate_format(B200, "bf16") == "bf16"
    assert compute_rate_format(B200, "fp8") == "fp8"
    assert compute_rate_format(B200, "nvfp4") == "fp4"
    assert compute_rate_format(B200, "mxfp4") == "fp8"
    assert compute_rate_format(B200, "int4") == "bf16"
    assert compute_rate_format(H100, "nvfp4") == "fp8"  # Hopper has no FP4 tensor cores
    assert compute_rate_format(A100, "fp8") == "bf16"  # nor has Ampere FP8
    assert compute_rate_format(B200, "bf16", "fp4") == "fp4"
    s = decode_step(KIMI_K3, B200, Layout(tp=8, dp=2, ep=16), 1, 1)
    assert (s.dense_compute_format, s.expert_compute_format) == ("bf16", "fp8")


def test_expert_params_estimated_when_unknown():
    """An MoE without expert_params: routed = (total - active) x E / (E - k)."""
    m = ModelArch(
        name="moe",
        total_params=100_000_000_000,
        active_params=10_000_000_000,
        layer_groups=(LayerGroup(kind="full", count=32, kv_heads=8, head_dim=128),),
        n_routed_experts=64,
        n_active_experts=4,
        hidden_size=4096,
        attention_heads=32,
    )
    perf = model_perf(m)
    assert perf.routed_params == pytest.approx(90e9 * 64 / 60)
    assert perf.dense_active_params + perf.routed_active_params == pytest.approx(10e9)


def test_validation_and_json():
    with pytest.raises(EngineInputError) as e:
        decode_step(LLAMA_31_70B, H100, Layout(tp=3), batch=0, context_tokens=0, kv_cache_dtype="fp6")
    assert {"batch", "context_tokens", "kv_cache_dtype"} <= set(e.value.errors)
    with pytest.raises(EngineInputError) as e:
        decode_step(LLAMA_31_70B, H100, Layout(tp=3))
    assert "tp" in e.value.errors
    with pytest.raises(EngineInputError) as e:
        decode_step(LLAMA_31_70B, H100, options=ThroughputOptions(memory_bandwidth_efficiency=1.5))
    assert "memory_bandwidth_efficiency" in e.value.errors
    d = decode_step(KIMI_K3, B200, Layout(tp=8, pp=2, ep=8), 32, 8192).to_dict()
    json.dumps(d)
    assert d["assumptions"] and d["bound"] in ("memory", "compute")
    assert math.isclose(d["bytes_per_gpu"]["total"], sum(v for k, v in d["bytes_per_gpu"].items() if k != "total"))


def test_unknown_interconnect_falls_back_to_pcie():
    """A SKU that states no interconnect: the fabric assumes PCIe Gen4 x16 and says so."""
    s = decode_step(LLAMA_31_70B, H100_NO_LINK, Layout(tp=8), 8, 1000)
    fast = decode_step(LLAMA_31_70B, H100, Layout(tp=8), 8, 1000)
    assert s.communication_time_s > fast.communication_time_s
    assert any("PCIe" in a for a in s.assumptions)
