"""Prefix-cache granularity (planner/engine/prefix_cache.py): every figure derived by hand here.

Rules (docs/sizing.md, "Prefix caching"): the attention block and state-page padding are vLLM's
``_align_hybrid_block_size`` (platforms/interface.py, 0.33.0); "align" holds 2 state blocks per running
request and ``prefix_cache_retention_interval`` 0 keeps the replay boundary and shared-prefix junctions
(v1/kv_cache_interface.py ``MambaSpec``, v1/core/single_type_kv_cache_manager.py ``MambaManager``).
"""

from __future__ import annotations

import math

import pytest

from fleet.catalog import reference
from planner.engine import EngineInputError, LayerGroup, Layout, ModelArch, TraceRequest, parse_trace_csv
from planner.engine import prefix_cache as analyse
from planner.engine.prefix_cache import replay_trace, retained_per_sequence
from planner.engine.units import GIB

H200 = reference.accelerator("h200-141gb")
QWEN3_NEXT = reference.model("qwen3-next-80b-a3b")
KIMI_LINEAR = reference.model("kimi-linear-48b-a3b")


def test_kimi_linear_as_the_catalogue_holds_it():
    """20 KDA layers of 32 heads x 128 dims (fp32 state, the vLLM default for KDA) and 7 MLA layers."""
    kda, mla = KIMI_LINEAR.layer_groups
    assert (kda.kind, kda.count, kda.value_heads, kda.key_heads, kda.key_dim, kda.value_dim) == (
        "linear", 20, 32, 32, 128, 128
    )  # fmt: skip
    assert kda.variant == "kda" and kda.conv_kernel == 4
    assert (mla.kind, mla.count, mla.kv_lora_rank, mla.qk_rope_head_dim) == ("mla", 7, 512, 64)


def test_kimi_linear_block_and_padding_vllm_033():
    """State page per KDA layer: recurrent 32 x 128 x 128 x 4 B (fp32) = 2,097,152 + conv 3 x (2 x 32 x 128
    + 32 x 128) x 2 B = 73,728 -> 2,170,880 B. MLA page per token (512 + 64) x 2 = 1,152 B. MLA hybrids align
    to 128 from 0.27: block = 128 x cdiv(2,170,880, 128 x 1,152) = 128 x 15 = 1,920 tokens; the state page is
    padded to 1,920 x 1,152 = 2,211,840 B, by 40,960 / 2,170,880 = 1.8868%."""
    r = analyse(KIMI_LINEAR, H200, Layout(tp=1), engine="vllm", engine_version="0.33.0")
    assert r.state_page_bytes == 2_170_880
    assert r.attention_block_size_tokens == 1_920 == r.hit_granularity_tokens
    assert r.padded_state_page_bytes == 2_211_840
    assert r.padding_fraction == pytest.approx(40_960 / 2_170_880)
    assert round(r.padding_fraction * 100, 2) == 1.89
    # One checkpoint: 20 KDA layers in groups of 7 (the 7 MLA layers set the group size; 20 >= 1.5 x 7)
    # -> 3 state groups of 7 slots (one padding slot), each slot one padded page: 21 x 2,211,840 B.
    assert r.checkpoint_state_bytes_per_gpu == 21 * 2_211_840 == 46_448_640


def test_kimi_linear_at_tp2_halves_the_state_but_not_the_mla_page():
    """tp 2: 16 KDA heads, state 16 x 128 x 128 x 4 + 3 x (2 x 16 x 128 + 16 x 128) x 2 = 1,085,440 B; MLA is
    not split: block = 128 x cdiv(1,085,440, 147,456) = 128 x 8 = 1,024; padding (1,179,648 - 1,085,440) /
    1,085,440 = 8.68%."""
    r = analyse(KIMI_LINEAR, H200, Layout(tp=2), engine="vllm")
    assert r.state_page_bytes == 1_085_440
    assert r.attention_block_size_tokens == 1_024
    assert r.padding_fraction == pytest.approx((1_024 * 1_152 - 1_085_440) / 1_085_440)


def test_qwen3_next_tp2_block_544():
    """Gated DeltaNet at tp 2 in bf16: 16 value heads x 128 x 128 x 2 = 524,288 + conv 3 x (2 x 8 x 128 + 16 x
    128) x 2 = 24,576 -> 548,864 B; full attention 2 x 1 x 256 x 2 = 1,024 B per token: block 16 x cdiv(548,864,
    16,384) = 544 tokens (vLLM's log: 'Setting attention block size to 544 tokens'); padding 8,192 / 548,864."""
    r = analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm")
    assert r.attention_block_size_tokens == 544 == r.hit_granularity_tokens
    assert r.state_page_bytes == 548_864
    assert r.padded_state_page_bytes == 557_056
    assert r.padding_fraction == pytest.approx(8_192 / 548_864)
    assert r.cache_mode == "align" and r.retention == "semantic"


def test_checkpoint_bytes_and_sequences_lost_by_hand():
    """Qwen3-Next tp 2, 40 GiB of KV memory, 32,768-token sequences. 36 GDN + 12 full layers: 4 groups of 12;
    one checkpoint = 3 state groups x 12 slots x 557,056 B = 20,054,016 B. num_blocks = 42,949,672,960 //
    557,056 // 12 = 6,425. Per request: cdiv(32,768, 544) = 61 attention blocks + 3 state blocks = 64 ->
    6,425 // 64 = 100 sequences with prefix caching off. "align" holds a second state block per group (67
    blocks: 95); the semantic checkpoint (the replay boundary) one more (70: 91); dense retention
    (32,767 // 544 = 60 checkpoints) 67 + 180 = 247 (26)."""
    r = analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", available_kv_cache_gib=40, context_tokens=32_768)
    assert r.checkpoint_state_bytes_per_gpu == 3 * 12 * 557_056 == 20_054_016
    rows = {(m.mode, m.retention): m for m in r.modes}
    none, semantic, dense = rows["none", "none"], rows["align", "semantic"], rows["align", "dense"]
    assert none.sequences_per_replica == 6_425 // 64 == 100
    assert semantic.running_state_copies == 1 and semantic.retained_checkpoints_per_sequence == 1
    assert (
        semantic.checkpoint_bytes_per_sequence_per_gpu
        == 2 * 20_054_016
        == r.checkpoint.checkpoint_bytes_per_sequence_per_gpu
    )
    assert semantic.sequences_reserved_per_replica == 6_425 // 67 == 95
    assert semantic.sequences_per_replica == 6_425 // 70 == 91
    assert (semantic.sequences_lost, semantic.sequences_lost_reserved) == (9, 5)
    assert dense.retained_checkpoints_per_sequence == 32_767 // 544 == 60
    assert dense.checkpoint_bytes_per_sequence_per_gpu == 61 * 20_054_016
    assert dense.sequences_per_replica == 6_425 // (67 + 3 * 60) == 26
    assert dense.sequences_lost == 74


def test_interval_retention_by_hand():
    """interval 4,352 (8 blocks): 32,767 // 4,352 = 7 periodic checkpoints + the replay boundary 32,640 (not a
    multiple of 4,352) = 8."""
    r = analyse(
        QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", retention="interval", checkpoint_interval_tokens=4_352,
        available_kv_cache_gib=40, context_tokens=32_768,
    )  # fmt: skip
    assert r.checkpoint.retained_checkpoints_per_sequence == 8
    assert r.checkpoint.checkpoint_bytes_per_sequence_per_gpu == 9 * 20_054_016
    with pytest.raises(EngineInputError) as err:
        analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", retention="interval", checkpoint_interval_tokens=1000)
    assert "checkpoint_interval_tokens" in err.value.errors


def test_copy_on_write_of_a_partial_hit():
    """36 layers x 548,864 B = 19,759,104 B per GPU copied (read + written) at 4.8 TB/s: 2 x 19,759,104 / 4.8e12 s."""
    r = analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm")
    assert r.copy_on_write.bytes_per_hit_per_gpu == 36 * 548_864 == 19_759_104
    assert r.copy_on_write.hbm_traffic_bytes_per_hit == 2 * 19_759_104
    assert r.copy_on_write.seconds_per_hit == pytest.approx(2 * 19_759_104 / 4.8e12)


SYSTEM_PROMPT = [TraceRequest(f"r{i}", float(i), 1_500, "sys", 1_000) for i in range(3)]


def test_coarse_block_loses_reuse_a_fine_one_keeps():
    """Three 1,500-token prompts sharing a 1,000-token system prompt. The first computes it; the next two can
    reuse min(1,000, 1,499) = 1,000 tokens with a token-level cache (2,000 of 4,500). Every block kept (dense):
    16-token blocks reuse 992 each (1,984), 544-token blocks 544 each (1,088), 1,024-token blocks nothing."""
    ideal = replay_trace(SYSTEM_PROMPT, 1, "ideal").hits
    assert ideal == (0, 1_000, 1_000)
    assert replay_trace(SYSTEM_PROMPT, 16, "dense").hits == (0, 992, 992)
    assert replay_trace(SYSTEM_PROMPT, 544, "dense").hits == (0, 544, 544)
    assert replay_trace(SYSTEM_PROMPT, 1_024, "dense").hits == (0, 0, 0)
    r = analyse(
        QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", retention="dense", trace=SYSTEM_PROMPT,
        granularities=[16, 1_024],
    )  # fmt: skip
    by = {g.granularity_tokens: g for g in r.granularities}
    assert set(by) == {16, 544, 1_024}  # the engine's own block is always compared
    assert by[16].reusable_token_fraction == pytest.approx(1_984 / 4_500)
    assert by[544].reusable_token_fraction == pytest.approx(1_088 / 4_500)
    assert by[1_024].reusable_token_fraction == 0
    assert by[544].engine_choice and not by[16].engine_choice
    assert r.ideal_reusable_token_fraction == pytest.approx(2_000 / 4_500)
    assert by[16].fraction_of_ideal == pytest.approx(1_984 / 2_000)
    assert by[16].prefill_s_saved > by[544].prefill_s_saved > 0 == by[1_024].prefill_s_saved
    assert r.reusable_token_fraction[544] == pytest.approx(1_088 / 4_500)


def test_semantic_retention_learns_the_junction_on_the_second_request():
    """vLLM 0.29+ with retention 0: the first request keeps only its replay boundary (1,499 // g x g, past the
    shared 1,000 tokens, so useless); the second misses, and pins the junction 1,000 // g x g; the third hits."""
    assert replay_trace(SYSTEM_PROMPT, 544, "semantic").hits == (0, 0, 544)
    assert replay_trace(SYSTEM_PROMPT, 16, "semantic").hits == (0, 0, 992)
    assert replay_trace(SYSTEM_PROMPT, 16, "semantic").retained == 1  # the one junction
    # A prompt that is all prefix (a conversation's next turn) keeps its replay boundary for the next one.
    turns = [TraceRequest("t1", 0.0, 1_200, "chat", 1_200), TraceRequest("t2", 1.0, 2_000, "chat", 1_200)]
    assert replay_trace(turns, 544, "semantic").hits == (0, 1_088)  # 1,199 // 544 x 544


def test_step_retention_of_older_align_mode():
    """vLLM 0.15-0.28 "align": the state at the last block boundary of each scheduler step. With 8,192-token steps
    and 544-token blocks the steps end at multiples of 8,160; a 1,000-token shared prefix is never reused."""
    assert replay_trace(SYSTEM_PROMPT, 544, "step", chunk=8_192).hits == (0, 0, 0)
    long = [TraceRequest(f"l{i}", float(i), 20_000, "doc", 18_000) for i in range(2)]
    assert replay_trace(long, 544, "step", chunk=8_192).hits == (0, 16_320)
    assert retained_per_sequence("step", 20_000, 544, 0, 8_192) == 3  # 8,160, 16,320, replay 19,584


def test_sglang_modes_and_granularity():
    """SGLang 0.5.23 on Qwen3-Next: extra_buffer (GDN: the auto strategy with the overlap scheduler), hits on
    max(64, page 1) = 64 tokens; 5 slots per running request; no_buffer 3 and hits only where a request ended."""
    r = analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="sglang", available_kv_cache_gib=40, trace=SYSTEM_PROMPT)
    assert (r.cache_mode, r.hit_granularity_tokens, r.attention_block_size_tokens) == ("extra_buffer", 64, 1)
    assert r.checkpoint.running_state_copies == 4
    assert {g.granularity_tokens: g.reused_tokens for g in r.granularities}[64] == 960  # the third: 1,000 // 64 x 64
    no_buffer = analyse(
        QWEN3_NEXT, H200, Layout(tp=2), engine="sglang", cache_mode="no_buffer", available_kv_cache_gib=40,
        trace=SYSTEM_PROMPT,
    )  # fmt: skip
    assert no_buffer.checkpoint.running_state_copies == 2
    assert all(g.reused_tokens == 0 for g in no_buffer.granularities)


def test_sglang_best_ratio_by_hand():
    """SGLang 0.5.23, Qwen3-Next tp 2: a slot is 36 x (16 x 128 x 128 x 4 + 3 x (2 x 8 x 128 + 16 x 128) x 2)
    = 36 x 1,073,152 = 38,633,472 B (fp32 recurrent state); a KV token 12 layers x 1 head x (256 + 256) x 2 =
    12,288 B. extra_buffer: 5 running slots + 1 retained = 6 -> 231,800,832 B of state against 32,768 x 12,288 =
    402,653,184 B of KV: the ratio that strands neither pool is 0.5757 (0.9 by default)."""
    rest = 40 * GIB
    r = analyse(
        QWEN3_NEXT, H200, Layout(tp=2), engine="sglang", available_kv_cache_gib=40, context_tokens=32_768
    ).state_pool_ratio
    slot, kv = 36 * 1_073_152, 32_768 * 12_288
    assert (r.state_bytes_per_request, r.kv_bytes_per_request) == (6 * slot, kv)
    assert r.best_ratio == pytest.approx(6 * slot / kv, rel=2e-3)

    def held(ratio: float) -> int:  # 0.5.17+: (budget - slot) // slot slots, the padding slot charged
        slots = int((rest * ratio / (1 + ratio) - slot) // slot)
        tokens = (rest - (slots + 1) * slot) // 12_288
        return min(slots // 6, tokens // 32_768)

    assert r.sequences_at_current == held(0.9)
    assert r.sequences_at_best == max(held(r.best_ratio), held(6 * slot / kv))
    assert r.sequences_at_best > r.sequences_at_current
    fitted = analyse(
        QWEN3_NEXT, H200, Layout(tp=2), engine="sglang", available_kv_cache_gib=40, context_tokens=32_768,
        concurrency=50,
    ).state_pool_ratio  # fmt: skip
    assert fitted.fits and fitted.feasible_ratio_range[0] <= fitted.best_ratio <= fitted.feasible_ratio_range[1]
    assert fitted.best_ratio == pytest.approx((50 * 6 * slot + slot) / (50 * kv), rel=2e-3)
    assert any("strands neither pool" in line for line in fitted.reasoning)


def test_vllm_all_mode_rounds_the_block_to_the_ssd_chunk():
    """vLLM 0.24 "all" for a Mamba2 hybrid: state 8 x 64 x 128 x 2 + 3 x (2 x 8 x 128 + 8 x 64) x 2 = 131,072 +
    15,360 = 146,432 B; KV 2 x 8 x 128 x 2 = 4,096 B a token -> 36 tokens per state; lcm(256, 16) x
    cdiv(36, 256) = 256 tokens, against 16 x cdiv(146,432, 65,536) = 48 without prefix caching."""
    mamba = ModelArch(
        name="toy-mamba2-hybrid", total_params=1_000_000_000, active_params=1_000_000_000, hidden_size=1024,
        layer_groups=(
            LayerGroup("linear", 8, key_heads=8, value_heads=8, key_dim=128, value_dim=64, conv_kernel=4,
                       state_dtype="bf16", variant="mamba2"),
            LayerGroup("full", 2, kv_heads=8, head_dim=128),
        ),
    )  # fmt: skip
    off = analyse(mamba, H200, engine="vllm", engine_version="0.24.0", cache_mode="none")
    assert off.state_page_bytes == 146_432 and off.attention_block_size_tokens == 48
    r = analyse(mamba, H200, engine="vllm", engine_version="0.24.0", context_tokens=4_096)
    assert r.cache_mode == "all" and r.attention_block_size_tokens == 256
    assert r.checkpoint.running_state_copies == math.ceil(4_096 / 256) - 1 == 15
    with pytest.raises(EngineInputError) as err:
        analyse(mamba, H200, engine="vllm", engine_version="0.33.0", cache_mode="all")
    assert "cache_mode" in err.value.errors


def test_gdn_falls_back_from_all_to_align():
    r = analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", engine_version="0.24.0", cache_mode="all")
    assert r.cache_mode == "align" and r.retention == "step"
    assert any("falls back to 'align'" in a for a in r.assumptions)


def test_parse_trace_csv_and_its_errors():
    text = "request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens\na,0,100,p,50\nb,1.5,80,,0\n"
    assert parse_trace_csv(text) == (TraceRequest("a", 0.0, 100, "p", 50), TraceRequest("b", 1.5, 80, "", 0))
    bad = "request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens\na,0,100,p,50\nb,x,80,p,90\n"
    with pytest.raises(EngineInputError) as err:
        parse_trace_csv(bad)
    messages = err.value.errors["trace"]
    assert any(m.startswith("Row 2 (line 3), column arrival_s") for m in messages)
    assert any(m.startswith("Row 2 (line 3), column shared_prefix_tokens") and "more than" in m for m in messages)
    with pytest.raises(EngineInputError) as err:
        parse_trace_csv("id,prompt\n1,2\n")
    assert "missing column" in err.value.errors["trace"][0]
    with pytest.raises(EngineInputError):
        parse_trace_csv("")


def test_input_errors_name_their_fields():
    with pytest.raises(EngineInputError) as err:
        analyse(QWEN3_NEXT, H200, engine="tgi", context_tokens=0, granularities=[0])
    assert {"engine", "context_tokens", "granularities"} <= set(err.value.errors)
    with pytest.raises(EngineInputError) as err:
        analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", engine_version="0.24.0", retention="dense")
    assert "retention" in err.value.errors
    with pytest.raises(EngineInputError) as err:
        analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="sglang", cache_mode="align")
    assert "cache_mode" in err.value.errors


def test_prefill_saved_is_the_throughput_models_difference():
    """Time saved per hit = prefill(prompt, 0) - prefill(prompt, hit) of planner/engine/throughput/prefill.py."""
    from planner.engine.throughput import prefill

    r = analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", retention="dense", trace=SYSTEM_PROMPT)
    cold = prefill(QWEN3_NEXT, H200, Layout(tp=2), prompt_tokens=1_500).time_s
    warm = prefill(QWEN3_NEXT, H200, Layout(tp=2), prompt_tokens=1_500, cached_tokens=992).time_s
    by = {g.granularity_tokens: g for g in r.granularities}
    assert by[16].prefill_s_saved == pytest.approx(2 * (cold - warm))
    assert r.cold_prefill_s == pytest.approx(3 * cold)


def test_attention_only_models_reuse_every_block():
    """Llama-3.1-70B has no state: every 16-token block of the shared 1,000 tokens is reusable (992), mode "kv"."""
    r = analyse(reference.model("llama-3.1-70b"), H200, Layout(tp=2), engine="vllm", trace=SYSTEM_PROMPT)
    assert (r.cache_mode, r.hit_granularity_tokens, r.checkpoint_state_bytes_per_gpu) == ("kv", 16, 0)
    assert {g.granularity_tokens: g.reused_tokens for g in r.granularities}[16] == 2 * 992
    assert r.copy_on_write is None and r.state_pool_ratio is None


def test_all_mode_is_refused_where_the_release_has_none():
    with pytest.raises(EngineInputError) as err:
        analyse(QWEN3_NEXT, H200, Layout(tp=2), engine="vllm", engine_version="0.33.0", cache_mode="all")
    assert "offers none, align" in err.value.errors["cache_mode"][0]
