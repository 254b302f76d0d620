"""vLLM V1's KV cache allocator, release by release. Units: bytes, tokens; one GPU (worker).

Read from vLLM's own source, per release (``pip download vllm==X --no-deps``; paths inside the wheel):

* **Pages** (``vllm/v1/kv_cache_interface.py``): full and sliding attention
  ``2 x block_size x kv_heads x head_dim x dtype`` (``AttentionSpec.page_size_bytes``); MLA
  ``block_size x (kv_lora_rank + qk_rope_head_dim) x dtype`` (``MLAAttentionSpec``, one latent
  "head"); a linear-attention (mamba) layer one page per request holding its conv and recurrent
  state (``MambaSpec.page_size_bytes``, padded to ``page_size_padded``).
* **Block size**: 16 tokens (``platforms/cuda.py``: ``cache_config.block_size = 16``); a user's
  ``--block-size`` overrides. MLA models by release, GPU generation (``gpu_generation``, from the
  accelerator's name) and KV dtype (``mla_block_size``). Up to 0.17 ``CudaPlatform.check_and_update_config``
  forces the block of the backend it defaults to: 64 on Hopper (FlashMLA, "Forcing kv cache block size to
  64 for FlashMLA backend"); on Blackwell nothing in 0.10.0 (FlashMLA is Hopper-only), 128 in 0.10.2-0.14
  (CUTLASS MLA), 64 in 0.15-0.17 (FlashInfer MLA, ``qk_nope_head_dim`` 128); 16 elsewhere. From 0.18.0
  ``Platform.update_block_size_for_backend`` (``platforms/interface.py``) takes the preferred block
  (``AttentionBackend.get_preferred_block_size``, ``v1/attention/backend.py``) of the first backend of
  ``_get_backend_priorities`` (``platforms/cuda.py``) that takes the configuration: on SM 9.x
  FLASH_ATTN_MLA (``v1/attention/backends/mla/flashattn_mla.py``: ``major == 9``, KV dtypes auto / fp16 /
  bf16, ``[MultipleOf(16)]``): 16, and with an fp8 KV cache FLASHMLA's ``[64]``; on SM 10.x FLASHINFER_MLA
  (``flashinfer_mla.py``: ``[32, 64]``): 32; elsewhere TRITON_MLA's ``[MultipleOf(16)]``: 16 (read in the
  0.10.0, 0.10.2, 0.11.1, 0.13.0-0.19.0, 0.22.0, 0.28.0 and 0.33.0 wheels). Hybrid (linear + attention)
  models raise the attention block so that
  one attention page holds at least one state page, and pad the state page to equal it
  (``HybridAttentionMambaModelConfig.verify_and_update_config`` in ``model_executor/models/config.py``
  up to 0.19, ``Platform._align_hybrid_block_size`` in ``platforms/interface.py`` from 0.20):
  ``block = align x cdiv(state_page, align x attention_page_per_token)``, logged as "Setting
  attention block size to N tokens", and "Padding mamba page size by P%". ``align`` is 16; for MLA
  hybrids 64 in 0.11.1-0.19 (128 with CUTLASS MLA, not modelled); from 0.20 the backend's smallest kernel
  block and at least the block chosen (FLASH_ATTN_MLA's 16 on a Hopper with bf16), and from 0.27.0 at
  least 128 (``use_mla``: "TRTLLM/FlashInfer MLA decode kernels require the physical number of kernel
  blocks to be aligned to 128"; 0.26.0 has only the backend's smallest kernel block).
* **State dtypes** (``model_executor/layers/mamba/mamba_utils.py``, ``MambaStateDtypeCalculator``):
  gated DeltaNet and Mamba2 keep conv and recurrent state in the model dtype unless
  ``--mamba-ssm-cache-dtype`` (or, from 0.2x, a Qwen3.5 config's ``mamba_ssm_dtype``) says otherwise;
  KDA keeps the recurrent state in fp32 and the conv state in the model dtype (``kda_state_dtype``).
  Nemotron-H (``model_executor/models/config.py`` ``NemotronHForCausalLMConfig``) sets
  ``mamba_ssm_cache_dtype`` from its config's ``mamba_ssm_cache_dtype``, else float16 up to 0.19 and
  float32 from 0.20.0 (``DEFAULT_MAMBA_SSM_CACHE_DTYPE``; read in the 0.19.0 and 0.20.0 wheels).
* **Groups** (``v1/core/kv_cache_utils.py`` ``_get_kv_cache_groups_uniform_page_size``; from 0.2x
  ``kv_cache_planning.py``): layers of one spec form a type; ``group_size`` is the smallest type's
  layer count (from 0.18 the largest's when it is under 1.5x the smallest); each type is cut into
  ``cdiv(layers, group_size)`` groups, group ``i`` holding its layers ``[i::groups]``. A model with one
  spec has one group.
* **Pipeline stages** (``distributed/utils.py`` ``get_pp_indices``, every modelled release,
  ``VLLM_PP_LAYER_PARTITION`` unset): the decoder stack is split by layer position, ``layers // pp``
  each and the remainder one more each on the stages before the last, from the second-to-last back
  (``pp_stages``). From 0.11.0 (``v1/core/kv_cache_utils.py`` ``get_kv_cache_configs``; 0.33
  ``kv_cache_planning.py`` ``get_global_kv_cache_groups``) the groups are the whole model's, each
  stage holds its part of each group and sizes its block by its largest part, and the smallest
  ``num_blocks`` of the stages is kept; 0.10.x (``v1/engine/core.py``: ``get_kv_cache_config`` per
  worker, ``unify_kv_cache_configs``) grouped each stage on its own and required the stages' groups to
  match (refused here when they do not). This needs the layers' positions (``LayerGroup.layers``, written
  by the config importer); a record without them is taken as ``ceil(count / pp)`` layers of each group
  on the busiest stage, and the assumptions say so.
* **Blocks**: ``num_blocks = available // page // slots`` (``get_num_blocks``), ``slots`` the most layers
  of one group on one stage (``group_size`` at pp 1): every layer slot gets its own tensor of
  ``num_blocks`` pages, shared by one layer of each group.
* **Concurrency** ("Maximum concurrency for L tokens per request: X x"): ``num_blocks / sum over
  groups of blocks per request at L`` (``get_max_concurrency_for_kv_cache_config``); a request holds
  ``cdiv(L, block)`` blocks of an attention group, ``cdiv(min(window - 1 + in_flight, L), block)
  + 1`` of a sliding group, and one block of a state group (two in prefix-caching "align" mode).
  (``in_flight``: ``max_num_batched_tokens`` up to 0.25; from 0.26.0 ``VllmConfig.max_in_flight_tokens`` =
  ``max_concurrent_batches x max_num_batched_tokens``, ``SlidingWindowSpec.max_admission_blocks_per_request``:
  2 batches with async scheduling, on by default, at pp 1; ``pp`` batches at pp > 1 with the V1 model runner,
  ``pp + 1`` with V2, whose default per architecture is not modelled: V1's figure is taken)
* **Prefix caching for hybrids** (``engine/arg_utils.py`` ``_set_default_chunked_prefill_and_prefix_caching_args``,
  ``config/model.py`` ``is_prefix_caching_supported``): off up to 0.25 (not supported by default), opt-in in
  0.26-0.27, on by default from 0.28.0; on, ``MambaModelConfig`` turns ``mamba_cache_mode`` "none" into
  "align": a request holds 2 state blocks. ``--enable-prefix-caching`` / ``--no-enable-prefix-caching``
  overrides (``prefix_caching`` True / False).
* **Logged token count** ("GPU KV cache size: N tokens"): ``num_blocks // number_of_groups x smallest
  block`` up to 0.21 (one group: ``num_blocks x block_size``); ``int(concurrency x L)`` from 0.22.0
  (``get_kv_cache_capacity``).

* **Running requests** (``engine/arg_utils.py`` ``EngineArgs.get_batch_defaults``, every modelled
  release): the scheduler runs at most ``max_num_seqs`` requests per data-parallel rank, however many
  the cache holds. ``vllm serve`` defaults it to 1,024 on a GPU of at least 70 GiB whose name has no
  "a100" (H100, H200, B200, MI300X) and to 256 otherwise (``default_max_num_seqs``); ``--max-num-seqs``
  overrides (not modelled: the default is assumed, and said).

Not modelled: decode-context parallelism, speculative-decoding state blocks, 0.30+'s packing of
mixed page sizes (used only when pages cannot be unified), hisparse host pools, fp8_ds_mla's 656-byte
token, per-layer KV dtype skips.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EngineInputError
from ..formats import DEFAULT_KV_CACHE_DTYPE, DTYPE_BYTES
from ..gpus import gpu_generation
from ..sizing.state import layer_state_bytes
from ..spec import LayerGroup, Layout, ModelArch
from ..units import bytes_exact, ceil_div
from .common import CacheGroup, EngineAllocation, choose_release, parse_version

#: ``vllm serve``'s default ``max_num_seqs`` on a large GPU and otherwise, and what "large" is
#: (``EngineArgs.get_batch_defaults``: ``device_memory >= 70 * GiB_bytes and "a100" not in device_name``).
LARGE_GPU_MAX_NUM_SEQS: int = 1024
SMALL_GPU_MAX_NUM_SEQS: int = 256
LARGE_GPU_MIN_BYTES: int = 70 << 30

DEFAULT_BLOCK_SIZE: int = 16
MLA_BLOCK_SIZE: int = 64
HYBRID_ALIGNMENT: int = 16
MODEL_DTYPE: str = "bf16"


@dataclass(frozen=True, slots=True)
class VllmRelease:
    """The allocator rules of the vLLM releases from ``since`` up to the next entry."""

    since: str
    logged_tokens: str  # "per_group" | "concurrency"
    group_size_rule: str  # "min" | "min_or_max"
    #: The least alignment of an MLA hybrid's attention block: fixed up to 0.19 (16, then 64 from 0.11.1), the
    #: ``use_mla`` floor from 0.27 (128); 0 in 0.20-0.26, which align to the backend's smallest kernel block only.
    mla_hybrid_alignment: int
    source: str
    #: Nemotron-H's recurrent state dtype when its config states none (``NemotronHForCausalLMConfig``).
    nemotron_h_ssm_dtype: str = "fp16"
    #: Sliding-window groups reserve every concurrent batch's tokens (``max_in_flight_tokens``, 0.26+).
    in_flight_batches: bool = False
    #: Prefix caching on by default for hybrid (linear + attention) models (0.28+), so mamba "align" mode.
    hybrid_prefix_caching: bool = False
    #: KV cache groups formed over the whole model and projected onto each pipeline stage (0.11.0+,
    #: ``get_kv_cache_configs``); before, each stage formed its own groups (``get_kv_cache_config`` per worker).
    global_groups: bool = True
    #: The MLA block follows the first attention backend of ``platforms/cuda.py`` ``_get_backend_priorities``
    #: that takes the configuration (0.18+, ``Platform.update_block_size_for_backend``); before, ``CudaPlatform.
    #: check_and_update_config`` forced the block of the backend it defaulted to.
    mla_backend_priorities: bool = True
    #: The MLA block forced on Blackwell (SM 10.x) before ``mla_backend_priorities``: 16 (none forced), 128
    #: (CUTLASS MLA), 64 (FlashInfer MLA).
    blackwell_mla_block: int = 0


#: The modelled releases, oldest first; each holds until the next.
VLLM_RELEASES: tuple[VllmRelease, ...] = (
    VllmRelease(
        "0.10.0",
        "per_group",
        "min",
        HYBRID_ALIGNMENT,
        "vllm 0.10.x-0.11.0 v1/core/kv_cache_utils.py: GPU KV cache size = num_blocks // len(groups) * min_block_size "
        "(_get_kv_cache_config_uniform_page_size; one group: num_blocks * block_size)",
        global_groups=False,
        mla_backend_priorities=False,
        blackwell_mla_block=DEFAULT_BLOCK_SIZE,
    ),
    VllmRelease(
        "0.10.2",
        "per_group",
        "min",
        HYBRID_ALIGNMENT,
        "vllm 0.10.2 platforms/cuda.py check_and_update_config: MLA on Blackwell (is_device_capability(100)) "
        "defaults to CUTLASS MLA, block forced to 128 (0.10.0: FlashMLA only, Hopper only)",
        global_groups=False,
        mla_backend_priorities=False,
        blackwell_mla_block=128,
    ),
    VllmRelease(
        "0.11.0",
        "per_group",
        "min",
        HYBRID_ALIGNMENT,
        "vllm 0.11.0 v1/core/kv_cache_utils.py get_kv_cache_configs: KV cache groups of the whole model, projected "
        "onto each pipeline stage (0.10.x: get_kv_cache_config per worker, then unify_kv_cache_configs)",
        mla_backend_priorities=False,
        blackwell_mla_block=128,
    ),
    VllmRelease(
        "0.11.1",
        "per_group",
        "min",
        64,
        "vllm 0.11.1 model_executor/models/config.py: MLA hybrids align the attention block to 64 (FlashMLA)",
        mla_backend_priorities=False,
        blackwell_mla_block=128,
    ),
    VllmRelease(
        "0.15.0",
        "per_group",
        "min",
        64,
        "vllm 0.15.0 platforms/cuda.py check_and_update_config: MLA on Blackwell defaults to FlashInfer MLA "
        "(qk_nope_head_dim 128), block forced to 64 (0.11.1-0.14: CUTLASS MLA, 128)",
        mla_backend_priorities=False,
        blackwell_mla_block=64,
    ),
    VllmRelease(
        "0.18.0",
        "per_group",
        "min_or_max",
        64,
        "vllm 0.18.0 v1/core/kv_cache_utils.py: group_size = max layers when max < 1.5 x min; platforms/interface.py "
        "update_block_size_for_backend: the block is the attention backend's preferred size (0.17: forced in "
        "platforms/cuda.py check_and_update_config)",
    ),
    VllmRelease(
        "0.20.0",
        "per_group",
        "min_or_max",
        0,
        "vllm 0.20.0 model_executor/models/config.py NemotronHForCausalLMConfig: DEFAULT_MAMBA_SSM_CACHE_DTYPE = "
        "float32 (float16 up to 0.19); platforms/interface.py _align_hybrid_block_size aligns hybrids to the "
        "backend's smallest kernel block",
        "fp32",
    ),
    VllmRelease(
        "0.22.0",
        "concurrency",
        "min_or_max",
        0,
        "vllm 0.22.0 v1/core/kv_cache_utils.py: GPU KV cache size = int(max_concurrency * max_model_len)",
        "fp32",
    ),
    VllmRelease(
        "0.26.0",
        "concurrency",
        "min_or_max",
        0,
        "vllm 0.26.0 v1/kv_cache_interface.py SlidingWindowSpec.max_admission_blocks_per_request: window - 1 + "
        "max_in_flight_tokens (max_concurrent_batches x max_num_batched_tokens; 0.25: max_num_batched_tokens)",
        "fp32",
        True,
    ),
    VllmRelease(
        "0.27.0",
        "concurrency",
        "min_or_max",
        128,
        "vllm 0.27.0 platforms/interface.py _align_hybrid_block_size: MLA hybrids (use_mla) align to at least 128 "
        "(absent in 0.26.0)",
        "fp32",
        True,
    ),
    VllmRelease(
        "0.28.0",
        "concurrency",
        "min_or_max",
        128,
        "vllm 0.28.0 engine/arg_utils.py _set_default_chunked_prefill_and_prefix_caching_args: prefix caching on by "
        "default for hybrids (0.26-0.27: opt-in; up to 0.25 ModelConfig.is_prefix_caching_supported is False for "
        "them); model_executor/models/config.py MambaModelConfig: mamba_cache_mode none -> align",
        "fp32",
        True,
        True,
    ),
)
#: The newest release whose source was read for these rules.
NEWEST_VLLM: str = "0.33.0"


def mla_block_size(rules: VllmRelease, generation: str, kv_cache_dtype: str) -> tuple[int, str]:
    """``(block, why)``: the MLA block vLLM picks under ``rules`` on a GPU of ``generation`` (module docstring,
    "Block size"). From 0.18 it is the preferred block of the first backend of ``_get_backend_priorities`` that
    takes the KV dtype, which is also the smallest kernel block hybrids align to from 0.20."""
    quantized = kv_cache_dtype.startswith("fp8")
    if rules.mla_backend_priorities:
        if generation == "sm90":
            if quantized:
                return 64, "FLASHMLA's [64]: FLASH_ATTN_MLA, first on SM 9.x, takes no fp8 KV cache"
            return 16, "FLASH_ATTN_MLA, first on SM 9.x, kernel blocks [MultipleOf(16)]: the default 16 stays"
        if generation == "sm100":
            return 32, (
                "FLASHINFER_MLA, first on SM 10.x, kernel blocks [32, 64]: the smallest, 32 (it needs qk_nope_head_dim "
                "64 or 128, as DeepSeek-V3 and Kimi have; else CUTLASS_MLA's 128: give block_size_tokens)"
            )
        return 16, "TRITON_MLA (FLASH_ATTN_MLA / FLASHMLA / FLASHINFER_MLA need SM 9.x or 10.x): [MultipleOf(16)]"
    if generation == "sm90":
        return 64, "FlashMLA on Hopper: 'Forcing kv cache block size to 64 for FlashMLA backend'"
    if generation == "sm100":
        why = {
            DEFAULT_BLOCK_SIZE: "no block forced on Blackwell (FlashMLA is Hopper-only in this release)",
            128: "CUTLASS MLA on Blackwell: 'Forcing kv cache block size to 128 for CUTLASS_MLA backend'",
            64: "FlashInfer MLA on Blackwell (qk_nope_head_dim 128; else CUTLASS MLA's 128: give block_size_tokens): "
            "'Forcing kv cache block size to 64 for FlashInferMLA backend'",
        }[rules.blackwell_mla_block]
        return rules.blackwell_mla_block, why
    return DEFAULT_BLOCK_SIZE, "no MLA block forced on this GPU (FlashMLA needs SM 9.x): the default 16"


def pp_stages(layers: int, pp: int) -> list[range]:
    """The decoder layers of each pipeline stage (``distributed/utils.py`` ``get_pp_indices``, every modelled
    release, ``VLLM_PP_LAYER_PARTITION`` unset): ``layers // pp`` each, the remainder one more each on the stages
    before the last, counted back from the second-to-last."""
    per = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        per[-i] += 1
    starts = [sum(per[:i]) for i in range(pp)]
    return [range(start, start + n) for start, n in zip(starts, per, strict=True)]


def default_max_num_seqs(device_name: str, device_memory_bytes: int) -> tuple[int, str]:
    """``(max_num_seqs, why)``: the running requests ``vllm serve`` allows per data-parallel rank on a GPU
    named ``device_name`` whose driver reports ``device_memory_bytes`` (module docstring, "Running requests")."""
    large = device_memory_bytes >= LARGE_GPU_MIN_BYTES and "a100" not in device_name.lower()
    n = LARGE_GPU_MAX_NUM_SEQS if large else SMALL_GPU_MAX_NUM_SEQS
    return n, (
        f"Running requests: at most max_num_seqs = {n:,} per data-parallel rank (vllm serve's default: "
        f"{LARGE_GPU_MAX_NUM_SEQS:,} on a GPU of at least 70 GiB that is not an A100, else {SMALL_GPU_MAX_NUM_SEQS}; "
        "EngineArgs.get_batch_defaults). --max-num-seqs is not modelled."
    )


def vllm_release(version: str | None) -> tuple[str, VllmRelease]:
    """``(version, rules)`` for ``version`` (default: the newest modelled); ``EngineInputError`` if unknown."""
    return choose_release(VLLM_RELEASES, version, NEWEST_VLLM, "vLLM", "0.11.0")


def state_dtypes(group: LayerGroup, rules: VllmRelease | None = None) -> tuple[str, str, str]:
    """``(recurrent dtype, conv dtype, why)`` vLLM keeps for a linear group with ``--mamba-*-cache-dtype auto``
    under ``rules`` (default: the newest modelled release's)."""
    conv = group.conv_dtype or MODEL_DTYPE
    if group.state_dtype:
        return group.state_dtype, conv, "as the model states"
    if group.family == "nemotron_h":
        rules = rules or vllm_release(None)[1]
        return (
            rules.nemotron_h_ssm_dtype,
            conv,
            f"Nemotron-H: recurrent state {rules.nemotron_h_ssm_dtype} (NemotronHForCausalLMConfig's default when the "
            "config states no mamba_ssm_cache_dtype: float16 up to 0.19, float32 from 0.20), conv in the model dtype",
        )
    if group.variant == "kda":
        return "fp32", conv, "KDA: recurrent state fp32, conv in the model dtype (kda_state_dtype)"
    if group.variant in ("gated_deltanet", "mamba2"):
        return (
            MODEL_DTYPE,
            conv,
            f"{group.variant}: conv and recurrent state in the model dtype (mamba_ssm_cache_dtype auto)",
        )
    return "fp32", conv, "kernel family not stated: recurrent state assumed fp32"


def _state_page(group: LayerGroup, tp: int, state_dtype: str, conv_dtype: str) -> int:
    """One linear layer's state for one request on one tp rank (vLLM ``MambaStateShapeCalculator``)."""
    return layer_state_bytes(group, tp, state_dtype, conv_dtype)


def _attention_page_per_token(group: LayerGroup, tp: int, element_bytes: int) -> int:
    if group.kind == "mla":
        return (group.kv_lora_rank + group.qk_rope_head_dim) * element_bytes
    return 2 * max(1, group.kv_heads // tp) * group.head_dim * element_bytes


@dataclass(frozen=True, slots=True)
class _Type:
    kind: str
    layers: int
    page_per_token: int  # attention types; 0 for state
    state_page: int  # state types; 0 for attention
    window: int
    #: The type's layers' positions in the decoder stack (whole model), when the record gives them.
    positions: tuple[int, ...] = ()


def _types(
    model: ModelArch, layout: Layout, element_bytes: int, rules: VllmRelease, *, whole_model: bool = False
) -> tuple[list[_Type], tuple[str, str, str] | None]:
    """Layer types, merged when their specs are equal: of the whole model (``whole_model``, with the layers'
    positions) or else on one GPU, ``ceil(count / pp)`` of each group (the busiest stage of an even split)."""
    merged: dict[tuple, _Type] = {}
    dtypes: tuple[str, str, str] | None = None
    for group in model.layer_groups:
        layers = group.count if whole_model else ceil_div(group.count, layout.pp)
        positions = group.layers if whole_model else ()
        if group.kind == "linear":
            state, conv, why = state_dtypes(group, rules)
            dtypes = dtypes or (state, conv, why)
            page = _state_page(group, layout.tp, state, conv)
            key: tuple = ("linear", page)
            item = _Type("linear", layers, 0, page, 0, positions)
        else:
            per_token = _attention_page_per_token(group, layout.tp, element_bytes)
            window = group.window if group.kind == "sliding" else 0
            key = (group.kind, per_token, window)
            item = _Type(group.kind, layers, per_token, 0, window, positions)
        if key in merged:
            both = tuple(sorted(merged[key].positions + positions))
            item = _Type(
                item.kind, merged[key].layers + layers, item.page_per_token, item.state_page, item.window, both
            )
        merged[key] = item
    return list(merged.values()), dtypes


def _group_size(counts: list[int], rules: VllmRelease) -> int:
    """``group_size`` of types of ``counts`` layers (``_get_kv_cache_groups_uniform_page_size``)."""
    if len(counts) == 1:
        return counts[0]
    size = min(counts)
    if rules.group_size_rule == "min_or_max" and max(counts) < 1.5 * min(counts):
        size = max(counts)
    return size


def _split(types: list[_Type], group_size: int) -> list[tuple[_Type, tuple[int, ...]]]:
    """Each type cut into ``cdiv(layers, group_size)`` groups, group ``i`` holding ``positions[i::groups]``."""
    out = []
    for t in types:
        n = ceil_div(t.layers, group_size)
        out += [(t, t.positions[i::n]) for i in range(n)]
    return out


@dataclass(frozen=True, slots=True)
class _Stages:
    """Where a record with layer positions puts vLLM's groups on the busiest pipeline stage."""

    groups: list[tuple[_Type, int]]  # (type, layers of the group on the busiest stage), in group order
    group_size: int  # the whole model's (global groups) or the busiest stage's (per-stage groups)
    slots: int  # layer slots (tensors) on the busiest stage: num_blocks = available // page // slots
    note: str


def _stages(types: list[_Type], stack: int, layout: Layout, rules: VllmRelease, version: str) -> _Stages:
    """vLLM's groups of a model whose layers' positions are known, split between ``layout.pp`` stages by
    position (``pp_stages``). From 0.11.0 the groups are the whole model's (``get_kv_cache_configs``): each
    stage holds the part of each group in its layers and sizes its block by its largest part, and the stage
    with the fewest blocks sets ``num_blocks`` for all. Before, each stage formed its own groups from its own
    layers (and ``unify_kv_cache_configs`` required them to match)."""
    stages = pp_stages(stack, layout.pp)
    split = [f"{len(r)}" for r in stages]
    if rules.global_groups:
        group_size = _group_size([t.layers for t in types], rules)
        groups = _split(types, group_size)
        per_stage = [[sum(1 for i in where if i in r) for _, where in groups] for r in stages]
        busiest = max(range(len(stages)), key=lambda s: max(per_stage[s]))
        slots = max(per_stage[busiest])
        note = (
            f"Pipeline stages by layer position (get_pp_indices: {' + '.join(split)} of {stack} decoder layers); "
            f"KV cache groups over the whole model (group_size {group_size}), each stage holding its part of each "
            f"group; stage {busiest} has the most layers in one group, {slots}: num_blocks = available // page "
            f"// {slots} (the smallest of the stages')."
        )
        return _Stages([(t, per_stage[busiest][k]) for k, (t, _) in enumerate(groups)], group_size, slots, note)
    plans = []
    for r in stages:
        here = [
            _Type(t.kind, n, t.page_per_token, t.state_page, t.window, tuple(i for i in t.positions if i in r))
            for t in types
            if (n := sum(1 for i in t.positions if i in r))
        ]
        size = _group_size([t.layers for t in here], rules)
        plans.append((here, size))
    shapes = {tuple((t.kind, ceil_div(t.layers, size)) for t in here) for here, size in plans}
    if len(shapes) > 1:
        raise EngineInputError.single(
            "engine_version",
            f"vLLM {version} forms KV cache groups per pipeline stage and requires every stage's to match "
            f"(unify_kv_cache_configs); at pp {layout.pp} this model's stages ({' + '.join(split)} layers) form "
            "different groups. From 0.11.0 the groups are the whole model's.",
        )
    stage, (here, size) = max(enumerate(plans), key=lambda item: item[1][1])
    groups = [(t, len(where)) for t, where in _split(here, size)]
    note = (
        f"Pipeline stages by layer position (get_pp_indices: {' + '.join(split)} of {stack} decoder layers); "
        f"vLLM {version} groups each stage's layers on their own: stage {stage}'s group_size {size} is the largest, "
        f"num_blocks = available // page // {size}."
    )
    return _Stages(groups, size, size, note)


def vllm_allocation(
    model: ModelArch,
    layout: Layout,
    *,
    available_bytes: int,
    max_model_len: int,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    block_size_tokens: int | None = None,
    version: str | None = None,
    batch_tokens: int = 8192,
    prefix_caching: bool | None = None,
    device_name: str | None = None,
) -> EngineAllocation:
    """vLLM's allocation for ``model`` under ``layout`` with ``available_bytes`` of KV cache memory per GPU.

    ``max_model_len`` (tokens) is what the logged concurrency is quoted at; ``block_size_tokens`` is
    ``--block-size``; ``prefix_caching`` (``--enable-prefix-caching``; None: the release's default, on
    for hybrids from 0.28.0) puts hybrid models in mamba "align" mode (one more state block per request);
    ``device_name`` the GPU's name, whose generation picks the MLA backend (``gpu_generation``; None: Hopper).
    Raises ``EngineInputError`` keyed by ``engine_version`` / ``block_size_tokens`` / ``layer_groups`` for
    what the allocator cannot take.
    """
    version, rules = vllm_release(version)
    element_bytes = int(DTYPE_BYTES[kv_cache_dtype])
    positions = bool(model.layer_groups) and all(g.layers for g in model.layer_groups)
    staged = positions and layout.pp > 1
    types, dtypes = _types(model, layout, element_bytes, rules, whole_model=staged)
    hybrid = any(t.kind == "linear" for t in types)
    default_caching = prefix_caching is None
    if default_caching:
        prefix_caching = hybrid and rules.hybrid_prefix_caching
    # Tokens a sliding-window request may hold beyond its window while steps are in flight (module docstring).
    batches = (2 if layout.pp == 1 else layout.pp) if rules.in_flight_batches else 1
    in_flight = batches * batch_tokens
    attention = [t for t in types if t.kind != "linear"]
    states = [t for t in types if t.kind == "linear"]
    has_mla = any(t.kind == "mla" for t in attention)
    notes: list[str] = [
        f"vLLM {version} allocator ({rules.source}).",
    ]
    if not attention:
        raise EngineInputError.single("layer_groups", "vLLM needs at least one attention layer to size blocks.")

    generation, gpu_why = gpu_generation(device_name)
    mla_block, mla_why = mla_block_size(rules, generation, kv_cache_dtype)
    base_block = block_size_tokens or (mla_block if has_mla else DEFAULT_BLOCK_SIZE)
    if block_size_tokens is None:
        notes.append(
            f"Block size {base_block} tokens ("
            + (f"MLA, {gpu_why}: {mla_why}" if has_mla else "vLLM's default on CUDA")
            + ")."
        )
    else:
        notes.append(f"Block size {base_block} tokens (--block-size).")

    # Attention pages must be one size across attention types (unify_kv_cache_spec_page_size scales blocks).
    page_per_token = max(t.page_per_token for t in attention)
    for t in attention:
        if page_per_token % t.page_per_token:
            raise EngineInputError.single(
                "layer_groups",
                "Attention layers whose per-token pages do not divide each other cannot share vLLM's block pool.",
            )
    block = base_block
    state_page = None
    padding = 0.0
    if states:
        state_page = max(t.state_page for t in states)
        if parse_version(version) >= (0, 20):
            # kernel_block_alignment_size = max(smallest kernel block, cache_config.block_size), and from 0.27
            # at least 128 for MLA (rules.mla_hybrid_alignment; 0 in 0.20-0.26)
            align = max(mla_block if has_mla else HYBRID_ALIGNMENT, base_block)
            if has_mla:
                align = max(align, rules.mla_hybrid_alignment)
        else:
            align = rules.mla_hybrid_alignment if has_mla else HYBRID_ALIGNMENT
        needed = align * ceil_div(state_page, align * page_per_token)
        if block_size_tokens is None or block_size_tokens < needed:
            block = needed
            notes.append(
                f"Hybrid model: attention block raised to {block} tokens so one attention page "
                f"({block} x {page_per_token} B) holds a state page of {bytes_exact(state_page)} "
                f"(alignment {align}; 'Setting attention block size to {block} tokens')."
            )
        padded = block * page_per_token
        padding = (padded - state_page) / state_page
        notes.append(
            f"State page padded by {padding * 100:.2f}% to {bytes_exact(padded)} ('Padding mamba page size'); "
            f"state dtypes: recurrent {dtypes[0]}, conv {dtypes[1]} ({dtypes[2]})."  # type: ignore[index]
        )
    page = block * page_per_token

    # Groups: (type, layers of the group on the busiest stage), the group size and the busiest stage's slots.
    if staged:
        plan = _stages(types, model.layer_groups[0].decoder_layers, layout, rules, version)
        placed, slots = plan.groups, plan.slots
        notes.append(plan.note)
    else:
        group_size = slots = _group_size([t.layers for t in types], rules)  # one stage's

        placed = []
        for t in types:
            n_groups = ceil_div(t.layers, group_size)
            pad = n_groups * group_size - t.layers
            placed += [(t, group_size - (pad if i == n_groups - 1 else 0)) for i in range(n_groups)]
        if layout.pp > 1:
            notes.append(
                f"Pipeline stages assumed to hold ceil(count / {layout.pp}) layers of each layer group (the record "
                "gives no layer positions; vLLM splits the stack by position, get_pp_indices, so the busiest "
                "stage may hold more of one kind)."
            )
    groups: list[CacheGroup] = []
    for t, held in placed:
        scale = page_per_token // t.page_per_token if t.page_per_token else 1
        groups.append(
            CacheGroup(
                kind=t.kind,
                layers=slots,
                block_size_tokens=0 if t.kind == "linear" else block * scale,
                page_bytes=page,
                window=t.window,
                extra_blocks=(1 if prefix_caching else 0) if t.kind == "linear" else (1 if t.kind == "sliding" else 0),
                padding_layers=slots - held,
                batch_tokens=in_flight if t.kind == "sliding" else 0,
            )
        )
    if any(t.kind == "sliding" for t in attention):
        notes.append(
            f"Sliding-window requests hold at most window - 1 + {in_flight:,} in-flight tokens ("
            + (f"{batches} concurrent batches x {batch_tokens:,} batched tokens, max_in_flight_tokens" if batches > 1
               else f"max_num_batched_tokens {batch_tokens:,}")
            + ") plus one block."
        )  # fmt: skip
    if len(groups) > 1:
        notes.append(
            f"{len(groups)} KV cache groups of {slots} layer slots share {slots} tensors of "
            f"num_blocks pages each (vLLM hybrid allocator)."
        )
    num_blocks = max(0, available_bytes // page // slots)
    need = sum(g.blocks_per_request(max_model_len) for g in groups)
    concurrency = num_blocks / need if need else 0.0
    min_block = min(g.block_size_tokens for g in groups if g.block_size_tokens)
    if rules.logged_tokens == "per_group":
        tokens = num_blocks // len(groups) * min_block
        formula = "num_blocks // groups x block_size"
    else:
        tokens = int(concurrency * max_model_len)
        formula = "int(max_concurrency x max_model_len)"
    notes.append(
        f"num_blocks = {bytes_exact(available_bytes)} // {bytes_exact(page)} per page // {slots} = {num_blocks:,}; "
        f"logged tokens = {formula} = {tokens:,}; concurrency at {max_model_len:,} tokens = {num_blocks:,} / {need} "
        f"blocks per request = {concurrency:.2f}x."
    )
    if prefix_caching and states:
        notes.append(
            "Prefix caching on"
            + (f" (vLLM {version}'s default for hybrids from 0.28.0; enable_prefix_caching false turns it off)"
               if default_caching else "")
            + ": mamba 'align' mode keeps 2 state blocks per request."
        )  # fmt: skip
    elif states and default_caching:
        notes.append(f"Prefix caching off (vLLM {version} keeps it opt-in for hybrids; on by default from 0.28.0).")
    state_total = 0
    per_stage = [0] * layout.pp
    stages = pp_stages(model.layer_groups[0].decoder_layers, layout.pp) if staged else []
    for group in model.layer_groups:
        if group.kind == "linear":
            state, conv, _ = state_dtypes(group, rules)
            state_total += layer_state_bytes(group, 1, state, conv) * group.count
            one = layer_state_bytes(group, layout.tp, state, conv)
            for s in range(layout.pp):
                held = sum(1 for i in group.layers if i in stages[s]) if staged else ceil_div(group.count, layout.pp)
                per_stage[s] += one * held
    state_gpu = max(per_stage)
    return EngineAllocation(
        engine="vllm",
        engine_version=version,
        block_size_tokens=block,
        num_blocks=num_blocks,
        kv_cache_tokens=tokens,
        max_concurrency=concurrency,
        max_model_len=max_model_len,
        available_kv_cache_bytes=available_bytes,
        groups=tuple(groups),
        state_page_bytes=state_page,
        page_padding_fraction=padding,
        state_dtype=dtypes[0] if dtypes else None,
        conv_dtype=dtypes[1] if dtypes else None,
        state_slots=None,
        assumptions=tuple(notes),
        state_bytes_per_sequence=state_total,
        state_bytes_per_sequence_per_gpu=state_gpu,
    )
