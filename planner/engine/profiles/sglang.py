"""SGLang's KV cache token pool and hybrid state pool, release by release. Units: bytes, tokens; one GPU.

Read from SGLang's own source, per release (``pip download sglang==X --no-deps``; paths inside the
wheel, ``sglang/srt/...``). SGLang sizes its pools from the **rest memory** (``rest_memory_bytes``):
the memory free after the weights load minus ``(1 - mem_fraction_static)`` of the memory free before
(``model_runner.py`` ``profile_max_num_token`` up to 0.5.6, ``model_runner_kv_cache_mixin.py`` 0.5.7
to 0.5.15, ``mem_cache/kv_cache_configurator.py`` ``_profile_available_bytes`` from 0.5.16). Activations
and CUDA graphs live in that ``1 - mem_fraction_static`` slack, not in the rest; ``available_bytes``
is the rest memory.

* **Cell size** (``profile_max_num_token``; from 0.5.16 ``pool_configurator.py``
  ``DefaultPoolConfigurator._compute_cell_size``): bytes of one token over all attention layers of the
  GPU: MHA ``max(1, kv_heads // tp) x (head_dim + v_head_dim) x layers x dtype`` (``get_num_kv_heads``);
  MLA ``(kv_lora_rank + qk_rope_head_dim) x layers x dtype``, the latent not split by tp. Hybrid
  linear-attention models count their full-attention layers only. Layers are the pipeline stage's
  (``num_effective_layers`` from 0.4.10; 0.4.3 used ``num_hidden_layers``); a hybrid's attention layers
  are filtered to the stage from 0.5.9 (before, all of them were counted on every stage).
* **Tokens**: ``max_total_num_tokens = rest // cell``, floored to a whole number of pages from 0.4.10
  (``init_memory_pool``; ``DefaultPoolConfigurator.calculate_pool_sizes`` from 0.5.16).
* **Page size**: 1 token by default on CUDA (``overrides.py`` ``_page_size_default``). Backends force it
  (``_mla_backend_page_constraints``): FlashMLA and HPC-Ops 64; TRT-LLM MLA and CuTe-DSL MLA 64 unless
  32 is asked; TRT-LLM MHA 64 unless 16, 32, 64 or 128 is asked. SGLang picks TRT-LLM MHA by default on
  Blackwell (SM100) for MHA models and TRT-LLM MLA for DeepSeek-V3 (``model_override_base.py``
  ``get_default_attn_backend``, ``model_overrides/deepseek_v2.py``); on Hopper FA3, page 1.
* **Sliding-window models** (from 0.4.10; ``HybridSWAPoolConfigurator`` from 0.5.16): two token pools,
  ``full = rest // (full_cell + swa_full_tokens_ratio x swa_cell)`` (page floored) and
  ``swa = int(full x swa_full_tokens_ratio)``, ratio 0.8 by default; a request keeps at most its window
  in the SWA pool.
* **Hybrid linear-attention models** (``handle_max_mamba_cache``; ``_handle_max_mamba_cache`` from
  0.5.16): one state slot holds every linear layer's conv and recurrent state
  (``configs/mamba_utils.py`` ``mamba_cache_per_req``: recurrent ``value_heads / tp x value_dim x
  key_dim`` in ``mamba_ssm_dtype``, float32 by default; conv ``(kernel - 1) x (2 x key_heads x key_dim
  + value_heads x value_dim) / tp`` in bfloat16, ``SGLANG_MAMBA_CONV_DTYPE``). The number of slots
  (``max_mamba_cache_size``) is either fixed (``--max-mamba-cache-size``, else ``--max-running-requests``,
  else 512, split over data-parallel attention ranks) or, with the radix cache on, the ratio split
  ``max_mamba_cache_size = rest x r / (1 + r) // per_slot`` with ``r = mamba_full_memory_ratio`` (0.9);
  from 0.5.17 ``(rest x r / (1 + r) - per_slot) // per_slot``, because the pool's padding slot is
  charged (``(size + 1) x per_slot``). The KV pool gets what the slots leave. A running request holds 3
  slots with the radix cache (``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``), 2 more with the
  ``extra_buffer`` strategy and the overlap scheduler (ping-pong slots), 1 without the radix cache;
  ``max_running_requests`` is capped at ``max_mamba_cache_size // slots``.
* **Running requests** (``model_runner_kv_cache_mixin.py`` ``init_memory_pool``, 0.5.8; the same
  clamp in ``model_runner.py`` before): without ``--max-running-requests`` the request pool holds
  ``min(max(int(max_total_num_tokens / context_len x 512), 2048), 4096)`` requests per data-parallel
  rank, ``context_len`` being ``--context-length`` (max_model_len); a hybrid's state slots cap it
  further (above). ``--max-running-requests`` is not modelled.
* **Concurrency**: SGLang logs none. Defined here as ``min(pages / pages per request, SWA pages / SWA
  pages per request, state slots / slots per request)``: with page size 1 (and whenever ``L`` is a
  multiple of the page) that is ``min(max_total_num_tokens / L, max_mamba_cache_size / slots)``; a
  request of ``L`` tokens holds ``ceil(L / page)`` whole pages.

Not modelled: speculative decoding (draft KV and intermediate states), DeepSeek sparse attention's
indexer cache, fp4/mxfp8 KV scale buffers, decode-context parallelism, KV sharding, unified memory
pools, post-capture KV sizing (``SGLANG_ENABLE_POST_CAPTURE_KV_SIZING``, off by default), ReplaySSM
rings, the ``SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK`` and ``SGLANG_MAMBA_*_DTYPE`` environment overrides, and
SGLang's own default ``mem_fraction_static`` (``arg_groups/memory_hook.py``; give it as
``gpu_memory_utilization``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import EngineInputError
from ..formats import DEFAULT_KV_CACHE_DTYPE, DTYPE_BYTES
from ..sizing.state import layer_state_bytes
from ..spec import LayerGroup, Layout, ModelArch
from ..units import bytes_exact, ceil_div
from .common import CacheGroup, EngineAllocation, choose_release

DEFAULT_PAGE_SIZE: int = 1
#: Backends that force the page size: ``(sizes they accept, size forced otherwise)``
#: (sglang 0.5.23 ``srt/arg_groups/overrides.py`` ``_mla_backend_page_constraints``).
BACKEND_PAGE_SIZES: dict[str, tuple[tuple[int, ...], int]] = {
    "flashmla": ((64,), 64),
    "hpc_ops": ((64,), 64),
    "trtllm_mla": ((32, 64), 64),
    "cutedsl_mla": ((32, 64), 64),
    "trtllm_mha": ((16, 32, 64, 128), 64),
}
DEFAULT_MAMBA_FULL_MEMORY_RATIO: float = 0.9
DEFAULT_SWA_FULL_TOKENS_RATIO: float = 0.8
#: State slots a running request holds with the radix cache (``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``).
RADIX_STATE_SLOTS: int = 3
#: Ping-pong slots the ``extra_buffer`` strategy adds per request with the overlap scheduler (1 without).
EXTRA_BUFFER_SLOTS_OVERLAP: int = 2
EXTRA_BUFFER_SLOTS_NO_OVERLAP: int = 1
#: ``max_mamba_cache_size`` when fixed and neither it nor ``--max-running-requests`` is given.
FIXED_MAMBA_CACHE_SIZE: int = 512
#: The request pool's clamp without ``--max-running-requests`` (``init_memory_pool``).
REQUEST_POOL_MIN: int = 2048
REQUEST_POOL_MAX: int = 4096
REQUEST_POOL_PER_CONTEXT: int = 512
SSM_DTYPE: str = "fp32"
CONV_DTYPE: str = "bf16"
_ALL_VARIANTS: tuple[str, ...] = ("gated_deltanet", "mamba2", "kda")


@dataclass(frozen=True, slots=True)
class SglangRelease:
    """The pool-sizing rules of the SGLang releases from ``since`` up to the next entry.

    ``page_rounding``: tokens floored to whole pages; ``stage_layers``: layers counted per pipeline
    stage; ``swa_pool``: separate sliding-window pool; ``hybrid_stage_attention``: a hybrid's attention
    layers filtered to the stage; ``linear_variants``: linear-attention kernel families served;
    ``radix_variants``: those whose radix cache stays on by default (the others disable it);
    ``state_sizing``: how ``max_mamba_cache_size`` is found with the radix cache on (``"fixed"`` or
    ``"ratio"``); ``radix_off_sizing``: the same with it off (``"fixed"``, or ``"ratio"`` unless
    ``--max-running-requests`` is given); ``explicit_state_slots``: ``--max-mamba-cache-size`` honoured
    with the radix cache on; ``extra_buffer_variants``: families whose ``auto`` radix strategy is
    ``extra_buffer``; ``padding_slot_charged``: the pool's padding slot is charged to the rest;
    ``stage_state``: a slot covers the stage's linear layers only (else all of them);
    ``ssm_dtype_from_config``: the model's ``mamba_ssm_dtype`` is read (else float32 unless asked);
    ``dp_split_gdn_only``: the slots are divided by the data-parallel attention ranks for GDN models
    only, whichever way they were found (else: fixed or asked slot counts are, for every model, and the
    ratio split is not).
    """

    since: str
    page_rounding: bool
    stage_layers: bool
    swa_pool: bool
    hybrid_stage_attention: bool
    linear_variants: tuple[str, ...]
    radix_variants: tuple[str, ...]
    state_sizing: str
    radix_off_sizing: str
    explicit_state_slots: bool
    extra_buffer_variants: tuple[str, ...]
    padding_slot_charged: bool
    stage_state: bool
    ssm_dtype_from_config: bool
    dp_split_gdn_only: bool
    source: str


def _release(since: str, base: SglangRelease | None = None, source: str = "", **changes: object) -> SglangRelease:
    fields = {name: getattr(base, name) for name in SglangRelease.__slots__} if base else {}
    fields.update(changes, since=since, source=source)
    return SglangRelease(**fields)  # type: ignore[arg-type]


_R043 = SglangRelease(
    since="0.4.3",
    page_rounding=False,
    stage_layers=False,
    swa_pool=False,
    hybrid_stage_attention=False,
    linear_variants=(),
    radix_variants=(),
    state_sizing="none",
    radix_off_sizing="none",
    explicit_state_slots=False,
    extra_buffer_variants=(),
    padding_slot_charged=False,
    stage_state=False,
    ssm_dtype_from_config=False,
    dp_split_gdn_only=False,
    source="sglang 0.4.3.post4 srt/model_executor/model_runner.py profile_max_num_token: "
    "int(rest * 2**30 // cell_size), cell over num_hidden_layers",
)
_R0410 = _release(
    "0.4.10",
    _R043,
    "sglang 0.4.10.post2 srt/model_executor/model_runner.py init_memory_pool: max_total_num_tokens // page_size "
    "* page_size; set_num_token_hybrid splits full and SWA tokens by swa_full_tokens_ratio",
    page_rounding=True,
    stage_layers=True,
    swa_pool=True,
)
_R052 = _release(
    "0.5.2",
    _R0410,
    "sglang 0.5.2 srt/model_executor/model_runner.py: hybrid GDN disables the radix cache, max_mamba_cache_size = "
    "max_running_requests or 512, rest -= size x mamba_cache_per_req",
    linear_variants=("gated_deltanet",),
    state_sizing="fixed",
    radix_off_sizing="fixed",
)
_R054 = _release(
    "0.5.4",
    _R052,
    "sglang 0.5.4 srt/model_executor/model_runner.py handle_max_mamba_cache: max_mamba_cache_size = rest x r / "
    "(1 + r) // mamba_cache_per_req (mamba_full_memory_ratio), then // dp_size for GDN models only; Mamba2 "
    "models (FalconH1, Nemotron-H) disable the radix cache",
    linear_variants=("gated_deltanet", "mamba2"),
    radix_variants=("gated_deltanet",),
    state_sizing="ratio",
    dp_split_gdn_only=True,
)
_R055 = _release(
    "0.5.5",
    _R054,
    "sglang 0.5.5 srt/model_executor/model_runner.py mambaish_config: Kimi Linear (KDA) joins, radix cache on",
    linear_variants=_ALL_VARIANTS,
    radix_variants=("gated_deltanet", "kda"),
)
_R057 = _release(
    "0.5.7",
    _R055,
    "sglang 0.5.7 srt/model_executor/model_runner_kv_cache_mixin.py handle_max_mamba_cache: --max-mamba-cache-size "
    "honoured with the radix cache; Mamba2 models keep the radix cache; the ratio split is no longer divided by "
    "dp_size",
    radix_variants=_ALL_VARIANTS,
    explicit_state_slots=True,
    dp_split_gdn_only=False,
)
_R059 = _release(
    "0.5.9",
    _R057,
    "sglang 0.5.9 srt/model_executor/model_runner_kv_cache_mixin.py: the ratio split also without the radix cache "
    "unless --max-running-requests is given; profile_max_num_token counts the stage's full-attention layers; "
    "configs/mamba_utils.py reads mamba_ssm_dtype from the model config",
    radix_off_sizing="ratio",
    hybrid_stage_attention=True,
    ssm_dtype_from_config=True,
)
_R0514 = _release(
    "0.5.14",
    _R059,
    "sglang 0.5.14 srt/server_args.py: mamba_radix_cache_strategy auto -> extra_buffer with the overlap scheduler "
    "for GDN and Mamba2 models (3 + 2 state slots per running request)",
    extra_buffer_variants=("gated_deltanet", "mamba2"),
)
_R0516 = _release(
    "0.5.16",
    _R0514,
    "sglang 0.5.16 srt/arg_groups/overrides.py _MAMBA_EXTRA_BUFFER_ARCHS adds KimiLinearForCausalLM (KDA)",
    extra_buffer_variants=_ALL_VARIANTS,
)
_R0517 = _release(
    "0.5.17",
    _R0516,
    "sglang 0.5.17 srt/mem_cache/kv_cache_configurator.py _handle_max_mamba_cache: max_mamba_cache_size = "
    "(budget - per_slot) // per_slot, (size + 1) slots charged to the rest",
    padding_slot_charged=True,
)
_R0518 = _release(
    "0.5.18",
    _R0517,
    "sglang 0.5.18 srt/mem_cache/kv_cache_configurator.py _handle_max_mamba_cache: a slot is priced at the "
    "busiest pipeline stage's linear layers (pp_layer_scale)",
    stage_state=True,
)

#: The modelled releases, oldest first; each holds until the next.
SGLANG_RELEASES: tuple[SglangRelease, ...] = (
    _R043,
    _R0410,
    _R052,
    _R054,
    _R055,
    _R057,
    _R059,
    _R0514,
    _R0516,
    _R0517,
    _R0518,
)
#: The newest release whose source was read for these rules.
NEWEST_SGLANG: str = "0.5.23"


def sglang_release(version: str | None) -> tuple[str, SglangRelease]:
    """``(version, rules)`` for ``version`` (default: the newest read); ``EngineInputError`` if unknown."""
    return choose_release(SGLANG_RELEASES, version, NEWEST_SGLANG, "SGLang", "0.5.9")


def default_max_running_requests(max_total_num_tokens: int, context_len: int) -> tuple[int, str]:
    """``(requests, why)``: the request pool SGLang sizes per data-parallel rank without
    ``--max-running-requests`` (module docstring, "Running requests")."""
    n = min(
        max(int(max_total_num_tokens / max(1, context_len) * REQUEST_POOL_PER_CONTEXT), REQUEST_POOL_MIN),
        REQUEST_POOL_MAX,
    )
    return n, (
        f"Running requests: at most {n:,} per data-parallel rank, SGLang's request pool = min(max(int("
        f"{max_total_num_tokens:,} / {context_len:,} x {REQUEST_POOL_PER_CONTEXT}), {REQUEST_POOL_MIN}), "
        f"{REQUEST_POOL_MAX}) (init_memory_pool); --max-running-requests is not modelled."
    )


def rest_memory_bytes(free_after_weights_bytes: int, free_before_weights_bytes: int, mem_fraction_static: float) -> int:
    """SGLang's rest memory (bytes): free memory after the weights load minus ``(1 - mem_fraction_static)``
    of the free memory before it (``profile_max_num_token``: ``available_gpu_memory - total_gpu_memory x
    (1 - mem_fraction_static)``; the log's "Load weight end ... avail mem" and "Load weight begin ...
    avail mem" in GiB)."""
    return int(free_after_weights_bytes - free_before_weights_bytes * (1 - mem_fraction_static))


def page_size_for(attention_backend: str | None, page_size: int | None) -> tuple[int, str]:
    """``(page size in tokens, why)`` for ``--attention-backend`` and ``--page-size`` (None: not given)."""
    asked = page_size or DEFAULT_PAGE_SIZE
    if attention_backend in BACKEND_PAGE_SIZES:
        allowed, forced = BACKEND_PAGE_SIZES[attention_backend]
        if asked not in allowed:
            return forced, f"{attention_backend} forces page_size {forced} (overrides.py _mla_backend_page_constraints)"
        return asked, f"page_size {asked} ({attention_backend} accepts it)"
    if page_size:
        return page_size, f"page_size {page_size} (--page-size)"
    return DEFAULT_PAGE_SIZE, (
        "page_size 1, SGLang's default on CUDA (FA3 on Hopper); on Blackwell SGLang's default TRT-LLM "
        "attention forces 64: give block_size_tokens=64"
    )


def state_dtypes(group: LayerGroup, rules: SglangRelease, mamba_ssm_dtype: str | None) -> tuple[str, str, str]:
    """``(recurrent dtype, conv dtype, why)`` SGLang keeps for a linear group (``mamba2_state_dtype``)."""
    conv = group.conv_dtype or CONV_DTYPE
    if mamba_ssm_dtype:
        return mamba_ssm_dtype, conv, "--mamba-ssm-dtype"
    if group.state_dtype and rules.ssm_dtype_from_config:
        return group.state_dtype, conv, "the model config's mamba_ssm_dtype"
    return SSM_DTYPE, conv, "mamba_ssm_dtype default float32, conv bfloat16 (SGLANG_MAMBA_CONV_DTYPE)"


def _layers(group: LayerGroup, layout: Layout, per_stage: bool) -> int:
    return ceil_div(group.count, layout.pp) if per_stage else group.count


def _attention_bytes_per_token(group: LayerGroup, tp: int, element_bytes: int) -> int:
    """One layer's cell for one token on one GPU (``_compute_cell_size``, per layer)."""
    if group.kind == "mla":
        return (group.kv_lora_rank + group.qk_rope_head_dim) * element_bytes
    return max(1, group.kv_heads // tp) * 2 * group.head_dim * element_bytes


@dataclass(frozen=True, slots=True)
class _State:
    """The hybrid state pool's figures."""

    slots: int
    per_slot: int
    layer_page: int
    layers: int
    slots_per_request: int
    charged: int
    dtypes: tuple[str, str, str]
    notes: tuple[str, ...]


def _state_pool(
    model: ModelArch,
    layout: Layout,
    rules: SglangRelease,
    rest: int,
    *,
    ratio: float,
    radix_cache: bool,
    overlap_schedule: bool,
    max_mamba_cache_size: int | None,
    max_running_requests: int | None,
    mamba_ssm_dtype: str | None,
    page_size: int,
    version: str,
) -> _State:
    linear = [g for g in model.layer_groups if g.kind == "linear"]
    for group in linear:
        if group.variant and group.variant not in rules.linear_variants:
            raise EngineInputError.single(
                "engine_version",
                f"SGLang {version} serves no {group.variant} linear-attention models "
                f"(it serves {', '.join(rules.linear_variants) or 'none'}).",
            )
    dtypes = state_dtypes(linear[0], rules, mamba_ssm_dtype)
    per_slot = 0
    layer_page = 0
    layers = 0
    for group in linear:
        state, conv, _ = state_dtypes(group, rules, mamba_ssm_dtype)
        page = layer_state_bytes(group, layout.tp, state, conv)
        count = _layers(group, layout, rules.stage_state)
        per_slot += page * count
        layer_page = max(layer_page, page)
        layers += _layers(group, layout, True)
    notes: list[str] = []
    variants = {g.variant for g in linear}
    if "" in variants:
        # Kernel family not stated: SGLang's rules for gated DeltaNet (Qwen3-Next, Qwen3.5) are assumed.
        variants = (variants - {""}) | {"gated_deltanet"}
        notes.append("Linear-attention kernel family not stated: SGLang's gated-DeltaNet rules assumed.")
    radix = radix_cache and all(v in rules.radix_variants for v in variants)
    if radix_cache and not radix:
        notes.append(f"SGLang {version} disables the radix cache for this model ({', '.join(sorted(variants))}).")

    # How many slots: fixed or the ratio split (handle_max_mamba_cache).
    sizing = rules.state_sizing if radix else rules.radix_off_sizing
    ratio_split = False
    if max_mamba_cache_size is not None and (not radix or rules.explicit_state_slots):
        slots, how = max_mamba_cache_size, f"--max-mamba-cache-size {max_mamba_cache_size}"
    elif sizing == "fixed" or (not radix and max_running_requests is not None):
        asked = max_running_requests if max_running_requests is not None else FIXED_MAMBA_CACHE_SIZE
        source = "--max-running-requests" if max_running_requests is not None else "the default"
        slots, how = asked, f"fixed: {asked} ({source})"
    else:
        ratio_split = True
        budget = rest * ratio / (1 + ratio)
        if rules.padding_slot_charged:
            slots = int((budget - per_slot) // per_slot)
            how = (
                f"(rest x {ratio:g} / (1 + {ratio:g}) - slot) // slot = ({budget:,.0f} - {per_slot:,}) // {per_slot:,}"
            )
        else:
            slots = int(budget // per_slot)
            how = f"rest x {ratio:g} / (1 + {ratio:g}) // slot = {budget:,.0f} // {per_slot:,}"
        if max_mamba_cache_size is not None:
            notes.append(f"SGLang {version} ignores --max-mamba-cache-size with the radix cache on.")
    split = "gated_deltanet" in variants if rules.dp_split_gdn_only else not ratio_split
    if split and layout.dp > 1:
        slots //= layout.dp
        how += f", // {layout.dp} data-parallel attention rank(s)"
    slots = max(0, slots)
    charged = (slots + 1 if rules.padding_slot_charged else slots) * per_slot

    # auto resolves to extra_buffer when the family supports it and the overlap scheduler is on or pages
    # exceed one token (0.5.14 server_args.py; 0.5.23 overrides.py _mamba_radix_cache_resolution).
    extra_buffer = (
        radix and (overlap_schedule or page_size > 1) and all(v in rules.extra_buffer_variants for v in variants)
    )
    if radix and not extra_buffer and page_size > 1:
        notes.append("SGLang's no_buffer radix strategy needs page size 1 (server_args.py _validate_mamba_no_buffer).")
    if not radix:
        per_request, strategy = 1, "radix cache off"
    elif extra_buffer:
        pong = EXTRA_BUFFER_SLOTS_OVERLAP if overlap_schedule else EXTRA_BUFFER_SLOTS_NO_OVERLAP
        per_request = RADIX_STATE_SLOTS + pong
        strategy = f"radix cache, extra_buffer strategy ({RADIX_STATE_SLOTS} + {pong} ping-pong)"
    else:
        per_request, strategy = RADIX_STATE_SLOTS, "radix cache, no_buffer strategy"
    notes.append(
        f"State pool: max_mamba_cache_size = {how} = {slots:,} slots of {bytes_exact(per_slot)} "
        f"({layers} linear layers; recurrent {dtypes[0]}, conv {dtypes[1]}: {dtypes[2]}); {per_request} slot(s) "
        "per running request "
        f"({strategy}), so at most {slots // per_request:,} running requests."
    )
    return _State(slots, per_slot, layer_page, layers, per_request, charged, dtypes, tuple(notes))


def _token_pools(
    attention: list[LayerGroup],
    sliding: list[LayerGroup],
    layout: Layout,
    rules: SglangRelease,
    *,
    kv_rest: int,
    element_bytes: int,
    page: int,
    per_stage: bool,
    swa_ratio: float,
) -> tuple[int, int | None, list[CacheGroup], str]:
    """``(max_total_num_tokens, SWA tokens or None, token-pool groups, formula)`` from ``kv_rest`` bytes."""

    def cell(groups: list[LayerGroup]) -> tuple[int, int]:
        layers = sum(_layers(g, layout, per_stage) for g in groups)
        per_token = sum(
            _attention_bytes_per_token(g, layout.tp, element_bytes) * _layers(g, layout, per_stage) for g in groups
        )
        return layers, per_token

    def floor_pages(tokens: int) -> int:
        return tokens // page * page if rules.page_rounding else tokens

    full_layers, full_cell = cell(attention)
    swa_layers, swa_cell = cell(sliding)
    groups: list[CacheGroup] = []
    swa_tokens: int | None = None
    if not attention:  # every attention layer slides: the SWA pool is the token pool, no ratio
        tokens = floor_pages(kv_rest // swa_cell)
        formula = f"{bytes_exact(kv_rest)} // {swa_cell:,} B per token (sliding-window layers only)"
        pool = "shared"
    elif sliding:
        tokens = floor_pages(int(kv_rest // (full_cell + swa_ratio * swa_cell)))
        swa_tokens = floor_pages(int(tokens * swa_ratio))
        formula = f"{bytes_exact(kv_rest)} // ({full_cell:,} + {swa_ratio:g} x {swa_cell:,}) B per token"
        pool = "swa"
    else:
        tokens = floor_pages(kv_rest // full_cell)
        formula = f"{bytes_exact(kv_rest)} // {full_cell:,} B per token"
        pool = "shared"
    if attention:
        groups.append(
            CacheGroup(
                kind=attention[0].kind,
                layers=full_layers,
                block_size_tokens=page,
                page_bytes=page * full_cell // full_layers,
            )
        )
    if sliding:
        groups.append(
            CacheGroup(
                kind="sliding",
                layers=swa_layers,
                block_size_tokens=page,
                page_bytes=page * swa_cell // swa_layers,
                window=max(g.window for g in sliding),
                batch_tokens=1,  # a request keeps min(window, L) tokens: window - 1 + 1
                pool=pool,
            )
        )
    return tokens, swa_tokens, groups, formula


def sglang_allocation(
    model: ModelArch,
    layout: Layout,
    *,
    available_bytes: int,
    max_model_len: int,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    page_size: int | None = None,
    version: str | None = None,
    attention_backend: str | None = None,
    mamba_full_memory_ratio: float = DEFAULT_MAMBA_FULL_MEMORY_RATIO,
    swa_full_tokens_ratio: float = DEFAULT_SWA_FULL_TOKENS_RATIO,
    radix_cache: bool = True,
    overlap_schedule: bool = True,
    max_mamba_cache_size: int | None = None,
    max_running_requests: int | None = None,
    mamba_ssm_dtype: str | None = None,
) -> EngineAllocation:
    """SGLang's pools for ``model`` under ``layout`` with ``available_bytes`` of rest memory per GPU.

    ``max_model_len`` (tokens) is the request length the concurrency is quoted at; ``page_size`` is
    ``--page-size``; the other keywords are SGLang's flags of those names (``radix_cache=False`` is
    ``--disable-radix-cache``, ``overlap_schedule=False`` ``--disable-overlap-schedule``). Raises
    ``EngineInputError`` keyed by ``engine_version`` / ``layer_groups`` for what the release cannot serve.
    """
    version, rules = sglang_release(version)
    element_bytes = int(DTYPE_BYTES[kv_cache_dtype])
    rest = max(0, available_bytes)
    page, page_why = page_size_for(attention_backend, page_size)
    notes: list[str] = [f"SGLang {version} pools ({rules.source}).", f"Page size {page} tokens: {page_why}."]

    has_linear = any(g.kind == "linear" for g in model.layer_groups)
    if has_linear and not rules.linear_variants:
        raise EngineInputError.single(
            "engine_version", f"SGLang {version} serves no linear-attention (hybrid) models; they arrived in 0.5.2."
        )
    attention = [g for g in model.layer_groups if g.kind in ("full", "mla")]
    sliding = [g for g in model.layer_groups if g.kind == "sliding"]
    if sliding and not rules.swa_pool:
        attention = attention + [dataclasses.replace(g, kind="full", window=0) for g in sliding]
        sliding = []
        notes.append(f"SGLang {version} keeps every token of sliding-window layers (no SWA pool).")
    if not attention and not sliding:
        raise EngineInputError.single("layer_groups", "SGLang's profile needs at least one attention layer.")
    if len({g.kind for g in attention}) > 1:
        raise EngineInputError.single("layer_groups", "SGLang sizes one attention kind per model (MHA or MLA).")
    if sliding and has_linear:
        raise EngineInputError.single(
            "layer_groups", "Sliding-window plus linear-attention models are not modelled for SGLang."
        )
    per_stage = rules.stage_layers and (rules.hybrid_stage_attention or not has_linear)
    if rules.stage_layers and not per_stage and layout.pp > 1:
        notes.append(f"SGLang {version} counts every full-attention layer of a hybrid on each pipeline stage.")

    state: _State | None = None
    kv_rest = rest
    if has_linear:
        state = _state_pool(
            model,
            layout,
            rules,
            rest,
            ratio=mamba_full_memory_ratio,
            radix_cache=radix_cache,
            overlap_schedule=overlap_schedule,
            max_mamba_cache_size=max_mamba_cache_size,
            max_running_requests=max_running_requests,
            mamba_ssm_dtype=mamba_ssm_dtype,
            page_size=page,
            version=version,
        )
        notes.extend(state.notes)
        kv_rest = max(0, rest - state.charged)
        if state.slots < 1 or kv_rest == 0:
            notes.append("SGLang would refuse to start: the state pool leaves no memory for the KV cache.")

    tokens, swa_tokens, groups, formula = _token_pools(
        attention,
        sliding,
        layout,
        rules,
        kv_rest=kv_rest,
        element_bytes=element_bytes,
        page=page,
        per_stage=per_stage,
        swa_ratio=swa_full_tokens_ratio,
    )
    notes.append(f"max_total_num_tokens = {formula} = {tokens:,}" + (" (floored to pages)." if page > 1 else "."))
    pool_blocks: tuple[tuple[str, int], ...] = ()
    if swa_tokens is not None:
        pool_blocks = (("swa", swa_tokens // page),)
        notes.append(
            f"Sliding-window pool: int(max_total_num_tokens x {swa_full_tokens_ratio:g}) = {swa_tokens:,} tokens; "
            f"a request keeps at most its {groups[-1].window:,}-token window there."
        )
    if state is not None:
        groups.append(
            CacheGroup(
                kind="linear",
                layers=state.layers,
                block_size_tokens=0,
                page_bytes=state.layer_page,
                extra_blocks=state.slots_per_request - 1,
                pool="state",
            )
        )
    allocation = EngineAllocation(
        engine="sglang",
        engine_version=version,
        block_size_tokens=page,
        num_blocks=tokens // page,
        kv_cache_tokens=tokens,
        max_concurrency=0.0,
        max_model_len=max_model_len,
        available_kv_cache_bytes=rest,
        groups=tuple(groups),
        state_page_bytes=state.layer_page if state else None,
        page_padding_fraction=0.0,
        state_dtype=state.dtypes[0] if state else None,
        conv_dtype=state.dtypes[1] if state else None,
        state_slots=state.slots if state else None,
        assumptions=(),
        pool_blocks=pool_blocks,
    )
    if has_linear:
        # One sequence's state in SGLang's dtypes (EngineAllocation.state_bytes_per_sequence): all layers at
        # tp = pp = 1, and the busiest stage's share on one GPU.
        total = gpu = 0
        for group in model.layer_groups:
            if group.kind == "linear":
                state_dtype, conv_dtype, _ = state_dtypes(group, rules, mamba_ssm_dtype)
                total += layer_state_bytes(group, 1, state_dtype, conv_dtype) * group.count
                gpu += layer_state_bytes(group, layout.tp, state_dtype, conv_dtype) * ceil_div(group.count, layout.pp)
        allocation = dataclasses.replace(
            allocation, state_bytes_per_sequence=total, state_bytes_per_sequence_per_gpu=gpu
        )
    concurrency = allocation.concurrency(max_model_len)
    notes.append(
        f"Concurrency at {max_model_len:,} tokens (SGLang logs none): min(token pages / pages per request"
        + (", SWA pages / SWA pages per request" if pool_blocks else "")
        + (", state slots / slots per request" if state else "")
        + f") = {concurrency:.2f}."
    )
    notes.append(
        "SGLang's budget is its rest memory: free memory after the weights minus (1 - mem_fraction_static) of "
        "the memory free before them, so activations and CUDA graphs live outside it; giving "
        "available_kv_cache_gib = the rest memory of a log reproduces that log."
    )
    return dataclasses.replace(allocation, max_concurrency=concurrency, assumptions=tuple(notes))


__all__ = [
    "BACKEND_PAGE_SIZES",
    "DEFAULT_MAMBA_FULL_MEMORY_RATIO",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SWA_FULL_TOKENS_RATIO",
    "NEWEST_SGLANG",
    "SGLANG_RELEASES",
    "SglangRelease",
    "default_max_running_requests",
    "page_size_for",
    "rest_memory_bytes",
    "sglang_allocation",
    "sglang_release",
    "state_dtypes",
]
