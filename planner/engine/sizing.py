"""``size()``: weights, runtime, state and KV cache per GPU, and the sequences that fit.

The entry point the REST API, the pages, Celery tasks and the ``size`` management command
call. Pure Python over the dataclasses of ``spec.py``; units are bytes (``int``) unless a
name says otherwise. Formulas and sources: docs/sizing.md.

Defaults: one replica. With only ``gpus`` given the layout is ``tp = gpus``; with only a
``layout`` given, ``gpus = tp x pp x dp``; with both, ``gpus`` must be a whole number of
replicas of the layout. ``context_tokens`` defaults to the model's maximum context, or
8192 tokens when the model does not state one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .admission import DEFAULT_STATE_POOL_RATIO, split_capacity, split_required_bytes
from .errors import EngineInputError
from .precompute import ModelConstants, model_constants
from .result import CapacityPoint, SizingResult
from .runtime import (
    CUDA_GRAPH_GIB,
    FRAMEWORK_GIB,
    activation_bytes,
    default_batch_tokens,
    nccl_bytes,
    runtime_assumptions,
)
from .spec import Accelerator, Layout, ModelArch
from .units import GB, gib_to_bytes
from .validation import check_inputs

DEFAULT_CONTEXT_TOKENS: int = 8192
DEFAULT_GPU_MEMORY_UTILIZATION: float = 0.9


class _Plan:
    """Everything ``size()`` knows before the context length is applied."""

    __slots__ = (
        "accelerator", "batch_tokens", "c", "cache", "cache_notes", "context_default", "expert_b",
        "expert_fmt", "geometry", "gpus", "gpus_default", "hbm", "include_scale_overhead",
        "kv_cache_dtype", "layout", "model", "other_b", "other_fmt", "pool", "ranks", "ratio", "replicas",
        "rt", "runtime", "runtime_reserve_gib", "slots", "state", "state_gpu", "usable", "utilization",
        "w_gpu", "weight_notes",
    )  # fmt: skip


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
) -> _Plan:
    c = model_constants(model)
    layout, gpus, gpus_default, context_default = check_inputs(
        c, accelerator, gpus, layout, weight_format, include_scale_overhead, kv_cache_dtype,
        gpu_memory_utilization, runtime_reserve_gib, pool, state_pool_ratio, batch_tokens,
        state_slots_per_sequence, contexts,
    )  # fmt: skip
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
    p.w_gpu = -(-p.expert_b // (tp * layout.dp * pp)) - (-p.other_b // (tp * pp))
    p.geometry, p.state, p.state_gpu, p.cache_notes = c.geometry(kv_cache_dtype, tp, pp)
    p.hbm = accelerator.hbm_bytes
    p.batch_tokens = batch_tokens if batch_tokens is not None else default_batch_tokens(accelerator)
    if runtime_reserve_gib is None:
        p.rt = _runtime_parts(c, tp, p.batch_tokens)
        p.runtime = p.rt[0] + p.rt[1] + p.rt[2] + p.rt[3]
    else:
        p.runtime = gib_to_bytes(runtime_reserve_gib)
        p.rt = (p.runtime, 0, 0, 0, (f"Runtime reserve overridden: {runtime_reserve_gib:g} GiB per GPU.",))
    p.usable = int(p.hbm * u)
    p.cache = p.usable - p.w_gpu - p.runtime
    return p


def _assumptions(p: _Plan, context: int) -> tuple[str, ...]:
    c = p.c
    budget = c.text(
        ("budget", p.hbm, p.utilization, p.pool, p.ratio, p.slots),
        lambda: _budget_notes(p),
    )
    notes = (*p.weight_notes, *p.cache_notes, *p.rt[4], *budget)
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
    usable = (
        f"Usable memory per GPU = {p.hbm / GB:g} GB nominal x {p.utilization:g} (gpu_memory_utilization); "
        "cache budget = usable - weights - runtime reserve."
    )
    slots = f" x {p.slots} state slots per sequence" if p.slots > 1 else ""
    if not p.c.has_linear:
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


def _capacities(p: _Plan, kv_gpu: int) -> tuple[int, int, int, int, int]:
    """``(chosen, unified, split, stranded, deficit)``: chosen/unified/split per rank."""
    cache = p.cache
    need_state = p.state_gpu * p.slots
    per_seq = need_state + kv_gpu
    unified = cache // max(1, per_seq) if cache > 0 else 0
    split, stranded = split_capacity(cache, need_state, kv_gpu, p.ratio)
    if p.pool == "split":
        chosen = split
        required = split_required_bytes(need_state, kv_gpu, p.ratio)
    else:
        chosen, required = unified, per_seq
    deficit = 0 if chosen >= 1 else max(1, required - cache)
    return chosen, unified, split, stranded, deficit


def _evaluate(p: _Plan, context: int) -> SizingResult:
    geometry = p.geometry
    kv_gpu = geometry.bytes_per_sequence_per_gpu(context)
    chosen, unified, split, stranded, deficit = _capacities(p, kv_gpu)
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
        min_gpus_for_weights=-(-weights // p.hbm) if weights else 0,
        kv_bytes_per_token=geometry.bytes_per_token,
        kv_bytes_per_token_per_gpu=geometry.bytes_per_token_per_gpu,
        kv_bytes_per_sequence=geometry.bytes_per_sequence(context),
        kv_bytes_per_sequence_per_gpu=kv_gpu,
        state_bytes_per_sequence=p.state,
        state_bytes_per_sequence_per_gpu=p.state_gpu,
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
    )


def size(
    model: ModelArch,
    accelerator: Accelerator,
    *,
    gpus: int | None = None,
    layout: Layout | None = None,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
    kv_cache_dtype: str = "bf16",
    context_tokens: int | None = None,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    runtime_reserve_gib: float | None = None,
    pool: str = "unified",
    state_pool_ratio: float = DEFAULT_STATE_POOL_RATIO,
    batch_tokens: int | None = None,
    state_slots_per_sequence: int = 1,
) -> SizingResult:
    """Size ``model`` on ``gpus`` GPUs of ``accelerator`` laid out as ``layout``.

    Raises ``EngineInputError`` whose ``errors`` keys are the API field names (``tp``, ``pp``,
    ``dp``, ``ep``, ``gpus``, ``context_tokens``, ``gpu_memory_utilization``, ``weight_format``,
    ``kv_cache_dtype``, ``pool``, ``state_pool_ratio``, ``runtime_reserve_gib``, ...).
    """
    p = _prepare(
        model, accelerator, gpus, layout, weight_format, include_scale_overhead, kv_cache_dtype,
        gpu_memory_utilization, runtime_reserve_gib, pool, state_pool_ratio, batch_tokens,
        state_slots_per_sequence, (context_tokens,),
    )  # fmt: skip
    if context_tokens is None:
        context_tokens = model.max_context_tokens or DEFAULT_CONTEXT_TOKENS
    return _evaluate(p, context_tokens)


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
        "gpus": None, "layout": None, "weight_format": None, "include_scale_overhead": True,
        "kv_cache_dtype": "bf16", "gpu_memory_utilization": DEFAULT_GPU_MEMORY_UTILIZATION,
        "runtime_reserve_gib": None, "pool": "unified", "state_pool_ratio": DEFAULT_STATE_POOL_RATIO,
        "batch_tokens": None, "state_slots_per_sequence": 1,
    }  # fmt: skip
    unknown = set(kwargs) - set(options)
    if unknown:
        raise TypeError(f"capacity_curve() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    options.update(kwargs)
    p = _prepare(model, accelerator, contexts=contexts, **options)
    points = []
    for context in contexts:
        kv_gpu = p.geometry.bytes_per_sequence_per_gpu(context)
        chosen, unified, split, stranded, _ = _capacities(p, kv_gpu)
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
