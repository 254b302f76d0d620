"""Prefix-cache service: a model on a SKU under an engine release -> the engine's ``prefix_cache()``.

Plain inputs (``PrefixCacheRequest``: slugs, numbers and the trace's CSV text), plain output (the
engine's ``PrefixCacheResult``), domain errors with field names (``fleet.errors.InputError`` for
unknown records and unusable trace bytes, ``EngineInputError`` for what the engine cannot model, a
bad CSV row included). Front doors: ``POST /api/v1/prefix-cache/`` (``planner/api/prefix_cache.py``)
and the prefix-cache page (``planner/views/prefix_cache.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet import inputs
from fleet.errors import InputError
from fleet.models import HardwareSku, ModelSpec
from planner.engine import (
    DEFAULT_ENGINE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    DEFAULT_STATE_POOL_RATIO,
    MAX_TRACE_BYTES,
    TRACE_COLUMNS,
    Layout,
    PrefixCacheResult,
    parse_trace_csv,
    prefix_cache,
)
from planner.sizing import resolve

#: An example trace (the page's default): a 1,000-token system prompt shared by coding requests, a
#: 3,000-token document shared by a few questions, and requests sharing nothing.
EXAMPLE_TRACE: str = "\n".join(
    [
        ",".join(TRACE_COLUMNS),
        *(f"sys-{i},{i * 0.5:g},{1400 + 37 * i},coding-system,1000" for i in range(12)),
        *(f"doc-{i},{3 + i:g},{3300 + 11 * i},contract-2026,3000" for i in range(6)),
        *(f"solo-{i},{2 + i * 1.5:g},{800 + 90 * i},,0" for i in range(4)),
    ]
)


@dataclass(frozen=True)
class PrefixCacheRequest:
    """What to analyse. ``None`` is the engine's default (docs/api.md, "Prefix cache"): one replica of
    tp = pp = dp = 1, the engine's newest release and its own mode, 32,768 tokens of context (at most
    the model's), no trace."""

    model: str
    sku: str
    engine: str = DEFAULT_ENGINE
    engine_version: str | None = None
    cache_mode: str | None = None
    retention: str | None = None
    checkpoint_interval_tokens: int = 0
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE
    weight_format: str | None = None
    context_tokens: int | None = None
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    runtime_reserve_gib: float | None = None
    available_kv_cache_gib: float | None = None
    block_size_tokens: int | None = None
    concurrency: int | None = None
    state_pool_ratio: float = DEFAULT_STATE_POOL_RATIO
    mamba_chunk_size_tokens: int | None = None
    granularities: tuple[int, ...] | None = None
    trace_csv: str | None = None

    def layout(self) -> Layout:
        return Layout(tp=self.tp or 1, pp=self.pp or 1, dp=self.dp or 1, ep=self.ep or 1)


@dataclass(frozen=True)
class PrefixCacheAnalysis:
    """An analysed request: the records it resolved and the engine's result."""

    request: PrefixCacheRequest
    model: ModelSpec
    sku: HardwareSku
    result: PrefixCacheResult


def trace_text(data: bytes, field: str = "trace") -> str:
    """An uploaded trace's bytes as text: at most ``MAX_TRACE_BYTES``, UTF-8 (a BOM is dropped), no
    control characters but tab, newline and carriage return (InputError under ``field``)."""
    if len(data) > MAX_TRACE_BYTES:
        raise InputError.single(field, f"The trace is larger than {MAX_TRACE_BYTES:,} bytes.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError.single(field, f"The trace is not UTF-8 text (byte {exc.start:,}).") from None
    check_trace_text(text, field)
    return text


def check_trace_text(text: str, field: str = "trace") -> None:
    """InputError under ``field`` for a control character, naming its line."""
    for number, line in enumerate(text.splitlines(), 1):
        message = inputs.control_character_message(line)
        if message:
            raise InputError.single(field, f"Line {number}: {message}")


def analyse(request: PrefixCacheRequest) -> PrefixCacheAnalysis:
    """Analyse the request (raises InputError / EngineInputError with field names)."""
    model, sku = resolve(request.model, request.sku)
    trace = None
    if request.trace_csv is not None:
        check_trace_text(request.trace_csv)
        trace = parse_trace_csv(request.trace_csv)
    result = prefix_cache(
        model.to_engine(),
        sku.to_engine(),
        request.layout(),
        engine=request.engine,
        engine_version=request.engine_version,
        cache_mode=request.cache_mode,
        retention=request.retention,
        checkpoint_interval_tokens=request.checkpoint_interval_tokens,
        kv_cache_dtype=request.kv_cache_dtype,
        weight_format=request.weight_format,
        context_tokens=request.context_tokens,
        gpu_memory_utilization=request.gpu_memory_utilization,
        runtime_reserve_gib=request.runtime_reserve_gib,
        available_kv_cache_gib=request.available_kv_cache_gib,
        block_size_tokens=request.block_size_tokens,
        concurrency=request.concurrency,
        state_pool_ratio=request.state_pool_ratio,
        mamba_chunk_size_tokens=request.mamba_chunk_size_tokens,
        trace=trace,
        granularities=list(request.granularities) if request.granularities else None,
    )
    return PrefixCacheAnalysis(request=request, model=model, sku=sku, result=result)
