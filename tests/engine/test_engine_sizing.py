"""size() end to end: seeds' cluster figures, defaults, scaling, API shape, capacity curve."""

import json
import math

import pytest

from fleet.catalog import reference
from planner.engine.sizing import capacity_curve, size
from planner.engine.spec import LayerGroup, Layout, ModelArch

B200_192GB = reference.accelerator("b200-192gb")
GPT_OSS_120B = reference.model("gpt-oss-120b")
H100_80GB = reference.accelerator("h100-sxm-80gb")
H200_141GB = reference.accelerator("h200-141gb")
KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")
QWEN3_NEXT_80B = reference.model("qwen3-next-80b-a3b")

API_FIELDS = {
    "weights_bytes",
    "weights_bytes_per_gpu",
    "min_gpus_for_weights",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_gpu",
    "state_bytes_per_sequence",
    "state_bytes_per_sequence_per_gpu",
    "kv_bytes_per_sequence",
    "per_gpu",
    "max_concurrent_sequences",
    "stranded_bytes",
    "fits",
    "deficit_bytes",
    "assumptions",
    "max_concurrent_sequences_unified",
    "max_concurrent_sequences_split",
}


def test_sglang_recipe_32_h100_is_2560_gb():
    """Seeds: the SGLang cookbook's H100 recipe, 4 nodes x 8 = 32 GPUs, 2,560 GB aggregate."""
    r = size(KIMI_K3, H100_80GB, gpus=32, kv_cache_dtype="fp8", context_tokens=131_072)
    assert r.aggregate_hbm_bytes == 32 * 80 * 10**9 == 2_560_000_000_000
    assert r.layout == Layout(tp=32)
    assert r.fits
    assert r.max_concurrent_sequences >= 1


def test_18_h100_hold_the_raw_weights_but_not_the_shipped_model():
    """The 18-GPU floor counts 1.4 TB of raw 4-bit weights only; the shipped checkpoint (bf16 outside
    the experts, block scales) plus the runtime reserve does not fit 18 x 72 usable GB."""
    r = size(KIMI_K3, H100_80GB, layout=Layout(tp=2, pp=9))
    assert r.gpus == 18
    assert not r.fits
    assert r.deficit_bytes > 0
    assert r.cache_bytes < 0


def test_api_fields_and_json():
    d = size(QWEN3_NEXT_80B, H200_141GB, gpus=4, context_tokens=65_536, pool="split").to_dict()
    assert set(d) >= API_FIELDS
    assert set(d["per_gpu"]) == {
        "hbm_bytes",
        "hbm_bytes_reported",
        "usable_bytes",
        "weights_bytes",
        "runtime_bytes",
        "cache_bytes",
    }
    for key in API_FIELDS - {"assumptions", "per_gpu", "fits"}:
        assert isinstance(d[key], int), key
    assert all(isinstance(v, int) for k, v in d["per_gpu"].items() if k != "hbm_bytes_reported")
    assert d["engine"] == "generic" and d["engine_num_blocks"] is None  # no engine profile asked
    assert isinstance(d["fits"], bool)
    assert d["assumptions"] and all(isinstance(a, str) for a in d["assumptions"])
    assert d["inputs"]["layout"] == {"tp": 4, "pp": 1, "dp": 1, "ep": 1}
    assert d["inputs"]["context_tokens"] == 65_536
    json.dumps(d)


def test_per_gpu_budget_adds_up():
    r = size(LLAMA_31_70B, H100_80GB, gpus=4)
    # the memory the driver reports, not the datasheet's 80e9 B: int(85,018,877,624 x 0.9)
    assert r.usable_bytes == int(85_018_877_624 * 0.9) == 76_516_989_861
    assert r.cache_bytes == r.usable_bytes - r.weights_bytes_per_gpu - r.runtime_bytes
    assert r.weights_bytes_per_gpu == -(-r.weights_bytes // 4)


def test_defaults():
    only_gpus = size(LLAMA_31_70B, H100_80GB, gpus=8)
    assert only_gpus.layout == Layout(tp=8) and only_gpus.replicas == 1
    assert any("tp = gpus" in a for a in only_gpus.assumptions)
    only_layout = size(LLAMA_31_70B, H100_80GB, layout=Layout(tp=2, pp=2))
    assert only_layout.gpus == 4
    neither = size(LLAMA_31_70B, B200_192GB)
    assert neither.gpus == 1 and neither.layout == Layout()
    assert neither.context_tokens == LLAMA_31_70B.max_context_tokens
    unknown_max = ModelArch(
        name="no max",
        total_params=1_000_000_000,
        active_params=1_000_000_000,
        layer_groups=(LayerGroup(kind="full", count=8, kv_heads=8, head_dim=64),),
    )
    assert size(unknown_max, H100_80GB).context_tokens == 8192
    assert neither.gpu_memory_utilization == 0.9
    assert neither.kv_cache_dtype == "bf16"
    assert neither.include_scale_overhead is True


def test_replicas_and_data_parallel_ranks_multiply_capacity():
    one = size(LLAMA_31_70B, H100_80GB, layout=Layout(tp=4), context_tokens=32_768)
    two_replicas = size(LLAMA_31_70B, H100_80GB, gpus=8, layout=Layout(tp=4), context_tokens=32_768)
    dp2 = size(LLAMA_31_70B, H100_80GB, layout=Layout(tp=4, dp=2), context_tokens=32_768)
    assert two_replicas.replicas == 2
    assert two_replicas.max_concurrent_sequences == 2 * one.max_concurrent_sequences
    assert two_replicas.max_concurrent_sequences_per_replica == one.max_concurrent_sequences
    assert dp2.max_concurrent_sequences == 2 * one.max_concurrent_sequences


def test_unified_and_split_pools():
    unified = size(QWEN3_NEXT_80B, H200_141GB, gpus=4, context_tokens=8192)
    split = size(QWEN3_NEXT_80B, H200_141GB, gpus=4, context_tokens=8192, pool="split")
    assert unified.max_concurrent_sequences == split.max_concurrent_sequences_unified
    assert split.max_concurrent_sequences == split.max_concurrent_sequences_split
    assert split.max_concurrent_sequences_split < split.max_concurrent_sequences_unified
    assert split.stranded_bytes > 0


def test_state_slots_per_sequence():
    """SGLang with radix cache keeps 3 state slots per running request."""
    one = size(QWEN3_NEXT_80B, H200_141GB, gpus=4, context_tokens=4096)
    three = size(QWEN3_NEXT_80B, H200_141GB, gpus=4, context_tokens=4096, state_slots_per_sequence=3)
    assert three.max_concurrent_sequences < one.max_concurrent_sequences


def test_runtime_override_and_batch_tokens():
    base = size(GPT_OSS_120B, H100_80GB)
    override = size(GPT_OSS_120B, H100_80GB, runtime_reserve_gib=2)
    assert override.runtime_bytes == 2 * 2**30
    assert override.cache_bytes > base.cache_bytes
    small_batch = size(GPT_OSS_120B, H100_80GB, batch_tokens=1024)
    assert small_batch.runtime_activation_bytes < base.runtime_activation_bytes


def test_capacity_curve_matches_size():
    contexts = [1024, 8192, 65_536, 131_072]
    curve = capacity_curve(GPT_OSS_120B, H100_80GB, contexts, gpus=2, pool="split")
    assert [p.context_tokens for p in curve] == contexts
    for point in curve:
        r = size(GPT_OSS_120B, H100_80GB, gpus=2, pool="split", context_tokens=point.context_tokens)
        assert point.max_concurrent_sequences == r.max_concurrent_sequences
        assert point.max_concurrent_sequences_unified == r.max_concurrent_sequences_unified
        assert point.kv_bytes_per_sequence == r.kv_bytes_per_sequence
    counts = [p.max_concurrent_sequences for p in curve]
    assert counts == sorted(counts, reverse=True)
    assert curve[0].to_dict()["context_tokens"] == 1024


def test_memo_does_not_leak_between_equal_models():
    twin = ModelArch(**{f: getattr(LLAMA_31_70B, f) for f in LLAMA_31_70B.__dataclass_fields__})
    a = size(LLAMA_31_70B, H100_80GB, gpus=2).to_dict()
    b = size(twin, H100_80GB, gpus=2).to_dict()
    assert a == b


def test_expert_tensor_parallel_and_redundant_experts_in_the_layout():
    """ep x etp must equal a stage's tp x dp; an ep that does not divide the routed experts needs EPLB's redundant
    slots. DeepSeek-V3 (256 experts, 653,908,770,816 expert parameters in fp8) on 72 H100 as EP72 needs 32
    redundant experts (288 = 72 x 4); each GPU then holds 288/256 of its expert share:
    ceil(ceil(expert_bytes x 288 / 256) / 72) bytes."""
    from fleet.catalog import reference
    from planner.engine import EngineInputError, Layout, size, weights_bytes
    from planner.engine.sizing.weights import weight_components

    v3, h100 = reference.model("deepseek-v3"), reference.accelerator("h100-sxm-80gb")
    with pytest.raises(EngineInputError) as exc:
        size(v3, h100, layout=Layout(tp=1, dp=72, ep=72), context_tokens=2000)
    assert "redundant_experts=32" in exc.value.errors["ep"][0]
    with pytest.raises(EngineInputError) as exc:
        size(v3, h100, layout=Layout(tp=4, dp=2, ep=8, etp=4), context_tokens=2000)
    assert "must equal the 8 GPUs" in exc.value.errors["etp"][0]
    r = size(v3, h100, layout=Layout(tp=1, dp=72, ep=72, redundant_experts=32), context_tokens=2000)
    expert, other = weight_components(v3, None, True)
    assert expert + other == weights_bytes(v3)
    slots_bytes = math.ceil(expert * 288 / 256)  # exact for these integers: both sides are whole bytes
    assert r.weights_bytes_per_gpu == -(slots_bytes // -72) + other  # ceil division; tp 1 keeps every other byte
    assert r.to_dict()["layout"] == {"tp": 1, "pp": 1, "dp": 72, "ep": 72, "redundant_experts": 32}
    assert Layout(tp=4, dp=2, ep=2).expert_tp == 4 and Layout(tp=8, ep=8).expert_tp == 1
