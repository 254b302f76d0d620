"""The vLLM profile against two more real startup logs (MLA at tp 8, KDA hybrid at tp 2), given the
KV memory each log reports; the derivation is in each test. Tolerance: 1% (the issue's), and the logged
memory is rounded to 0.01 GiB, i.e. +-5.4 MB, which moves num_blocks by less than one block here."""

from pathlib import Path

import pytest

from fleet.catalog import reference
from planner.engine import Layout, parse_startup_log, size

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "startup_logs"
H200 = reference.accelerator("h200-141gb")
WITHIN = 0.01


def logged(name: str):
    return parse_startup_log((LOGS / name).read_text())


def test_kimi_k2_thinking_tp8_mla_tokens():
    """Kimi-K2-Thinking (DeepSeek-V3 architecture, as the catalogue's kimi-k2: 61 MLA layers, 512 + 64),
    tp 8, bf16 KV ("Available KV cache memory: 46.80 GiB", "GPU KV cache size: 715,072 tokens").
    MLA is not split by tp: page = 64 tokens (FlashMLA) x 576 x 2 B = 73,728 B per layer; one group of 61
    layers; num_blocks = 50,251,117,363 // 73,728 // 61 = 11,173; tokens = 11,173 x 64 = 715,072.
    The recipe quotes no concurrency line."""
    log = logged("vllm-0.11.1-Kimi-K2-Thinking-tp8.log")
    r = size(
        reference.model("kimi-k2"),
        H200,
        layout=Layout(tp=8),
        context_tokens=131_072,
        engine="vllm",
        engine_version="0.11.1",
        available_kv_cache_gib=log.available_kv_cache_gib,
    )
    assert r.engine_block_size_tokens == 64
    assert r.engine_num_blocks == 11_173
    assert r.engine_kv_cache_tokens == pytest.approx(log.kv_cache_tokens, rel=WITHIN)
    assert r.engine_kv_cache_tokens == 715_072  # exact, in fact


def test_kimi_linear_tp2_kda_hybrid_tokens_concurrency_and_padding():
    """Kimi-Linear-48B-A3B at tp 2 (20 KDA + 7 MLA layers), bf16 KV, 2.30 GiB per GPU, max_model_len 120,000.
    KDA state per layer per rank: recurrent 16 x 128 x 128 x 4 B (fp32) = 1,048,576 + conv 3 x 6,144 x 2 B
    = 36,864 -> 1,085,440 B. MLA 1,152 B per token. 0.11.1 aligns MLA hybrids to 64: block = 64 x
    cdiv(1,085,440, 73,728) = 64 x 15 = 960 tokens, page 1,105,920 B. Types of 20 and 7 -> group size 7:
    3 KDA groups (21 slots, "Add 1 padding layers, may waste at most 5.00%") + 1 MLA = 4 groups.
    num_blocks = 2,469,606,195 // 1,105,920 // 7 = 319; tokens 319 // 4 x 960 = 75,840; a 120,000-token
    request holds cdiv(120,000, 960) = 125 + 3 blocks: 319 / 128 = 2.49x (logged 2.48x, 0.5%)."""
    log = logged("vllm-0.11.1-Kimi-Linear-48B-A3B-Instruct-AWQ-tp2.log")
    r = size(
        reference.model("kimi-linear-48b-a3b"),
        H200,
        layout=Layout(tp=2),
        context_tokens=120_000,
        engine="vllm",
        engine_version="0.11.1",
        max_model_len=log.max_concurrency_tokens,
        available_kv_cache_gib=log.available_kv_cache_gib,
    )
    assert r.engine_block_size_tokens == 960
    assert r.state_page_bytes == 1_085_440
    groups = r.kv_cache_groups
    assert [g["kind"] for g in groups] == ["linear", "linear", "linear", "mla"]
    assert sum(g["padding_layers"] for g in groups) == 1  # 1 of 20 KDA layers: "5.00%"
    assert r.engine_kv_cache_tokens == pytest.approx(log.kv_cache_tokens, rel=WITHIN)
    assert r.engine_kv_cache_tokens == 75_840  # exact
    assert r.engine_max_concurrency == pytest.approx(log.max_concurrency, rel=WITHIN)
