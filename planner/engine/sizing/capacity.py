"""``size()``: weights, runtime, state and KV cache per GPU, and the sequences that fit.

The entry point the REST API, the pages, Celery tasks and the ``size`` management command
call. Pure Python over the dataclasses of ``spec.py``; units are bytes (``int``) unless a
name says otherwise. Formulas and sources: docs/sizing.md.

Defaults: one replica. With only ``gpus`` given the layout is ``tp = gpus``; with only a
``layout`` given, ``gpus = tp x pp x dp``; with both, ``gpus`` must be a whole number of
replicas of the layout. ``context_tokens`` defaults to the model's maximum context, or
8192 tokens when the model does not state one.

Input validation (``check_inputs``) reports every problem at once in one ``EngineInputError``,
keyed by the REST API's field names: ``gpu_memory_utilization``, ``pool``, ``state_pool_ratio``,
``include_scale_overhead``, ``state_slots_per_sequence``, ``kv_cache_dtype``, ``weight_format``,
``runtime_reserve_gib``, ``batch_tokens``, ``hbm_gb``, ``gpus``, ``tp``/``pp``/``dp``/``ep`` and
``context_tokens``, plus the model's own (``total_params``, ``expert_params``, ``layer_groups``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import EngineInputError, is_int, is_number
from ..formats import DEFAULT_KV_CACHE_DTYPE, DTYPE_BYTES, RAW_BITS, WEIGHT_FORMATS
from ..limits import (
    MAX_CONTEXT_TOKENS,
    MAX_GIB,
    MAX_GPUS,
    MAX_HBM_GB,
    MAX_RATIO,
    MAX_STATE_SLOTS,
    MIN_HBM_GB,
    MIN_RATIO,
    float_error,
    int_error,
)
from ..profiles import EngineAllocation
from ..serving_engines import allocate, limit_running, profile_names
from ..spec import Accelerator, Layout, ModelArch
from ..units import GB, GIB, ceil_div, gib_to_bytes
from .admission import (
    DEFAULT_STATE_POOL_RATIO,
    POOLS,
    pool_capacities,
    usable_bytes,
)
from .memo import ModelConstants, model_constants
from .result import CapacityPoint, SizingResult
from .runtime import (
    CUDA_GRAPH_GIB,
    FRAMEWORK_GIB,
    activation_bytes,
    default_batch_tokens,
    nccl_bytes,
    runtime_assumptions,
    runtime_errors,
)
from .weights import per_gpu_shares

DEFAULT_CONTEXT_TOKENS: int = 8192
DEFAULT_GPU_MEMORY_UTILIZATION: float = 0.9
_ONE = Layout()


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Which serving engine's allocator to reproduce (``profiles``), and its settings.

    ``engine``: ``generic`` (the app's engine-neutral arithmetic), ``vllm`` or ``sglang``;
    ``engine_version``: the release whose formulas apply (None: the newest modelled);
    ``max_model_len``: tokens the engine's concurrency is quoted at (None: the context asked, else the
    model's maximum); ``block_size_tokens``: ``--block-size`` / ``--page-size``;
    ``available_kv_cache_gib``: KV cache memory per GPU as the engine logs it (GiB), replacing the
    computed cache budget; ``prefix_caching``: vLLM's ``--enable-prefix-caching`` (a hybrid's mamba "align"
    mode; None: the release's default, on for hybrids from 0.28.0).
    """

    engine: str = "generic"
    engine_version: str | None = None
    max_model_len: int | None = None
    block_size_tokens: int | None = None
    available_kv_cache_gib: float | None = None
    prefix_caching: bool | None = None

    def size_kwargs(self) -> dict[str, Any]:
        """These options as ``size()``'s keyword arguments (none for the generic profile)."""
        if self == GENERIC:
            return {}
        return {
            "engine": self.engine,
            "engine_version": self.engine_version,
            "max_model_len": self.max_model_len,
            "block_size_tokens": self.block_size_tokens,
            "available_kv_cache_gib": self.available_kv_cache_gib,
            "prefix_caching": self.prefix_caching,
        }

    def errors(self, limit: int) -> dict[str, list[str]]:
        """Field errors (empty when valid); ``limit`` is the model's maximum context (0: none)."""
        errors: dict[str, list[str]] = {}
        if self.engine not in (names := profile_names()):
            errors["engine"] = [f"Unknown engine {self.engine!r}; use one of {', '.join(names)}."]
        if self.engine_version is not None and (
            not isinstance(self.engine_version, str) or not self.engine_version.strip() or len(self.engine_version) > 20
        ):
            errors["engine_version"] = ["Give a release such as 0.11.0."]
        if self.max_model_len is not None:
            if not is_int(self.max_model_len) or not 1 <= self.max_model_len <= MAX_CONTEXT_TOKENS:
                errors["max_model_len"] = [f"Must be a whole number of tokens from 1 to {MAX_CONTEXT_TOKENS:,}."]
            elif limit and self.max_model_len > limit:
                errors["max_model_len"] = [f"The model's maximum context is {limit} tokens."]
        if self.block_size_tokens is not None and (
            not is_int(self.block_size_tokens) or not 1 <= self.block_size_tokens <= 1 << 16
        ):
            errors["block_size_tokens"] = ["Must be a whole number of tokens from 1 to 65536."]
        gib = self.available_kv_cache_gib
        if gib is not None and (not is_number(gib) or not 0 <= gib <= MAX_GIB):
            errors["available_kv_cache_gib"] = [f"Must be a finite number of GiB from 0 to {MAX_GIB:,g}."]
        if self.prefix_caching is not None and not isinstance(self.prefix_caching, bool):
            errors["prefix_caching"] = ["Must be true, false or left out (the engine's default)."]
        return errors


GENERIC = EngineOptions()
#: ``GENERIC`` under a name that does not clash with ``serving_engines.GENERIC`` (the profile's name).
GENERIC_OPTIONS = GENERIC


def check_inputs(
    c: ModelConstants,
    accelerator: Accelerator,
    gpus: int | None,
    layout: Layout | None,
    weight_format: str | None,
    include_scale_overhead: bool,
    kv_cache_dtype: str,
    gpu_memory_utilization: float,
    runtime_reserve_gib: float | None,
    pool: str,
    state_pool_ratio: float,
    batch_tokens: int | None,
    state_slots_per_sequence: int,
    contexts: Iterable[int | None],
    engine: EngineOptions = GENERIC,
) -> tuple[Layout, int, bool, bool]:
    """Validate; return ``(layout, gpus, gpus_defaulted, context_defaulted)`` after defaults.

    Defaults: only ``gpus`` -> ``Layout(tp=gpus)``; only ``layout`` -> ``gpus = tp x pp x dp``;
    neither -> one GPU. A ``None`` context means "the model's maximum".
    """
    errors: dict[str, list[str]] = dict(c.errors)
    u = gpu_memory_utilization
    if not is_number(u) or not 0 < u <= 1:
        errors["gpu_memory_utilization"] = ["Must be a fraction above 0 and at most 1."]
    if pool not in POOLS:
        errors["pool"] = [f"Unknown pool {pool!r}; use one of {', '.join(POOLS)}."]
    if not is_number(state_pool_ratio) or not MIN_RATIO <= state_pool_ratio <= MAX_RATIO:
        errors["state_pool_ratio"] = [f"Must be a number from {MIN_RATIO:g} to {MAX_RATIO:g} (state pool : KV pool)."]
    if not isinstance(include_scale_overhead, bool):
        errors["include_scale_overhead"] = ["Must be true or false."]
    message = int_error(state_slots_per_sequence, 1, MAX_STATE_SLOTS)
    if message:
        errors["state_slots_per_sequence"] = [message]
    if kv_cache_dtype not in DTYPE_BYTES:
        errors["kv_cache_dtype"] = [f"Unknown KV cache dtype {kv_cache_dtype!r}; use one of {', '.join(DTYPE_BYTES)}."]
    if weight_format is not None and weight_format not in RAW_BITS:
        errors["weight_format"] = [f"Unknown weight format {weight_format!r}; use one of {', '.join(WEIGHT_FORMATS)}."]
    if runtime_reserve_gib is not None or batch_tokens is not None:
        errors.update(runtime_errors(runtime_reserve_gib, batch_tokens))
    hbm_error = float_error(accelerator.hbm_gb, MAX_HBM_GB, MIN_HBM_GB, what="of GB")
    if hbm_error:
        errors["hbm_gb"] = [hbm_error]
    reported = accelerator.hbm_bytes_reported
    if reported is not None and int_error(reported, 1, round(MAX_HBM_GB * GB)):
        errors["hbm_bytes_reported"] = [int_error(reported, 1, round(MAX_HBM_GB * GB))]
    if engine is not GENERIC:
        errors.update(engine.errors(c.model.max_context_tokens))

    gpus_default = False
    if gpus is not None and (not is_int(gpus) or not 1 <= gpus <= MAX_GPUS):
        errors["gpus"] = [f"Must be a whole number from 1 to {MAX_GPUS:,}."]
        layout = layout or _ONE
    elif layout is None:
        gpus_default = gpus is not None
        layout = Layout(tp=gpus) if gpus is not None else _ONE
    errors.update(c.layout_errors(layout))
    if "gpus" not in errors and not any(k in errors for k in ("tp", "pp", "dp", "ep")):
        per_replica = layout.tp * layout.pp * layout.dp
        if gpus is None:
            gpus = per_replica
        elif gpus % per_replica:
            errors["gpus"] = [f"{gpus} GPUs is not a whole number of replicas of {per_replica} GPUs (tp x pp x dp)."]
    context_default = False
    limit = c.model.max_context_tokens
    for context in contexts:
        if context is None:
            context_default = True
        elif not is_int(context) or not 1 <= context <= MAX_CONTEXT_TOKENS:
            errors["context_tokens"] = [f"Must be a whole number of tokens from 1 to {MAX_CONTEXT_TOKENS:,}."]
        elif limit and context > limit:
            errors["context_tokens"] = [f"The model's maximum context is {limit} tokens."]
        elif engine.max_model_len and is_int(engine.max_model_len) and context > engine.max_model_len:
            errors["context_tokens"] = [
                f"Longer than max_model_len ({engine.max_model_len:,} tokens): the engine refuses requests that long."
            ]
    if errors:
        raise EngineInputError(errors)
    return layout, gpus, gpus_default, context_default


class _Plan:
    """Everything ``size()`` knows before the context length is applied."""

    __slots__ = (
        "accelerator",
        "alloc",
        "batch_tokens",
        "c",
        "cache",
        "cache_notes",
        "context_default",
        "engine",
        "engine_budget",
        "expert_b",
        "expert_fmt",
        "geometry",
        "gpus",
        "gpus_default",
        "hbm",
        "include_scale_overhead",
        "kv_cache_dtype",
        "layout",
        "max_model_len",
        "model",
        "need_state",
        "other_b",
        "other_fmt",
        "pool",
        "ranks",
        "ratio",
        "replicas",
        "rt",
        "runtime",
        "runtime_reserve_gib",
        "slots",
        "state",
        "state_gpu",
        "usable",
        "utilization",
        "w_gpu",
        "weight_notes",
    )


def _runtime_parts(c: ModelConstants, tp: int, tokens: int) -> tuple[int, int, int, int, tuple[str, ...]]:
    key = ("runtime", tp, tokens)
    return c.text(
        key,
        lambda: (
            gib_to_bytes(FRAMEWORK_GIB),
            gib_to_bytes(CUDA_GRAPH_GIB),
            nccl_bytes(tp),
            activation_bytes(c.model, tp, tokens),
            runtime_assumptions(c.model, tp, tokens, FRAMEWORK_GIB, CUDA_GRAPH_GIB),
        ),
    )


def _prepare(
    model: ModelArch,
    accelerator: Accelerator,
    gpus: int | None,
    layout: Layout | None,
    weight_format: str | None,
    include_scale_overhead: bool,
    kv_cache_dtype: str,
    gpu_memory_utilization: float,
    runtime_reserve_gib: float | None,
    pool: str,
    state_pool_ratio: float,
    batch_tokens: int | None,
    state_slots_per_sequence: int,
    contexts: Iterable[int | None],
    engine: EngineOptions = GENERIC,
) -> _Plan:
    if engine is not GENERIC:
        contexts = list(contexts)  # read twice: checked, then the engine's default max_model_len
    c = model_constants(model)
    layout, gpus, gpus_default, context_default = check_inputs(
        c,
        accelerator,
        gpus,
        layout,
        weight_format,
        include_scale_overhead,
        kv_cache_dtype,
        gpu_memory_utilization,
        runtime_reserve_gib,
        pool,
        state_pool_ratio,
        batch_tokens,
        state_slots_per_sequence,
        contexts,
        engine,
    )
    u = gpu_memory_utilization

    p = _Plan()
    p.c, p.model, p.accelerator, p.layout = c, model, accelerator, layout
    p.gpus, p.gpus_default, p.context_default = gpus, gpus_default, context_default
    p.replicas = gpus // (layout.tp * layout.pp * layout.dp)
    p.ranks = p.replicas * layout.dp
    p.include_scale_overhead, p.kv_cache_dtype = include_scale_overhead, kv_cache_dtype
    p.utilization, p.pool, p.ratio, p.slots = u, pool, state_pool_ratio, state_slots_per_sequence
    p.runtime_reserve_gib = runtime_reserve_gib
    p.expert_b, p.other_b, p.other_fmt, p.expert_fmt, p.weight_notes = c.weights(weight_format, include_scale_overhead)
    tp, pp = layout.tp, layout.pp
    expert_gpu, other_gpu = per_gpu_shares(p.expert_b, p.other_b, layout, model.n_routed_experts)
    p.w_gpu = expert_gpu + other_gpu
    p.geometry, p.state, p.state_gpu, p.cache_notes = c.geometry(kv_cache_dtype, tp, pp)
    p.need_state = p.state_gpu * state_slots_per_sequence  # per sequence, with its state slots
    p.hbm = accelerator.hbm_bytes
    p.batch_tokens = batch_tokens if batch_tokens is not None else default_batch_tokens(accelerator)
    if runtime_reserve_gib is None:
        p.rt = _runtime_parts(c, tp, p.batch_tokens)
        p.runtime = p.rt[0] + p.rt[1] + p.rt[2] + p.rt[3]
    else:
        p.runtime = gib_to_bytes(runtime_reserve_gib)
        p.rt = (p.runtime, 0, 0, 0, (f"Runtime reserve overridden: {runtime_reserve_gib:g} GiB per GPU.",))
    p.usable = usable_bytes(accelerator.driver_hbm_bytes, u)
    p.cache = p.usable - p.w_gpu - p.runtime
    if engine.engine == "sglang" and runtime_reserve_gib is None:
        # SGLang's mem_fraction_static covers weights and its pools; activations and CUDA graphs live
        # in the (1 - fraction) left over (model_runner profile_max_num_token), so no reserve is deducted.
        p.cache = p.usable - p.w_gpu
    if engine.available_kv_cache_gib is not None:
        p.cache = gib_to_bytes(engine.available_kv_cache_gib)
    p.engine = engine
    p.engine_budget = engine.available_kv_cache_gib
    p.alloc = None
    p.max_model_len = model.max_context_tokens
    if engine is not GENERIC:
        asked = [x for x in contexts if x is not None]
        p.max_model_len = engine.max_model_len or model.max_context_tokens or max(asked, default=DEFAULT_CONTEXT_TOKENS)
    if engine.engine != "generic":
        # memoised per model: a page or a poll cycle sizes many deployments of one model alike
        key = (
            ("allocation", engine, layout, max(0, p.cache), p.max_model_len, kv_cache_dtype, p.batch_tokens),
            state_pool_ratio,
            accelerator.name,
        )
        p.alloc = c.text(
            key,
            lambda: allocate(
                engine.engine,
                model,
                layout,
                available_bytes=max(0, p.cache),
                max_model_len=p.max_model_len,
                kv_cache_dtype=kv_cache_dtype,
                block_size_tokens=engine.block_size_tokens,
                version=engine.engine_version,
                batch_tokens=p.batch_tokens,
                prefix_caching=engine.prefix_caching,
                state_pool_ratio=state_pool_ratio,
                device_name=accelerator.name,
            ),
        )
        p.alloc = limit_running(p.alloc, accelerator)
    return p


def _capacities(p: _Plan, context: int, kv_gpu: int) -> tuple[int, int, int, int, int]:
    """``(chosen, unified, split, stranded, deficit)`` per rank: the generic pools' figures
    (``pool_capacities``), with an engine profile's own count as the chosen one (and as that
    engine's pool: vLLM's unified, SGLang's split)."""
    chosen, unified, split, stranded, deficit = pool_capacities(p.cache, p.need_state, kv_gpu, p.pool, p.ratio)
    alloc: EngineAllocation | None = p.alloc
    if alloc is None:
        return chosen, unified, split, stranded, deficit
    chosen = alloc.sequences(context)
    if alloc.engine == "vllm":
        unified = chosen
    else:
        split = chosen
    deficit = 0 if chosen >= 1 else max(deficit, 1)
    return chosen, unified, split, stranded, deficit


def _assumptions(p: _Plan, context: int) -> tuple[str, ...]:
    c = p.c
    budget = c.text(
        (
            "budget",
            p.hbm,
            p.accelerator.hbm_bytes_reported,
            p.utilization,
            p.pool,
            p.ratio,
            p.slots,
            p.engine_budget,
            p.engine.engine == "sglang",  # SGLang's pools replace the pool sentence
        ),
        lambda: _budget_notes(p),
    )
    notes = (*p.weight_notes, *p.cache_notes, *p.rt[4], *budget)
    if p.alloc is not None:
        notes += p.alloc.assumptions
    if p.ranks > 1:
        notes += (
            f"{p.replicas} replica(s) x {p.layout.dp} data-parallel attention rank(s); each rank holds only "
            f"its own sequences, so capacity = per-rank capacity x {p.ranks}.",
        )
    if p.gpus_default:
        notes += (f"Defaults: one replica, tp = gpus = {p.gpus}.",)
    if p.context_default:
        source = "the model's maximum context" if p.model.max_context_tokens else "the engine's default"
        notes += (f"Context length {context} tokens ({source}).",)
    return notes


def _budget_notes(p: _Plan) -> tuple[str, ...]:
    reported = p.accelerator.hbm_bytes_reported
    memory = (
        f"{reported / GIB:.2f} GiB as the driver reports it"
        if reported
        else f"{p.hbm / GB:g} GB nominal (no reported figure)"
    )
    usable = f"Usable memory per GPU = {memory} x {p.utilization:g} (gpu_memory_utilization); " + (
        f"cache budget given: {p.engine.available_kv_cache_gib:g} GiB per GPU (as the engine logs it)."
        if p.engine.available_kv_cache_gib is not None
        else "cache budget = usable - weights - runtime reserve."
    )
    slots = f" x {p.slots} state slots per sequence" if p.slots > 1 else ""
    if p.engine.engine == "sglang":
        pool = "Pools: SGLang's own token and state pools (profiles/sglang.py), below."
    elif not p.c.has_linear:
        pool = "Single KV pool (no linear-attention state), so unified and split capacities agree."
    elif p.pool == "split":
        pool = (
            f"Split pool (SGLang): state pool = budget x {p.ratio:g} / (1 + {p.ratio:g}) "
            f"(mamba_full_memory_ratio), KV pool = the rest{slots}; idle bytes of the non-bottleneck "
            "pool are reported as stranded."
        )
    else:
        pool = f"Unified pool: state and KV share one budget{slots} (vLLM hybrid allocator)."
    return usable, pool


def _evaluate(p: _Plan, context: int) -> SizingResult:
    geometry = p.geometry
    kv_gpu = geometry.bytes_per_sequence_per_gpu(context)
    chosen, unified, split, stranded, deficit = _capacities(p, context, kv_gpu)
    weights = p.expert_b + p.other_b
    layout = p.layout
    return SizingResult(
        model=p.model.name,
        accelerator=p.accelerator.name,
        layout=layout,
        gpus=p.gpus,
        replicas=p.replicas,
        weight_format=p.other_fmt,
        expert_weight_format=p.expert_fmt,
        include_scale_overhead=p.include_scale_overhead,
        kv_cache_dtype=p.kv_cache_dtype,
        context_tokens=context,
        gpu_memory_utilization=p.utilization,
        runtime_reserve_gib=p.runtime_reserve_gib,
        pool=p.pool,
        state_pool_ratio=p.ratio,
        state_slots_per_sequence=p.slots,
        batch_tokens=p.batch_tokens,
        weights_bytes=weights,
        weights_expert_bytes=p.expert_b,
        weights_other_bytes=p.other_b,
        weights_bytes_per_gpu=p.w_gpu,
        min_gpus_for_weights=ceil_div(weights, p.hbm) if weights else 0,
        kv_bytes_per_token=geometry.bytes_per_token,
        kv_bytes_per_token_per_gpu=geometry.bytes_per_token_per_gpu,
        kv_bytes_per_sequence=geometry.bytes_per_sequence(context),
        kv_bytes_per_sequence_per_gpu=kv_gpu,
        state_bytes_per_sequence=p.alloc.state_bytes_per_sequence if p.alloc else p.state,
        state_bytes_per_sequence_per_gpu=p.alloc.state_bytes_per_sequence_per_gpu if p.alloc else p.state_gpu,
        hbm_bytes=p.hbm,
        usable_bytes=p.usable,
        runtime_bytes=p.runtime,
        runtime_framework_bytes=p.rt[0],
        runtime_cuda_graph_bytes=p.rt[1],
        runtime_nccl_bytes=p.rt[2],
        runtime_activation_bytes=p.rt[3],
        cache_bytes=p.cache,
        max_concurrent_sequences=chosen * p.ranks,
        max_concurrent_sequences_unified=unified * p.ranks,
        max_concurrent_sequences_split=split * p.ranks,
        max_concurrent_sequences_per_replica=chosen * layout.dp,
        stranded_bytes=stranded,
        fits=chosen >= 1,
        deficit_bytes=deficit,
        aggregate_hbm_bytes=p.hbm * p.gpus,
        assumptions=_assumptions(p, context),
        hbm_bytes_reported=p.accelerator.hbm_bytes_reported,
        engine=p.engine.engine,
        engine_version=p.alloc.engine_version if p.alloc else None,
        max_model_len=p.max_model_len,
        available_kv_cache_bytes=max(0, p.cache),
        allocation=p.alloc,
    )


def size(
    model: ModelArch,
    accelerator: Accelerator,
    *,
    gpus: int | None = None,
    layout: Layout | None = None,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    context_tokens: int | None = None,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    runtime_reserve_gib: float | None = None,
    pool: str = "unified",
    state_pool_ratio: float = DEFAULT_STATE_POOL_RATIO,
    batch_tokens: int | None = None,
    state_slots_per_sequence: int = 1,
    engine: str = "generic",
    engine_version: str | None = None,
    max_model_len: int | None = None,
    block_size_tokens: int | None = None,
    available_kv_cache_gib: float | None = None,
    prefix_caching: bool | None = None,
) -> SizingResult:
    """Size ``model`` on ``gpus`` GPUs of ``accelerator`` laid out as ``layout``.

    ``engine`` names the serving engine whose allocator is reproduced (``EngineOptions``): with
    ``vllm`` or ``sglang`` the result carries that engine's block size, blocks, logged token count
    and float concurrency, and ``max_concurrent_sequences`` is the engine's own count.

    Raises ``EngineInputError`` whose ``errors`` keys are the API field names (``tp``, ``pp``,
    ``dp``, ``ep``, ``gpus``, ``context_tokens``, ``gpu_memory_utilization``, ``weight_format``,
    ``kv_cache_dtype``, ``pool``, ``state_pool_ratio``, ``runtime_reserve_gib``, ...).

    Memoised per model (``ModelArch`` is frozen; the memo is ``ModelConstants.result``, bounded) on
    every other input with its type, so a page sizing the same deployments every few seconds pays
    for each once; the result is shared: callers must not mutate it. Errors are not memoised.
    """
    inputs = (
        accelerator, gpus, layout, weight_format, include_scale_overhead, kv_cache_dtype, context_tokens,
        gpu_memory_utilization, runtime_reserve_gib, pool, state_pool_ratio, batch_tokens,
        state_slots_per_sequence, engine, engine_version, max_model_len, block_size_tokens,
        available_kv_cache_gib, prefix_caching,
    )  # fmt: skip
    key = (tuple(map(type, inputs)), inputs)  # 1, 1.0 and True are equal keys: their types tell them apart
    return model_constants(model).result("size", key, lambda: _size(model, *inputs))


def _size(
    model: ModelArch,
    accelerator: Accelerator,
    gpus: int | None,
    layout: Layout | None,
    weight_format: str | None,
    include_scale_overhead: bool,
    kv_cache_dtype: str,
    context_tokens: int | None,
    gpu_memory_utilization: float,
    runtime_reserve_gib: float | None,
    pool: str,
    state_pool_ratio: float,
    batch_tokens: int | None,
    state_slots_per_sequence: int,
    engine: str,
    engine_version: str | None,
    max_model_len: int | None,
    block_size_tokens: int | None,
    available_kv_cache_gib: float | None,
    prefix_caching: bool | None,
) -> SizingResult:
    p = _prepare(
        model,
        accelerator,
        gpus,
        layout,
        weight_format,
        include_scale_overhead,
        kv_cache_dtype,
        gpu_memory_utilization,
        runtime_reserve_gib,
        pool,
        state_pool_ratio,
        batch_tokens,
        state_slots_per_sequence,
        (context_tokens,),
        _engine_options(
            engine, engine_version, max_model_len, block_size_tokens, available_kv_cache_gib, prefix_caching
        ),
    )
    if context_tokens is None:
        context_tokens = model.max_context_tokens or DEFAULT_CONTEXT_TOKENS
    return _evaluate(p, context_tokens)


def _engine_options(
    engine: str,
    engine_version: str | None,
    max_model_len: int | None,
    block_size_tokens: int | None,
    available_kv_cache_gib: float | None,
    prefix_caching: bool | None,
) -> EngineOptions:
    if (engine, engine_version, max_model_len, block_size_tokens, available_kv_cache_gib, prefix_caching) == (
        "generic",
        None,
        None,
        None,
        None,
        None,
    ):
        return GENERIC
    return EngineOptions(
        engine, engine_version, max_model_len, block_size_tokens, available_kv_cache_gib, prefix_caching
    )


def capacity_curve(
    model: ModelArch, accelerator: Accelerator, contexts: Iterable[int], **kwargs: Any
) -> list[CapacityPoint]:
    """Concurrent sequences (whole cluster) at each context length in ``contexts``.

    Takes the same keyword arguments as ``size()`` (except ``context_tokens``); the dashboard
    charts the result. Validation errors are reported under ``context_tokens``.
    """
    contexts = list(contexts)
    if not contexts:
        raise EngineInputError.single("context_tokens", "Give at least one context length.")
    if "context_tokens" in kwargs:
        raise TypeError("capacity_curve() takes contexts, not context_tokens")
    options = {
        "gpus": None,
        "layout": None,
        "weight_format": None,
        "include_scale_overhead": True,
        "kv_cache_dtype": DEFAULT_KV_CACHE_DTYPE,
        "gpu_memory_utilization": DEFAULT_GPU_MEMORY_UTILIZATION,
        "runtime_reserve_gib": None,
        "pool": "unified",
        "state_pool_ratio": DEFAULT_STATE_POOL_RATIO,
        "batch_tokens": None,
        "state_slots_per_sequence": 1,
    }
    engine_keys = (
        "engine",
        "engine_version",
        "max_model_len",
        "block_size_tokens",
        "available_kv_cache_gib",
        "prefix_caching",
    )
    engine_defaults: dict[str, Any] = dict(zip(engine_keys, ("generic", None, None, None, None, None), strict=True))
    unknown = set(kwargs) - set(options) - set(engine_keys)
    if unknown:
        raise TypeError(f"capacity_curve() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    for key in engine_keys:
        engine_defaults[key] = kwargs.pop(key, engine_defaults[key])
    options.update(kwargs)
    p = _prepare(model, accelerator, contexts=contexts, engine=_engine_options(**engine_defaults), **options)
    points = []
    for context in contexts:
        kv_gpu = p.geometry.bytes_per_sequence_per_gpu(context)
        chosen, unified, split, stranded, _ = _capacities(p, context, kv_gpu)
        points.append(
            CapacityPoint(
                context_tokens=context,
                kv_bytes_per_sequence=p.geometry.bytes_per_sequence(context),
                kv_bytes_per_sequence_per_gpu=kv_gpu,
                max_concurrent_sequences=chosen * p.ranks,
                max_concurrent_sequences_unified=unified * p.ranks,
                max_concurrent_sequences_split=split * p.ranks,
                stranded_bytes=stranded,
            )
        )
    return points
