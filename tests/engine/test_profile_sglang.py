"""The SGLang profile (planner/engine/profiles/sglang.py): anchors on real SGLang startup logs, and the
pool arithmetic derived by hand from SGLang's source (file and release cited per test).

Log fixtures (tests/fixtures/sglang_logs/, first line the source): a dense-attention MoE model
(Qwen3-235B-A22B-FP8, tp 4) and a hybrid gated-DeltaNet model (Qwen3.5-397B-A17B-FP8, tp 2, SGLang 0.5.9).
SGLang prints sizes as ``X GB`` meaning GiB (``memory_pool.py``: ``GB = 1024 * 1024 * 1024``) to two
decimals, so a figure read back is known to +-0.005 GiB; the tolerances below follow from that.
"""

import math
import re
from pathlib import Path

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.profiles import sglang_allocation, sglang_release
from planner.engine.profiles.sglang import rest_memory_bytes
from planner.engine.serving_engines import allocate
from planner.engine.sizing import size
from planner.engine.spec import LayerGroup, Layout, ModelArch

GIB = 1 << 30
LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "sglang_logs"


def log(name: str) -> str:
    text = (LOGS / name).read_text()
    assert text.startswith("# source: https://github.com/")
    return text


def model(*groups: LayerGroup) -> ModelArch:
    return ModelArch(name="m", total_params=1, active_params=1, layer_groups=groups)


# Qwen3-235B-A22B (config.json in tests/fixtures/hf-configs: 94 layers, 4 KV heads, head_dim 128).
QWEN3_235B = model(LayerGroup(kind="full", count=94, kv_heads=4, head_dim=128))
# Qwen3.5-397B-A17B (tests/fixtures/hf-configs/Qwen--Qwen3.5-397B-A17B_config.json: 60 layers, every 4th
# full attention, so 15 full (2 KV heads, head_dim 256) and 45 gated-DeltaNet layers (16 key heads, 64 value
# heads, head dims 128, conv kernel 4, "mamba_ssm_dtype": "float32").
QWEN35_397B = model(
    LayerGroup(kind="full", count=15, kv_heads=2, head_dim=256),
    LayerGroup(
        kind="linear",
        count=45,
        key_heads=16,
        value_heads=64,
        key_dim=128,
        value_dim=128,
        conv_kernel=4,
        variant="gated_deltanet",
        state_dtype="fp32",
    ),
)
# A small hybrid for hand arithmetic: 4 full layers of 1 KV head x 64 (bf16: 2 x 64 x 2 = 256 B per token
# per layer, 1,024 B over the layers) and 8 linear layers of 1 x 16 x 16 (recurrent 16 x 16 x 4 = 1,024 B,
# conv 3 x (2 x 16 + 16) x 2 = 288 B: 1,312 B per layer, 10,496 B per slot).
TOY_CELL = 4 * 2 * 64 * 2
TOY_SLOT = 8 * (16 * 16 * 4 + 3 * (2 * 16 + 16) * 2)


def toy(variant: str = "gated_deltanet", **linear: object) -> ModelArch:
    return model(
        LayerGroup(kind="full", count=4, kv_heads=1, head_dim=64),
        LayerGroup(
            kind="linear",
            count=8,
            key_heads=1,
            value_heads=1,
            key_dim=16,
            value_dim=16,
            conv_kernel=4,
            variant=variant,
            **linear,
        ),
    )


def test_toy_figures():
    assert (TOY_CELL, TOY_SLOT) == (1_024, 10_496)


# --- anchors on real logs ----------------------------------------------------------------------


def test_anchor_qwen3_235b_fp8_tp4_tokens_from_the_logged_kv_size():
    """vllm issue 21348: SGLang on 4 x H100 logs "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB".

    Derivation: one token's cell on a GPU (``profile_max_num_token``) is max(1, 4 // 4) KV head x 128 x 2
    (K, V) x 94 layers x 2 B = 48,128 B. SGLang allocates #tokens + page_size (1) token slots
    (``MHATokenToKVPool``: ``size + page_size``), so the rest memory the pool came from is about
    (K + V) GiB - one cell. Tolerance 1%: the two sizes read back are +-0.005 GiB each, +-0.06% of the tokens.
    """
    text = log("qwen3-235b-a22b-fp8-tp4.log")
    match = re.search(r"#tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB", text)
    logged, k_gib, v_gib = int(match[1]), float(match[2]), float(match[3])
    cell = 1 * 128 * 2 * 94 * 2
    rest = round((k_gib + v_gib) * GIB) - cell
    a = allocate("sglang", QWEN3_235B, Layout(tp=4), available_bytes=rest, max_model_len=40_960)
    assert a.kv_cache_tokens == rest // cell
    assert a.kv_cache_tokens == pytest.approx(logged, rel=0.01)
    assert abs(a.kv_cache_tokens - logged) / logged < 0.001  # in fact within the read-back rounding
    assert a.block_size_tokens == 1 and a.num_blocks == a.kv_cache_tokens


def test_anchor_qwen35_397b_tp2_state_slots_and_tokens_sglang_059():
    """ktransformers issue 1870 (sglang 0.5.9, tp 2): "max_mamba_cache_size: 82, conv_state size: 0.13GB,
    ssm_state size: 7.29GB" and "#tokens: 580364, K size: 4.15 GB, V size: 4.15 GB".

    Derivation (sglang 0.5.9 ``model_runner_kv_cache_mixin.py`` ``handle_max_mamba_cache``): one state slot
    holds 45 layers x (recurrent 64 / 2 heads x 128 x 128 x 4 B + conv 3 x (2 x 16 + 64) x 128 / 2 x 2 B)
    = 45 x (2,097,152 + 36,864) = 96,030,720 B; one token's KV cell is 15 layers x 1 head (2 // 2) x 256 x 2
    x 2 B = 15,360 B. The pools hold one padding slot and one padding token beyond what SGLang charges
    (``MambaPool``: ``size + 1``; ``size + page_size``), so the rest memory is the four logged sizes minus
    one slot and one cell. Then slots = rest x 0.9 / 1.9 // slot, and tokens = (rest - slots x slot) //
    cell. Tolerance: the four sizes read back are +-0.02 GiB, +-0.1 slot (82.78 either way: exactly 82)
    and +-0.25% of the tokens, inside the 1% asked.
    """
    text = log("qwen3.5-397b-a17b-fp8-tp2.log")
    assert "sglang                    0.5.9" in text
    mamba = re.search(r"max_mamba_cache_size: (\d+), conv_state size: ([\d.]+)GB, ssm_state size: ([\d.]+)GB", text)
    kv = re.search(r"#tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB", text)
    logged_slots, conv_gib, ssm_gib = int(mamba[1]), float(mamba[2]), float(mamba[3])
    logged_tokens = int(kv[1])
    recurrent, conv = 32 * 128 * 128 * 4, 3 * (2 * 16 * 128 + 64 * 128) // 2 * 2
    slot, cell = 45 * (recurrent + conv), 15 * 1 * 256 * 2 * 2
    assert (slot, cell) == (96_030_720, 15_360)
    # The logged state sizes are (82 + 1) slots of fp32 recurrent and bf16 conv state.
    assert (logged_slots + 1) * 45 * recurrent / GIB == pytest.approx(ssm_gib, abs=0.005)
    assert (logged_slots + 1) * 45 * conv / GIB == pytest.approx(conv_gib, abs=0.005)

    rest = round((conv_gib + ssm_gib + float(kv[2]) + float(kv[3])) * GIB) - slot - cell
    slots = int(rest * 0.9 / 1.9 // slot)
    a = allocate("sglang", QWEN35_397B, Layout(tp=2), available_bytes=rest, max_model_len=8_192, version="0.5.9")
    assert a.state_slots == slots == logged_slots == 82
    assert a.kv_cache_tokens == (rest - slots * slot) // cell
    assert a.kv_cache_tokens == pytest.approx(logged_tokens, rel=0.01)
    assert (a.state_dtype, a.conv_dtype) == ("fp32", "bf16")
    # 0.5.9 resolves mamba_radix_cache_strategy "auto" to no_buffer: 3 slots per running request.
    assert a.concurrency(8_192) == pytest.approx(min(a.kv_cache_tokens / 8_192, 82 / 3))


def test_the_same_rest_on_sglang_0523_charges_the_padding_slot_and_keeps_five_slots_per_request():
    """sglang 0.5.17+ ``kv_cache_configurator.py``: slots = (rest x r / (1 + r) - slot) // slot, (slots + 1)
    charged; from 0.5.14 GDN models default to the extra_buffer strategy: 3 + 2 slots per request."""
    slot, cell = 96_030_720, 15_360
    rest = round((0.13 + 7.29 + 4.15 + 4.15) * GIB) - slot - cell
    a = allocate("sglang", QWEN35_397B, Layout(tp=2), available_bytes=rest, max_model_len=8_192)
    slots = int((rest * 0.9 / 1.9 - slot) // slot)
    assert a.engine_version == "0.5.23"
    assert a.state_slots == slots == 81
    assert a.kv_cache_tokens == (rest - (slots + 1) * slot) // cell
    assert a.concurrency(8_192) == pytest.approx(81 / 5)


def test_anchor_qwq_32b_tp4_tokens_from_the_logged_free_memory():
    """tests/fixtures/startup_logs (SGLang 0.4.3.post4, QwQ-32B, 4 x L4, --mem-fraction-static 0.85): "Load
    weight begin. avail mem=21.63 GB", "Load weight end ... avail mem=6.09 GB", "#tokens: 46611".

    Derivation (sglang 0.4.3.post4 ``model_runner.py`` ``profile_max_num_token``): rest = 6.09 - 21.63 x
    (1 - 0.85) = 2.8455 GiB; cell = 8 // 4 KV heads x 128 x 64 layers x 2 x 2 B = 65,536 B; tokens = rest //
    cell. Tolerance 1%: the two free-memory figures are +-0.005 GiB, +-0.2% of the rest.
    """
    text = (
        Path(__file__).resolve().parent.parent / "fixtures" / "startup_logs" / "sglang-0.4.3.post4-QwQ-32B-tp4.log"
    ).read_text()
    before = float(re.search(r"TP0\] Load weight begin\. avail mem=([\d.]+) GB", text)[1])
    after = float(re.search(r"TP0\] Load weight end\..*?avail mem=([\d.]+) GB", text)[1])
    logged = int(re.search(r"TP0\] KV Cache is allocated\. #tokens: (\d+)", text)[1])
    rest = rest_memory_bytes(round(after * GIB), round(before * GIB), 0.85)
    qwq = model(LayerGroup(kind="full", count=64, kv_heads=8, head_dim=128))
    a = sglang_allocation(qwq, Layout(tp=4), available_bytes=rest, max_model_len=131_072, version="0.4.3.post4")
    assert rest == pytest.approx(2.8455 * GIB, rel=1e-6)
    assert a.kv_cache_tokens == rest // (2 * 128 * 64 * 2 * 2)
    assert a.kv_cache_tokens == pytest.approx(logged, rel=0.01)


# --- the split, by hand ------------------------------------------------------------------------


def test_ratio_split_before_and_after_the_padding_slot_is_charged():
    """rest 10,000,000 B, r = 0.9: budget 4,736,842.1 B. 0.5.9: 451 slots, KV gets 10,000,000 - 451 x 10,496
    = 5,266,304 B = 5,142 tokens. 0.5.23: (4,736,842.1 - 10,496) // 10,496 = 450 slots, 451 charged: the
    same 5,142 tokens."""
    rest = 10_000_000
    old = sglang_allocation(toy(), Layout(), available_bytes=rest, max_model_len=1_000, version="0.5.9")
    new = sglang_allocation(toy(), Layout(), available_bytes=rest, max_model_len=1_000, version="0.5.23")
    assert (old.state_slots, new.state_slots) == (451, 450)
    assert old.kv_cache_tokens == new.kv_cache_tokens == 5_266_304 // 1_024 == 5_142
    # Concurrency: min(tokens / L, slots / slots per request); 0.5.9 no_buffer 3, 0.5.23 extra_buffer 5.
    assert old.concurrency(1_000) == pytest.approx(5.142)
    assert new.concurrency(10) == pytest.approx(450 / 5)
    assert old.concurrency(10) == pytest.approx(451 / 3)
    assert new.sequences(10) == 90


def test_mamba_full_memory_ratio_moves_memory_between_the_pools():
    """r = 0.5: budget 10,000,000 / 3 = 3,333,333.3 B, 0.5.23: (3,333,333.3 - 10,496) // 10,496 = 316 slots,
    KV gets 10,000,000 - 317 x 10,496 = 6,672,768 B = 6,516 tokens."""
    a = allocate("sglang", toy(), Layout(), available_bytes=10_000_000, max_model_len=1_000, state_pool_ratio=0.5)
    assert a.state_slots == 316
    assert a.kv_cache_tokens == (10_000_000 - 317 * 10_496) // 1_024 == 6_516


def test_sglang_052_fixes_512_slots_with_the_radix_cache_off():
    """sglang 0.5.2 ``model_runner.py``: hybrid GDN disables the radix cache, max_mamba_cache_size = 512
    (no --max-running-requests), rest -= 512 x slot: (10,000,000 - 5,373,952) // 1,024 = 4,517 tokens; one
    slot per running request."""
    a = sglang_allocation(toy(), Layout(), available_bytes=10_000_000, max_model_len=100, version="0.5.2")
    assert a.state_slots == 512
    assert a.kv_cache_tokens == (10_000_000 - 512 * 10_496) // 1_024 == 4_517
    assert a.concurrency(100) == pytest.approx(45.17)
    assert a.concurrency(1) == pytest.approx(512.0)
    two = sglang_allocation(
        toy(), Layout(dp=2), available_bytes=10_000_000, max_model_len=100, version="0.5.2", max_running_requests=64
    )
    assert two.state_slots == 32  # --max-running-requests 64 split over 2 data-parallel attention ranks


def test_radix_cache_off_from_059_keeps_the_ratio_unless_max_running_requests_is_given():
    kwargs = {"available_bytes": 10_000_000, "max_model_len": 100, "radix_cache": False}
    assert sglang_allocation(toy(), Layout(), version="0.5.8", **kwargs).state_slots == 512
    assert sglang_allocation(toy(), Layout(), version="0.5.9", **kwargs).state_slots == 451
    pinned = sglang_allocation(toy(), Layout(), version="0.5.9", max_running_requests=64, **kwargs)
    assert pinned.state_slots == 64
    assert pinned.concurrency(1) == pytest.approx(64.0)  # one slot per request without the radix cache


def test_max_mamba_cache_size_is_honoured_with_the_radix_cache_from_057():
    kwargs = {"available_bytes": 10_000_000, "max_model_len": 100, "max_mamba_cache_size": 100}
    assert sglang_allocation(toy(), Layout(), version="0.5.6", **kwargs).state_slots == 451  # ignored
    pinned = sglang_allocation(toy(), Layout(dp=2), version="0.5.7", **kwargs)
    assert pinned.state_slots == 50
    assert pinned.kv_cache_tokens == (10_000_000 - 50 * 10_496) // 1_024


def test_mamba2_models_lose_the_radix_cache_before_057_and_kda_arrives_in_055():
    m2 = sglang_allocation(toy("mamba2"), Layout(), available_bytes=10_000_000, max_model_len=100, version="0.5.4")
    assert m2.state_slots == 512 and m2.concurrency(1) == pytest.approx(512.0)
    assert (
        sglang_allocation(
            toy("mamba2"), Layout(), available_bytes=10_000_000, max_model_len=100, version="0.5.7"
        ).state_slots
        == 451
    )
    with pytest.raises(EngineInputError) as exc:
        sglang_allocation(toy("kda"), Layout(), available_bytes=10_000_000, max_model_len=100, version="0.5.4")
    assert "engine_version" in exc.value.errors
    assert (
        sglang_allocation(
            toy("kda"), Layout(), available_bytes=10_000_000, max_model_len=100, version="0.5.5"
        ).state_slots
        == 451
    )
    with pytest.raises(EngineInputError):
        sglang_allocation(toy(), Layout(), available_bytes=10_000_000, max_model_len=100, version="0.4.10")


def test_data_parallel_ranks_split_the_slots():
    """sglang 0.5.4-0.5.6 ``handle_max_mamba_cache`` divides a GDN model's slots by dp_size whichever way they
    were found, and a Mamba2 model's never; from 0.5.7 fixed or asked counts are divided, the ratio split not."""
    kwargs = {"available_bytes": 10_000_000, "max_model_len": 1}
    assert sglang_allocation(toy(), Layout(dp=2), version="0.5.6", **kwargs).state_slots == 451 // 2
    assert sglang_allocation(toy(), Layout(dp=2), version="0.5.7", **kwargs).state_slots == 451
    assert sglang_allocation(toy("mamba2"), Layout(dp=2), version="0.5.6", **kwargs).state_slots == 512
    assert sglang_allocation(toy("mamba2"), Layout(dp=2), version="0.5.7", **kwargs).state_slots == 451


@pytest.mark.parametrize(
    ("variant", "version", "per_request"),
    [
        ("gated_deltanet", "0.5.13", 3),
        ("gated_deltanet", "0.5.14", 5),
        ("mamba2", "0.5.14", 5),
        ("kda", "0.5.15", 3),
        ("kda", "0.5.16", 5),
    ],
)
def test_state_slots_per_running_request(variant, version, per_request):
    """3 with the radix cache (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO), + 2 ping-pong slots once the
    family's auto strategy is extra_buffer (0.5.14 server_args.py; KDA from 0.5.16 overrides.py)."""
    a = sglang_allocation(toy(variant), Layout(), available_bytes=10_000_000, max_model_len=1, version=version)
    assert a.concurrency(1) == pytest.approx(a.state_slots / per_request)


def test_without_the_overlap_scheduler_extra_buffer_needs_pages_and_adds_one_slot():
    """overrides.py ``_mamba_radix_cache_resolution``: auto is extra_buffer only with the overlap scheduler
    or pages over one token; without overlap the ping-pong buffer is 1 slot (``get_mamba_tracking_slots``).
    With 64-token pages the KV share 5,266,304 B // 1,024 = 5,142 tokens floors to 5,120."""
    kwargs = {"available_bytes": 10_000_000, "max_model_len": 1, "overlap_schedule": False}
    assert sglang_allocation(toy(), Layout(), **kwargs).concurrency(1) == pytest.approx(450 / 3)
    paged = sglang_allocation(toy(), Layout(), page_size=64, **kwargs)
    assert paged.concurrency(1) == pytest.approx(min(5_120 / 64, 450 / 4))
    assert paged.kv_cache_tokens == 5_120


def test_state_dtypes():
    """mamba_utils.py ``mamba2_state_dtype``: float32 unless the model config says otherwise (read from
    0.5.9; 0.5.2-0.5.8 set SGLANG_MAMBA_SSM_DTYPE from --mamba-ssm-dtype, default float32); conv bfloat16.
    A bf16 recurrent state is 16 x 16 x 2 = 512 B per layer: slot 8 x (512 + 288) = 6,400 B."""
    bf16 = toy(state_dtype="bf16")
    kwargs = {"available_bytes": 10_000_000, "max_model_len": 1}
    assert sglang_allocation(bf16, Layout(), version="0.5.8", **kwargs).state_slots == int(
        10_000_000 * 0.9 / 1.9 // 10_496
    )
    honoured = sglang_allocation(bf16, Layout(), version="0.5.9", **kwargs)
    assert honoured.state_dtype == "bf16" and honoured.state_slots == int(10_000_000 * 0.9 / 1.9 // 6_400)
    forced = sglang_allocation(toy(), Layout(), version="0.5.23", mamba_ssm_dtype="bf16", **kwargs)
    assert forced.state_slots == int((10_000_000 * 0.9 / 1.9 - 6_400) // 6_400)
    assert (forced.state_dtype, forced.conv_dtype) == ("bf16", "bf16")


# --- tokens and pages --------------------------------------------------------------------------

DEEPSEEK_V3 = model(LayerGroup(kind="mla", count=61, kv_lora_rank=512, qk_rope_head_dim=64))


def test_mla_cell_is_the_latent_not_split_by_tp():
    """(512 + 64) x 61 layers x 2 B = 70,272 B per token at any tp (``profile_max_num_token``, MLA)."""
    a = allocate("sglang", DEEPSEEK_V3, Layout(tp=8), available_bytes=50 * GIB, max_model_len=163_840)
    assert a.kv_cache_tokens == 50 * GIB // 70_272 == 763_989
    fp8 = allocate("sglang", DEEPSEEK_V3, Layout(tp=8), available_bytes=50 * GIB, max_model_len=1, kv_cache_dtype="fp8")
    assert fp8.kv_cache_tokens == 50 * GIB // 35_136


@pytest.mark.parametrize(
    ("backend", "asked", "page"),
    [
        (None, None, 1),
        (None, 16, 16),
        ("flashmla", None, 64),
        ("trtllm_mla", 32, 32),
        ("trtllm_mha", None, 64),
        ("trtllm_mha", 128, 128),
    ],
)
def test_page_size(backend, asked, page):
    """overrides.py ``_page_size_default`` (1) and ``_mla_backend_page_constraints``; tokens are floored to
    whole pages (``calculate_pool_sizes``), and a request holds ceil(L / page) pages."""
    a = sglang_allocation(
        DEEPSEEK_V3, Layout(), available_bytes=50 * GIB, max_model_len=1_000, page_size=asked, attention_backend=backend
    )
    assert a.block_size_tokens == page
    assert a.kv_cache_tokens == 50 * GIB // 70_272 // page * page
    assert a.num_blocks == a.kv_cache_tokens // page
    assert a.concurrency(1_000) == pytest.approx(a.num_blocks / math.ceil(1_000 / page))


def test_pages_are_not_floored_before_0410():
    a = sglang_allocation(
        DEEPSEEK_V3, Layout(), available_bytes=50 * GIB, max_model_len=1, page_size=64, version="0.4.3"
    )
    assert a.kv_cache_tokens == 763_989  # not a multiple of 64


def test_pipeline_stages():
    """Busiest stage: ceil(count / pp) layers. A hybrid's attention layers are the stage's from 0.5.9
    (before, all of them, ``len(full_attention_layer_ids)``); a slot covers the stage's linear layers from
    0.5.18 (``pp_layer_scale``), all of them before. Toy at pp 2: 2 attention layers (512 B per token),
    4 linear layers (5,248 B per slot)."""
    kwargs = {"available_bytes": 10_000_000, "max_model_len": 1}
    old = sglang_allocation(toy(), Layout(pp=2), version="0.5.8", **kwargs)
    assert old.state_slots == int(10_000_000 * 0.9 / 1.9 // 10_496)
    assert old.kv_cache_tokens == (10_000_000 - old.state_slots * 10_496) // 1_024
    mid = sglang_allocation(toy(), Layout(pp=2), version="0.5.9", **kwargs)
    assert mid.kv_cache_tokens == (10_000_000 - mid.state_slots * 10_496) // 512
    new = sglang_allocation(toy(), Layout(pp=2), version="0.5.23", **kwargs)
    assert new.state_slots == int((10_000_000 * 0.9 / 1.9 - 5_248) // 5_248)
    assert new.kv_cache_tokens == (10_000_000 - (new.state_slots + 1) * 5_248) // 512


GPT_OSS = model(
    LayerGroup(kind="sliding", count=18, kv_heads=8, head_dim=64, window=128),
    LayerGroup(kind="full", count=18, kv_heads=8, head_dim=64),
)


def test_sliding_window_pool():
    """``HybridSWAPoolConfigurator``: 18 x 8 x 64 x 2 x 2 = 36,864 B per token for each layer kind;
    full = rest // (36,864 + 0.8 x 36,864), swa = int(full x 0.8). A request keeps min(L, 128) SWA tokens,
    so short requests are bound by the SWA pool, long ones by the full pool."""
    rest = 10 * GIB
    a = allocate("sglang", GPT_OSS, Layout(), available_bytes=rest, max_model_len=131_072)
    full = int(rest // (36_864 + 0.8 * 36_864))
    swa = int(full * 0.8)
    assert a.kv_cache_tokens == full == 161_817
    assert a.pool_blocks == (("swa", swa),)
    assert a.concurrency(100) == pytest.approx(min(full / 100, swa / 100))
    assert a.concurrency(131_072) == pytest.approx(full / 131_072)
    assert a.concurrency(1_000) == pytest.approx(min(full / 1_000, swa / 128))
    # 0.4.3 had no SWA pool: every layer keeps every token, 73,728 B per token.
    assert (
        sglang_allocation(GPT_OSS, Layout(), available_bytes=rest, max_model_len=1, version="0.4.3").kv_cache_tokens
        == rest // 73_728
    )


def test_versions():
    assert sglang_release(None)[0] == "0.5.23"
    assert sglang_release("0.5.9.post1")[1].since == "0.5.9"
    assert sglang_release("0.5.23")[1].since == "0.5.18"
    for bad in ("0.4.2", "next"):
        with pytest.raises(EngineInputError) as exc:
            sglang_release(bad)
        assert "engine_version" in exc.value.errors


# --- through size() ----------------------------------------------------------------------------

H100 = reference.accelerator("h100-sxm-80gb")


def test_size_with_the_logged_cache_reproduces_max_total_num_tokens():
    """size(engine="sglang", available_kv_cache_gib=...) hands that budget to the profile: Qwen3-235B-A22B
    (catalogue) at tp 4, 16.46 GiB - one cell, the anchor's figures: 367,223 tokens (log: 367,404)."""
    gib = (16.46 * GIB - 48_128) / GIB
    r = size(
        reference.model("qwen3-235b-a22b"),
        H100,
        gpus=4,
        engine="sglang",
        available_kv_cache_gib=gib,
        context_tokens=40_960,
    )
    assert r.engine_kv_cache_tokens == round(gib * GIB) // 48_128 == 367_223
    assert r.max_concurrent_sequences == math.floor(367_223 / 40_960) == 8
    assert r.max_concurrent_sequences_split == 8
    assert r.engine_version == "0.5.23"


def test_size_sglang_uses_the_computed_budget_and_the_split_pool():
    """Without a given budget the profile gets size()'s cache budget (reported HBM x utilisation - weights
    - runtime reserve). Qwen3-Next-80B-A3B (catalogue: 12 full layers of 2 KV heads x 256; 36 gated-DeltaNet
    layers of 16 key / 32 value heads x 128) at tp 4 on H200: cell 12 x max(1, 2 // 4) x 256 x 2 x 2 B =
    12,288 B; slot 36 x (8 x 128 x 128 x 4 + 3 x (2 x 4 x 128 + 8 x 128) x 2) = 36 x 536,576 B."""
    h200 = reference.accelerator("h200-141gb")
    r = size(reference.model("qwen3-next-80b-a3b"), h200, gpus=4, engine="sglang", context_tokens=65_536)
    slot, cell = 36 * (8 * 128 * 128 * 4 + 3 * (2 * 4 * 128 + 8 * 128) * 2), 12 * 1 * 256 * 2 * 2
    rest = r.cache_bytes
    slots = int((rest * 0.9 / 1.9 - slot) // slot)
    tokens = (rest - (slots + 1) * slot) // cell
    assert r.allocation.state_slots == slots
    assert r.engine_kv_cache_tokens == tokens
    assert r.max_concurrent_sequences == math.floor(min(tokens / 65_536, slots / 5))
    assert r.max_concurrent_sequences_split == r.max_concurrent_sequences
    assert any("max_mamba_cache_size" in note for note in r.assumptions)
    # One sequence's state in SGLang's dtypes (fp32 recurrent, bf16 conv): 36 x (32 x 128 x 128 x 4
    # + 3 x (2 x 16 x 128 + 32 x 128) x 2) at tp 1, one slot's 36 x 536,576 B on a GPU at tp 4.
    assert r.state_bytes_per_sequence == 36 * (32 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 32 * 128) * 2) == 77_266_944
    assert r.state_bytes_per_sequence_per_gpu == slot


def test_size_sglang_page_size_and_version_pass_through():
    r = size(
        reference.model("deepseek-v3"),
        reference.accelerator("h200-141gb"),
        gpus=8,
        engine="sglang",
        engine_version="0.5.9",
        block_size_tokens=64,
        context_tokens=8_192,
    )
    assert r.cache_bytes > 0
    assert r.engine_block_size_tokens == 64
    assert r.engine_kv_cache_tokens == r.cache_bytes // 70_272 // 64 * 64
    with pytest.raises(EngineInputError) as exc:
        size(reference.model("qwen3-next-80b-a3b"), H100, gpus=4, engine="sglang", engine_version="0.4.10")
    assert "engine_version" in exc.value.errors
