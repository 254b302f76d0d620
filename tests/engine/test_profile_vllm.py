"""vLLM V1's allocator (planner/engine/profiles/vllm.py), each figure derived by hand in the test.

Formulas (vLLM source, per release; docs/sizing.md "Engine profiles"):
pages ``v1/kv_cache_interface.py``; hybrid block ``model_executor/models/config.py``
(``HybridAttentionMambaModelConfig``, to 0.19) and ``platforms/interface.py``
(``_align_hybrid_block_size``, 0.20+); groups, blocks, logged tokens and concurrency
``v1/core/kv_cache_utils.py`` (``get_kv_cache_config_from_groups``,
``get_max_concurrency_for_kv_cache_config``; 0.22+ ``get_kv_cache_capacity``).
"""

import math

import pytest

from fleet.catalog import reference
from planner.engine import EngineInputError, Layout, size
from planner.engine.profiles import vllm_allocation, vllm_release
from planner.engine.units import GIB

QWEN3_NEXT = reference.model("qwen3-next-80b-a3b")
KIMI_K3 = reference.model("kimi-k3")
KIMI_LINEAR = reference.model("kimi-linear-48b-a3b")
LLAMA_70B = reference.model("llama-3.1-70b")
DEEPSEEK_V3 = reference.model("deepseek-v3")
GPT_OSS = reference.model("gpt-oss-120b")
H200 = reference.accelerator("h200-141gb")

AVAILABLE = 40 * GIB  # 42,949,672,960 B of KV cache memory per GPU, as a log would report it


def test_qwen3_next_tp2_block_padding_and_groups():
    """Qwen3-Next-80B-A3B at tp 2, bf16 (vLLM keeps gated DeltaNet state in the model dtype).

    State per GDN layer per rank: recurrent 32/2 = 16 heads x 128 x 128 x 2 B = 524,288; conv
    3 x (2 x 16/2 x 128 + 32/2 x 128) = 12,288 x 2 B = 24,576; page 548,864 B.
    Attention per token per layer: 2 x (2 KV heads / 2) x 256 x 2 B = 1,024 B.
    Block = 16 x cdiv(548,864, 16 x 1,024) = 16 x 34 = 544 tokens ("Setting attention block size to
    544 tokens"); attention page 544 x 1,024 = 557,056 B; padding 8,192 / 548,864 = 1.49%.
    Types: 36 GDN, 12 full -> group_size 12 (36 is not under 1.5 x 12): 3 GDN groups + 1 full = 4.
    """
    a = vllm_allocation(QWEN3_NEXT, Layout(tp=2), available_bytes=AVAILABLE, max_model_len=262_144)
    assert a.block_size_tokens == 544
    assert a.state_page_bytes == 548_864
    assert a.page_padding_fraction == pytest.approx(8_192 / 548_864)
    assert round(a.page_padding_percent, 2) == 1.49
    assert (a.state_dtype, a.conv_dtype) == ("bf16", "bf16")
    assert [(g.kind, g.layers) for g in a.groups] == [("linear", 12)] * 3 + [("full", 12)]
    assert all(g.page_bytes == 557_056 for g in a.groups)


@pytest.mark.parametrize(
    ("version", "tokens"),
    [
        # 0.10-0.21: num_blocks // 4 groups x 544 = 1,606 x 544 (hybrid path of get_kv_cache_config)
        ("0.10.2", 1_606 * 544),
        ("0.11.0", 1_606 * 544),
        ("0.21.0", 1_606 * 544),
        # 0.22+: int(concurrency x max_model_len) = int(6,425 / 485 x 262,144)
        ("0.22.0", int(6_425 / 485 * 262_144)),
        # 0.28+ (the newest by default) turns prefix caching on for hybrids: "align" mode, 2 blocks per GDN
        # group: 482 + 3 x 2 = 488 blocks per request
        (None, int(6_425 / 488 * 262_144)),
    ],
)
def test_qwen3_next_logged_tokens_by_release(version, tokens):
    """num_blocks = 42,949,672,960 // 557,056 // 12 = 77,101 // 12 = 6,425 (each of the 12 tensors holds
    num_blocks pages, shared by one layer of each group). A request of 262,144 tokens holds
    cdiv(262,144, 544) = 482 blocks of the attention group + 1 block per GDN group = 485:
    concurrency 6,425 / 485 = 13.247x (the float vLLM logs)."""
    a = vllm_allocation(QWEN3_NEXT, Layout(tp=2), available_bytes=AVAILABLE, max_model_len=262_144, version=version)
    assert a.num_blocks == 42_949_672_960 // 557_056 // 12 == 6_425
    assert a.kv_cache_tokens == tokens
    assert a.max_concurrency == pytest.approx(6_425 / (485 if version else 488))


def test_dense_gqa_llama_70b_tp4():
    """Llama-3.1-70B at tp 4, bf16: page 2 x 16 x (8 / 4) x 128 x 2 B = 16,384 B; one group of 80 layers;
    num_blocks = 42,949,672,960 // 16,384 // 80 = 32,768; tokens 32,768 x 16 = 524,288;
    concurrency at 131,072 = 32,768 / cdiv(131,072, 16) = 32,768 / 8,192 = 4.0x."""
    a = vllm_allocation(LLAMA_70B, Layout(tp=4), available_bytes=AVAILABLE, max_model_len=131_072, version="0.11.0")
    assert (a.block_size_tokens, a.num_blocks, a.kv_cache_tokens) == (16, 32_768, 524_288)
    assert a.max_concurrency == pytest.approx(4.0)
    assert len(a.groups) == 1 and a.state_page_bytes is None and a.page_padding_fraction == 0


def test_mla_deepseek_v3_tp8_block_64_not_split_by_tp():
    """DeepSeek-V3 at tp 8: MLA block 64 (FlashMLA); page 64 x (512 + 64) x 2 B = 73,728 B, the same on every
    rank (one latent head); 61 layers: num_blocks = 42,949,672,960 // 73,728 // 61 = 9,549;
    tokens 9,549 x 64 = 611,136; at 163,840 tokens cdiv(163,840, 64) = 2,560 blocks: 3.73x."""
    a = vllm_allocation(DEEPSEEK_V3, Layout(tp=8), available_bytes=AVAILABLE, max_model_len=163_840, version="0.11.0")
    assert a.block_size_tokens == 64
    assert a.groups[0].page_bytes == 73_728
    assert a.num_blocks == 42_949_672_960 // 73_728 // 61 == 9_549
    assert a.kv_cache_tokens == 9_549 * 64
    assert a.max_concurrency == pytest.approx(9_549 / 2_560)


@pytest.mark.parametrize(
    ("version", "device", "kv_dtype", "block"),
    [
        # Up to 0.17 platforms/cuda.py check_and_update_config forces FlashMLA's 64 on a Hopper (any KV dtype).
        ("0.17.0", "NVIDIA H200 SXM 141GB", "bf16", 64),
        ("0.11.1", "NVIDIA H100 SXM 80GB", "bf16", 64),
        # From 0.18 the block is the first valid backend's of _get_backend_priorities: FLASH_ATTN_MLA's
        # [MultipleOf(16)] keeps 16 with a bf16 KV cache; it takes no fp8, so FLASHMLA's [64] then.
        ("0.18.0", "NVIDIA H200 SXM 141GB", "bf16", 16),
        ("0.33.0", "NVIDIA H100 SXM 80GB", "bf16", 16),
        ("0.33.0", "NVIDIA H200 SXM 141GB", "fp8", 64),
        (None, None, "bf16", 16),  # no GPU named: Hopper
        # Blackwell (SM 10.x): 0.10.0 forces nothing (FlashMLA is Hopper-only), 0.10.2-0.14 CUTLASS MLA's 128,
        # 0.15-0.17 FlashInfer MLA's 64 (qk_nope_head_dim 128), from 0.18 FLASHINFER_MLA first, [32, 64]: 32.
        ("0.10.0", "NVIDIA B200 192GB (HGX B200)", "bf16", 16),
        ("0.11.1", "NVIDIA B200 192GB (HGX B200)", "bf16", 128),
        ("0.14.0", "NVIDIA GB300 (Blackwell Ultra) 288GB, NVL72", "bf16", 128),
        ("0.15.0", "NVIDIA B200 192GB (HGX B200)", "bf16", 64),
        ("0.17.0", "NVIDIA B200 192GB (HGX B200)", "bf16", 64),
        ("0.18.0", "NVIDIA B200 192GB (HGX B200)", "bf16", 32),
        ("0.33.0", "NVIDIA GB300 (Blackwell Ultra) 288GB, NVL72", "fp8", 32),
        # Other GPUs: no FlashMLA before 0.18, TRITON_MLA's [MultipleOf(16)] after.
        ("0.11.1", "NVIDIA A100 SXM 80GB", "bf16", 16),
        ("0.33.0", "NVIDIA L40S 48GB (PCIe)", "bf16", 16),
    ],
)
def test_mla_block_follows_release_gpu_and_kv_dtype(version, device, kv_dtype, block):
    """DeepSeek-V3 at tp 8 (read in the 0.10.0, 0.10.2, 0.11.1, 0.13.0, 0.14.0, 0.15.0, 0.16.0, 0.17.0, 0.18.0,
    0.19.0, 0.22.0, 0.28.0 and 0.33.0 wheels' platforms/cuda.py and v1/attention/backends/mla/*.py). The page
    is block x 576 x bytes: num_blocks scales by 1 / block."""
    a = vllm_allocation(
        DEEPSEEK_V3,
        Layout(tp=8),
        available_bytes=AVAILABLE,
        max_model_len=163_840,
        version=version,
        kv_cache_dtype=kv_dtype,
        device_name=device,
    )
    assert a.block_size_tokens == block
    per_token = 576 * (1 if kv_dtype == "fp8" else 2)
    assert a.num_blocks == 42_949_672_960 // (block * per_token) // 61


def test_mla_deepseek_v3_tp8_block_16_on_hopper_from_0_18():
    """DeepSeek-V3 at tp 8 under vLLM 0.33 on an H200: FLASH_ATTN_MLA keeps 16-token blocks: page 16 x 576 x 2 =
    18,432 B; num_blocks = 42,949,672,960 // 18,432 // 61 = 38,199 (4 x 9,549 + 3); tokens
    int(38,199 / 10,240 x 163,840) = 611,184 (64-token blocks: 611,136); 3.73x either way."""
    r = size(DEEPSEEK_V3, H200, layout=Layout(tp=8), context_tokens=163_840, engine="vllm", available_kv_cache_gib=40)
    a = r.allocation
    assert (a.block_size_tokens, a.num_blocks) == (16, 38_199)
    assert a.kv_cache_tokens == int(38_199 / 10_240 * 163_840) == 611_184
    assert any("FLASH_ATTN_MLA" in n for n in a.assumptions)
    b200 = size(
        DEEPSEEK_V3,
        reference.accelerator("b200-192gb"),
        layout=Layout(tp=8),
        context_tokens=163_840,
        engine="vllm",
        available_kv_cache_gib=40,
    ).allocation
    assert b200.block_size_tokens == 32 and any("FLASHINFER_MLA" in n for n in b200.assumptions)


def test_gpu_generation_from_the_name():
    from planner.engine.gpus import gpu_generation

    names = {
        "NVIDIA H100 SXM 80GB": "sm90",
        "NVIDIA H200 SXM 141GB": "sm90",
        "NVIDIA GH200 480GB": "sm90",
        "NVIDIA B200 192GB (HGX B200)": "sm100",
        "NVIDIA GB300 (Blackwell Ultra) 288GB, NVL72": "sm100",
        "NVIDIA RTX PRO 6000 Blackwell": "sm120",
        "NVIDIA A100 SXM 80GB": "sm8x",
        "NVIDIA L40S 48GB (PCIe)": "sm8x",
        "NVIDIA GeForce RTX 4090 24GB": "sm8x",
        "AMD Instinct MI300X 192GB": "sm90",  # not recognised: Hopper assumed, and said
    }
    assert {n: gpu_generation(n)[0] for n in names} == names
    assert "not recognised" in gpu_generation("AMD Instinct MI300X 192GB")[1]


def test_block_size_override():
    """--block-size 32 on Llama-70B tp 4: page 32,768 B, num_blocks 16,384, tokens 524,288 (unchanged)."""
    a = vllm_allocation(
        LLAMA_70B,
        Layout(tp=4),
        available_bytes=AVAILABLE,
        max_model_len=131_072,
        block_size_tokens=32,
        version="0.11.0",
    )
    assert (a.block_size_tokens, a.num_blocks, a.kv_cache_tokens) == (32, 16_384, 524_288)


def test_kimi_linear_kda_state_fp32_and_mla_alignment_by_release():
    """Kimi-Linear-48B at tp 1: KDA recurrent state fp32, conv bf16 (vLLM kda_state_dtype):
    32 x 128 x 128 x 4 B = 2,097,152 + conv 3 x (32 x 128 x 3) x 2 B = 73,728 -> 2,170,880 B.
    MLA page per token 576 x 2 = 1,152 B. Block: 0.11.1+ aligns MLA hybrids to 64:
    64 x cdiv(2,170,880, 64 x 1,152) = 64 x 30 = 1,920; 0.27+ to 128: 128 x cdiv(2,170,880, 147,456)
    = 128 x 15 = 1,920 too. Types 20 KDA, 7 MLA -> group_size 7, 3 KDA groups (1 padding slot) + 1 MLA."""
    for version in ("0.11.1", "0.27.0"):
        a = vllm_allocation(KIMI_LINEAR, Layout(), available_bytes=AVAILABLE, max_model_len=1_048_576, version=version)
        assert (a.state_dtype, a.conv_dtype) == ("fp32", "bf16")
        assert a.state_page_bytes == 2_170_880
        assert a.block_size_tokens == 1_920
        assert [(g.kind, g.layers, g.padding_layers) for g in a.groups] == [
            ("linear", 7, 0),
            ("linear", 7, 0),
            ("linear", 7, 1),
            ("mla", 7, 0),
        ]


def test_k3_mla_hybrid_alignment_moves_to_128_at_0_27():
    """Kimi K3 at tp 1, bf16 KV: KDA state 96 x 128 x 128 x 4 B = 6,291,456 + conv 3 x 36,864 x 2 B = 221,184
    -> 6,512,640 B per layer; MLA 1,152 B per token. vLLM 0.20-0.26 align MLA hybrids to the backend's smallest
    kernel block (vllm/platforms/interface.py _align_hybrid_block_size): on a Hopper with a bf16 KV cache that is
    FLASH_ATTN_MLA's 16 (first in platforms/cuda.py _get_backend_priorities): 16 x cdiv(6,512,640, 18,432) =
    16 x 354 = 5,664 tokens (this test said 5,696 = 64 x 89 while the profile took FlashMLA's 64 for every
    release); with an fp8 KV cache FLASHMLA's 64: 64 x cdiv(6,512,640, 36,864) = 64 x 177 = 11,328. 0.27.0 adds
    the 128 alignment for use_mla (read in both wheels): 128 x cdiv(6,512,640, 147,456) = 128 x 45 = 5,760, kept
    by 0.33.0, whatever the backend."""
    blocks = {
        version: vllm_allocation(
            KIMI_K3, Layout(), available_bytes=AVAILABLE, max_model_len=131_072, version=version
        ).block_size_tokens
        for version in ("0.26.0", "0.27.0", "0.33.0")
    }
    assert blocks == {"0.26.0": 5_664, "0.27.0": 5_760, "0.33.0": 5_760}
    fp8 = vllm_allocation(
        KIMI_K3, Layout(), available_bytes=AVAILABLE, max_model_len=131_072, version="0.26.0", kv_cache_dtype="fp8"
    )
    assert fp8.block_size_tokens == 11_328


def test_k3_alignment_64_vs_128():
    """Kimi K3 at tp 8: KDA state per rank 96/8 = 12 heads x 128 x 128 x 4 B = 786,432 + conv
    3 x (36,864 / 8) x 2 B = 27,648 -> 814,080 B; MLA 1,152 B per token (not split by tp).
    0.11.1-0.26 (align 64): 64 x cdiv(814,080, 73,728) = 64 x 12 = 768; 0.27+ (align 128):
    128 x cdiv(814,080, 147,456) = 128 x 6 = 768 as well; padding (884,736 - 814,080) / 814,080 = 8.68%."""
    for version in ("0.11.1", "0.33.0"):
        a = vllm_allocation(KIMI_K3, Layout(tp=8), available_bytes=AVAILABLE, max_model_len=131_072, version=version)
        assert a.state_page_bytes == 814_080
        assert a.block_size_tokens == 768
        assert a.page_padding_fraction == pytest.approx((884_736 - 814_080) / 814_080)


def test_sliding_window_groups_gpt_oss():
    """gpt-oss-120b at tp 2: 18 sliding (window 128) + 18 full layers, 8 KV heads x 64: page per token
    2 x 4 x 64 x 2 B = 1,024 B -> 16,384 B per block of 16. Types of 18 and 18 -> 2 groups of 18 slots:
    num_blocks = 42,949,672,960 // 16,384 // 18 = 145,635. At 131,072 tokens a request holds
    cdiv(131,072, 16) = 8,192 full blocks + cdiv(min(128 - 1 + 8,192, 131,072), 16) + 1 = 521
    sliding blocks: concurrency 145,635 / 8,713."""
    a = vllm_allocation(GPT_OSS, Layout(tp=2), available_bytes=AVAILABLE, max_model_len=131_072, version="0.11.0")
    assert sorted((g.kind, g.layers) for g in a.groups) == [("full", 18), ("sliding", 18)]
    assert a.num_blocks == 145_635
    assert a.max_concurrency == pytest.approx(145_635 / 8_713)
    assert a.kv_cache_tokens == 145_635 // 2 * 16


def test_sliding_window_reserves_in_flight_batches_from_0_26():
    """gpt-oss-120b at tp 2 (as above, 145,635 blocks): vLLM 0.25 holds window - 1 + max_num_batched_tokens =
    127 + 8,192 tokens of a sliding layer per request: cdiv(8,319, 16) + 1 = 521 blocks; 0.26.0 holds the
    in-flight tokens of both async-scheduled batches (max_in_flight_tokens = 2 x 8,192):
    cdiv(16,511, 16) + 1 = 1,033. Concurrency at 131,072 tokens: 145,635 / (8,192 + 521) = 16.71 against
    145,635 / (8,192 + 1,033) = 15.79, 5.9% fewer (read in the 0.25.0 and 0.26.0 wheels'
    v1/kv_cache_interface.py and config/vllm.py)."""
    at = {
        v: vllm_allocation(GPT_OSS, Layout(tp=2), available_bytes=AVAILABLE, max_model_len=131_072, version=v)
        for v in ("0.25.0", "0.26.0", "0.33.0")
    }
    assert {v: a.blocks_per_request(131_072) for v, a in at.items()} == {
        "0.25.0": 8_192 + 521,
        "0.26.0": 8_192 + 1_033,
        "0.33.0": 8_192 + 1_033,
    }
    assert at["0.25.0"].max_concurrency == pytest.approx(145_635 / 8_713)
    assert at["0.26.0"].max_concurrency == pytest.approx(145_635 / 9_225)
    assert any("2 concurrent batches x 8,192" in n for n in at["0.33.0"].assumptions)


def test_hybrid_prefix_caching_is_on_by_default_from_0_28():
    """Qwen3-Next at tp 2 (3 GDN groups + 1 attention group, 6,425 blocks): vLLM 0.27 keeps prefix caching
    opt-in for hybrids, 0.28.0 and later turn it on, so mamba "align" mode holds 2 state blocks per GDN group:
    482 + 3 = 485 blocks per request at 262,144 tokens off, 482 + 6 = 488 on (engine/arg_utils.py
    _set_default_chunked_prefill_and_prefix_caching_args in the 0.26.0, 0.27.0 and 0.28.0 wheels). An explicit
    --no-enable-prefix-caching (prefix_caching False) turns it off, True turns it on in any release."""

    def need(version, **kwargs):
        a = vllm_allocation(
            QWEN3_NEXT, Layout(tp=2), available_bytes=AVAILABLE, max_model_len=262_144, version=version, **kwargs
        )
        return a.blocks_per_request(262_144)

    assert {v: need(v) for v in ("0.25.0", "0.27.0", "0.28.0", "0.33.0")} == {
        "0.25.0": 485,
        "0.27.0": 485,
        "0.28.0": 488,
        "0.33.0": 488,
    }
    assert need("0.33.0", prefix_caching=False) == 485 and need("0.27.0", prefix_caching=True) == 488
    # Dense models hold no state blocks: the default changes nothing for them.
    dense = vllm_allocation(GPT_OSS, Layout(tp=2), available_bytes=AVAILABLE, max_model_len=131_072, version="0.33.0")
    assert dense.blocks_per_request(131_072) == 8_192 + 1_033


def test_size_with_vllm_profile_counts_whole_requests_and_ranks():
    """size(engine='vllm') takes the logged memory and reports vLLM's figures; max_concurrent_sequences is
    floor(concurrency at the context) x data-parallel ranks x replicas: Qwen3-Next on 4 H200 as 2 replicas of
    tp 2 at 262,144 tokens: floor(13.247) x 2 = 26."""
    r = size(
        QWEN3_NEXT,
        H200,
        gpus=4,
        layout=Layout(tp=2),
        context_tokens=262_144,
        engine="vllm",
        available_kv_cache_gib=40,
        engine_version="0.11.0",
    )
    assert r.engine_block_size_tokens == 544 and r.engine_num_blocks == 6_425
    assert r.engine_kv_cache_tokens == 1_606 * 544
    assert r.engine_max_concurrency == pytest.approx(6_425 / 485)
    assert r.max_concurrent_sequences == math.floor(6_425 / 485) * 2 == 26
    d = r.to_dict()
    assert d["engine_num_blocks"] == 6_425 and d["kv_cache_groups"][0]["kind"] == "linear"
    assert any("Setting attention block size to 544" in a for a in r.assumptions)


def test_generic_profile_is_unchanged_by_the_engine_fields():
    """Without an engine the result carries no engine figures and keeps the generic unified pool."""
    r = size(QWEN3_NEXT, H200, gpus=2, context_tokens=65_536)
    assert r.engine == "generic" and r.engine_num_blocks is None and r.allocation is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"engine": "tgi"}, "engine"),
        ({"engine": "vllm", "engine_version": "0.9.2"}, "engine_version"),
        ({"engine": "vllm", "engine_version": "latest"}, "engine_version"),
        ({"engine": "vllm", "max_model_len": 0}, "max_model_len"),
        ({"engine": "vllm", "max_model_len": 10**9}, "max_model_len"),
        ({"engine": "vllm", "block_size_tokens": 0}, "block_size_tokens"),
        ({"engine": "vllm", "available_kv_cache_gib": -1}, "available_kv_cache_gib"),
        ({"engine": "vllm", "available_kv_cache_gib": float("nan")}, "available_kv_cache_gib"),
    ],
)
def test_engine_input_errors_name_the_field(kwargs, field):
    with pytest.raises(EngineInputError) as exc:
        size(QWEN3_NEXT, H200, gpus=2, **kwargs)
    assert field in exc.value.errors


def test_release_table():
    assert vllm_release("0.11.0rc2")[1].logged_tokens == "per_group"
    assert vllm_release("v0.10.1.1")[1].logged_tokens == "per_group"
    assert vllm_release("0.22.0")[1].logged_tokens == "concurrency"
    assert vllm_release(None)[0] == "0.33.0"


def test_state_bytes_follow_the_engine_dtypes():
    """Qwen3-Next's 36 GDN layers: generic fp32 recurrent state 2,146,304 B per layer (77,266,944 B);
    vLLM keeps it in bf16: 32 x 128 x 128 x 2 + 3 x 8,192 x 2 = 1,097,728 B per layer, 39,518,208 B;
    at tp 2 one GPU holds 548,864 x 36 = 19,759,104 B."""
    generic = size(QWEN3_NEXT, H200, gpus=2, context_tokens=8192)
    vllm = size(QWEN3_NEXT, H200, gpus=2, context_tokens=8192, engine="vllm")
    assert generic.state_bytes_per_sequence == 77_266_944
    assert vllm.state_bytes_per_sequence == 1_097_728 * 36 == 39_518_208
    assert vllm.state_bytes_per_sequence_per_gpu == 548_864 * 36


def _nemotron_h_56b(**extra: object):
    """Nemotron-H-56B-Base-8K from its published config (tests/fixtures/hf-configs), imported; ``extra`` config keys."""
    import json
    from pathlib import Path

    from planner.engine import ModelArch, model_record_from_config

    path = Path(__file__).resolve().parents[1] / "fixtures/hf-configs/nvidia--Nemotron-H-56B-Base-8K_config.json"
    config = {**json.loads(path.read_text()), **extra}
    record = model_record_from_config(config, name="Nemotron-H-56B").record
    record.update(total_params=56_000_000_000, active_params=56_000_000_000, weight_parts=[])
    return ModelArch.from_record(record)


def test_nemotron_h_state_dtype_follows_the_release():
    """Nemotron-H at tp 4, no mamba_ssm_cache_dtype in its config: vLLM's NemotronHForCausalLMConfig sets the SSM
    state to float16 up to 0.19 and float32 from 0.20.0 (DEFAULT_MAMBA_SSM_CACHE_DTYPE, read in both wheels).
    Per layer and GPU: recurrent 256 / 4 heads x 64 x d_state 256 x 2 B = 2,097,152 (fp16) or x 4 B = 4,194,304
    (fp32); conv (4 - 1) x (256 x 64 + 2 x 8 x 256) / 4 x 2 B = 30,720."""
    model = _nemotron_h_56b()
    pages = {}
    for version in ("0.19.0", "0.20.0", "0.33.0"):
        a = vllm_allocation(model, Layout(tp=4), available_bytes=AVAILABLE, max_model_len=8_192, version=version)
        pages[version] = (a.state_dtype, a.state_page_bytes)
    assert pages == {
        "0.19.0": ("fp16", 2_097_152 + 30_720),
        "0.20.0": ("fp32", 4_194_304 + 30_720),
        "0.33.0": ("fp32", 4_194_304 + 30_720),
    }
    # A config that states its dtype keeps it, whatever the release.
    stated = _nemotron_h_56b(mamba_ssm_cache_dtype="bfloat16")
    a = vllm_allocation(stated, Layout(tp=4), available_bytes=AVAILABLE, max_model_len=8_192, version="0.33.0")
    assert (a.state_dtype, a.state_page_bytes) == ("bf16", 2_097_152 + 30_720)


def test_pp_stages_split_by_layer_index():
    """vllm/distributed/utils.py get_pp_indices (VLLM_PP_LAYER_PARTITION unset; the same in the 0.10.0, 0.16.0,
    0.22.0 and 0.33.0 wheels): layers // pp each, the remainder one more each on the stages before the last,
    from the second-to-last back."""
    from planner.engine.profiles.vllm import pp_stages

    assert pp_stages(93, 2) == [range(0, 47), range(47, 93)]
    assert [len(r) for r in pp_stages(93, 4)] == [23, 23, 24, 23]
    assert [len(r) for r in pp_stages(62, 4)] == [15, 16, 16, 15]
    assert [len(r) for r in pp_stages(61, 1)] == [61]


def _without_positions(model):
    import dataclasses

    groups = tuple(dataclasses.replace(g, layers=(), decoder_layers=0) for g in model.layer_groups)
    return dataclasses.replace(model, layer_groups=groups)


K3_STAGE_BYTES = 32_268_191_927  # the oracle's Kimi K3 case (H200, tp 8 x pp 2), docs/sizing.md


def test_k3_pp2_stages_by_layer_position_from_0_11():
    """Kimi K3 at tp 8 x pp 2 (vLLM 0.33, 1,048,576 tokens): get_pp_indices gives layers 0-46 and 47-92; the MLA
    layers are 3, 7, ..., 91 and 92, so stage 0 holds 11 and stage 1 13. get_kv_cache_configs (0.11.0+) forms
    the groups over the whole model (69 KDA + 24 MLA: group_size 24, 3 KDA groups of 23 + 1 MLA group), and
    each stage's block holds its largest part of one group: 13 pages of 884,736 B on stage 1, which has the
    fewest blocks: 32,268,191,927 // 884,736 // 13 = 2,805 blocks, int(2,805 / 1,372 x 1,048,576) = 2,143,772
    tokens (vLLM 0.33's own allocator, bench/vllm_oracle.py). A record without positions keeps the even split
    (ceil(24 / 2) = 12 MLA, 35 KDA: group_size 12, 3,039 blocks) and says so."""
    a = vllm_allocation(KIMI_K3, Layout(tp=8, pp=2), available_bytes=K3_STAGE_BYTES, max_model_len=1_048_576)
    assert (a.block_size_tokens, a.num_blocks, a.kv_cache_tokens) == (768, 2_805, 2_143_772)
    assert a.num_blocks == K3_STAGE_BYTES // 884_736 // 13
    assert [(g.kind, g.layers, g.padding_layers) for g in a.groups] == [("linear", 13, 2)] * 3 + [("mla", 13, 0)]
    assert any("47 + 46 of 93 decoder layers" in n for n in a.assumptions)
    # The KDA state one GPU holds: stage 0's 36 KDA layers x 814,080 B.
    assert a.state_bytes_per_sequence_per_gpu == 36 * 814_080
    even = vllm_allocation(
        _without_positions(KIMI_K3), Layout(tp=8, pp=2), available_bytes=K3_STAGE_BYTES, max_model_len=1_048_576
    )
    assert (even.num_blocks, even.kv_cache_tokens) == (3_039, 2_322_611)
    assert any("ceil(count / 2)" in n for n in even.assumptions)
    # One stage: positions change nothing.
    one = vllm_allocation(KIMI_K3, Layout(tp=8), available_bytes=AVAILABLE, max_model_len=131_072)
    assert one == vllm_allocation(
        _without_positions(KIMI_K3), Layout(tp=8), available_bytes=AVAILABLE, max_model_len=131_072
    )


def test_pp_stages_grouped_per_stage_before_0_11():
    """vLLM 0.10.x formed each stage's groups from its own layers (v1/engine/core.py: get_kv_cache_config per
    worker) and unify_kv_cache_configs asserted the stages' groups match: Kimi K3's stage 0 (36 KDA, 11 MLA:
    group_size 11, 4 KDA groups) and stage 1 (33 KDA, 13 MLA: group_size 13, 3 KDA groups) do not, so the
    profile refuses it there; 0.11.0 (get_kv_cache_configs, whole-model groups) sizes it. A model whose stages
    group alike (gpt-oss, sliding and full alternating: 9 + 9 per stage) gets the same blocks either way."""
    with pytest.raises(EngineInputError) as exc:
        vllm_allocation(
            KIMI_K3, Layout(tp=8, pp=2), available_bytes=K3_STAGE_BYTES, max_model_len=131_072, version="0.10.2"
        )
    assert "per pipeline stage" in exc.value.errors["engine_version"][0]
    at_011 = vllm_allocation(
        KIMI_K3, Layout(tp=8, pp=2), available_bytes=K3_STAGE_BYTES, max_model_len=131_072, version="0.11.0"
    )
    # 0.11.0 aligns MLA hybrids to 16 (HYBRID_ALIGNMENT; 64 from 0.11.1): 16 x cdiv(814,080, 18,432) = 720 tokens.
    assert at_011.block_size_tokens == 720
    assert at_011.num_blocks == K3_STAGE_BYTES // (720 * 1_152) // 13
    gpt = _imported("openai--gpt-oss-120b")
    assert all(g.layers for g in gpt.layer_groups)
    blocks = {
        v: vllm_allocation(
            gpt, Layout(tp=2, pp=2), available_bytes=AVAILABLE, max_model_len=131_072, version=v
        ).num_blocks
        for v in ("0.10.2", "0.11.0")
    }
    assert blocks == {"0.10.2": 42_949_672_960 // 16_384 // 9, "0.11.0": 42_949_672_960 // 16_384 // 9}


def _imported(name: str):
    """A model imported from its published config (tests/fixtures/hf-configs), with its layers' positions."""
    import json
    from pathlib import Path

    from planner.engine import ModelArch, model_record_from_config

    path = Path(__file__).resolve().parents[1] / f"fixtures/hf-configs/{name}_config.json"
    return ModelArch.from_record(model_record_from_config(json.loads(path.read_text()), name=name).record)


def test_nemotron_stages_count_layers_without_a_cache():
    """Nemotron-3-Ultra-550B's 108-layer pattern ends in MoE-only layers without a cache: get_pp_indices splits all
    108 (54 + 54), which the record's decoder_layers says. At tp 8 x pp 2 (the oracle's case, identical to vLLM
    0.33) the busiest stage's largest group part decides num_blocks, as in vLLM."""
    ultra = _imported("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    assert {g.decoder_layers for g in ultra.layer_groups} == {108}
    assert sum(g.count for g in ultra.layer_groups) < 108
    a = vllm_allocation(ultra, Layout(tp=8, pp=2), available_bytes=AVAILABLE, max_model_len=262_144)
    assert any("54 + 54 of 108 decoder layers" in n for n in a.assumptions)
