"""Prefix-cache granularity of hybrid models: where a hit can land, what the state checkpoints cost.

Pure Python, no Django. Units: bytes (``int``, per GPU unless a name says otherwise), tokens, seconds;
GiB is binary (2^30 B). docs/sizing.md, "Prefix caching", has the formulas; this docstring says where
each rule was read (``pip download vllm==X`` / ``sglang==X --no-deps``, paths inside the wheel). The
code is ours: the engines' rules restated as arithmetic.

A linear-attention layer (KDA, gated DeltaNet, Mamba2) keeps one recurrent state per sequence that
every token overwrites, so a prefix can only be reused where the engine kept a copy (a *checkpoint*)
of the state at that token; attention KV, append-only, is reusable at every block. Hence:

* **Attention block** (``attention_block_size_tokens``): the profiles' own allocation
  (``profiles/vllm.py``, ``profiles/sglang.py``): vLLM raises the attention block until one block's KV
  is as large as one state page and pads the state page to it (``state_page_bytes``,
  ``padding_fraction``). vLLM 0.15.0-0.32's ``mamba_cache_mode="all"`` (Mamba2 models) rounds the block
  to the model's SSD chunk instead: ``lcm(chunk, align) x cdiv(cdiv(state_page, page_per_token),
  lcm(chunk, align))`` (vllm 0.15.0 ``model_executor/models/config.py``
  ``HybridAttentionMambaModelConfig``; 0.24.0 ``platforms/interface.py`` ``_align_hybrid_block_size``).
* **Hit granularity** (``prefix_granularity_tokens``): vLLM hits land on the attention block
  (``mamba_block_size = block_size`` in "align" mode, same files; ``MambaManager.find_longest_cache_hit``
  in ``v1/core/single_type_kv_cache_manager.py``, 0.33.0); SGLang's ``extra_buffer`` strategy on
  ``mamba_cache_chunk_size = max(chunk, page_size)``, the FLA chunk 64 unless the config states
  ``mamba_chunk_size`` (sglang 0.5.23 ``srt/arg_groups/overrides.py``); ``no_buffer`` keeps a state only
  where a request ended (page size 1, ``srt/mem_cache/unified_cache/components/mamba.py``
  ``prepare_for_caching_req``).
* **Which boundaries keep a state** (retention), per release:

  - vLLM 0.15.0 to 0.28 (read: 0.15.0, 0.24.0; ``config/cache.py`` ``MambaCacheMode``): ``none``,
    ``align`` (the state at the last block boundary of each scheduler step: ``step``), ``all`` (every
    block: ``dense``; a request holds ``cdiv(max_model_len, block)`` state blocks,
    ``v1/kv_cache_interface.py`` ``MambaSpec.max_memory_usage_bytes``). Prefix caching on selects
    ``all`` for models that support it (Mamba2), else ``align`` (``model_executor/models/config.py``
    ``MambaModelConfig``).
  - vLLM 0.29.0 (read) adds ``prefix_cache_retention_interval`` (``config/cache.py``): ``0`` (default)
    keeps only *semantic* checkpoints, the replay boundary (prompt length - 1, floored to the block)
    and shared-prefix junctions; ``k > 0`` also one every ``k`` tokens (``interval``); ``None`` every
    block (``dense``) (``MambaManager.reachable_block_mask``). A junction is pinned when a request's
    attention hit runs deeper than its state hit (``KVCacheManager.get_computed_blocks``,
    ``shared_prefix_boundary``): that request keeps the state there, the next one hits it.
  - vLLM 0.33.0 (read): ``MambaCacheMode = Literal["align", "none"]``: ``all`` is gone.
  - "align" holds 2 state blocks per running request (the state is copied block to block:
    ``MambaSpec.max_memory_usage_bytes``, ``MambaManager.remove_skipped_blocks``).
  - SGLang (``profiles/sglang.py``: radix cache from 0.5.4, ``extra_buffer`` the default strategy
    from 0.5.14): ``no_buffer`` keeps the state where each request ended, 3 slots per running request;
    ``extra_buffer`` tracks the state at chunk boundaries with ping-pong slots (5 per running request
    with the overlap scheduler) and keeps a *branching point* where a full-KV hit runs past the state
    hit (``finalize_match_result_in_tree_core``, ``mamba_branching_seqlen``, read in 0.5.23), the
    same semantic rule as vLLM's junction.

* **Copy-on-write**: a hit's state is shared; before the continuation mutates it the engine copies
  it to the request's own slot (vLLM ``v1/worker/mamba_utils.py`` copies conv and temporal state per
  layer; SGLang ``cow_mamba`` ``copy_from``). Bytes per hit per GPU = the unpadded state of the GPU's
  linear layers; the copy reads and writes them, so the time is ``2 x bytes / HBM bandwidth``.

Not modelled: vLLM ``--prefix-match-unit`` (0.29+, hits inside a physical block), the FlashInfer GDN
prefill checkpoint block (``num_prefill_checkpoint_blocks``, 0.29+) and its block alignment, speculative
decoding blocks, eviction (the trace keeps every checkpoint it makes), SGLang ``mamba_track_interval``
(decode tracking: the trace has no outputs), ``extra_buffer_lazy``, int8 checkpoints, HiCache.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import EngineInputError, is_int, is_number
from .formats import DEFAULT_KV_CACHE_DTYPE
from .limits import (
    MAX_ARRIVAL_S,
    MAX_BATCH,
    MAX_CONTEXT_TOKENS,
    MAX_GIB,
    MAX_GRANULARITIES,
    MAX_RATIO,
    MAX_TRACE_BYTES,
    MAX_TRACE_ID_CHARS,
    MAX_TRACE_ROWS,
    MIN_RATIO,
    float_error,
    int_error,
)
from .profiles import EngineAllocation, sglang_allocation, sglang_release, vllm_release
from .profiles.common import choose_release
from .profiles.vllm import DEFAULT_BLOCK_SIZE, MLA_BLOCK_SIZE
from .serving_engines import prefix_cache_engines
from .sizing import size
from .sizing.admission import DEFAULT_STATE_POOL_RATIO
from .sizing.capacity import DEFAULT_GPU_MEMORY_UTILIZATION
from .sizing.result import SizingResult
from .spec import Accelerator, Layout, ModelArch
from .throughput import DEFAULT_OPTIONS, prefill
from .throughput.decode import DecodeModel
from .throughput.prefill import PrefillModel
from .units import TB, bytes_exact, bytes_text, ceil_div

#: Every caching mode the app knows, by engine; a release offers a subset (``PrefixRules.modes``).
CACHE_MODES: dict[str, tuple[str, ...]] = {
    "vllm": ("none", "align", "all"),
    "sglang": ("none", "no_buffer", "extra_buffer"),
}
#: vLLM's ``prefix_cache_retention_interval`` as a choice: ``semantic`` (0), ``interval`` (k), ``dense`` (None).
RETENTIONS: tuple[str, ...] = ("semantic", "interval", "dense")
#: Block sizes (tokens) compared when none are given; the engine's own is always added.
DEFAULT_GRANULARITIES: tuple[int, ...] = (16, 64, 128, 256, 512, 1024, 2048, 4096)
#: Mamba2 SSD chunk (tokens) vLLM's "all" mode rounds the block to when the model states none
#: (``ModelConfig.get_mamba_chunk_size`` reads the config's ``chunk_size``; Mamba2 configs use 256).
VLLM_DEFAULT_MAMBA_CHUNK: int = 256
#: SGLang's ``mamba_cache_chunk_size`` base: the FLA kernels' chunk (``chunk_delta_h.CHUNK_SIZE``).
SGLANG_FLA_CHUNK: int = 64
TRACE_COLUMNS: tuple[str, ...] = (
    "request_id",
    "arrival_s",
    "prompt_tokens",
    "shared_prefix_id",
    "shared_prefix_tokens",
)
#: Distinct (prompt, cached) prefill estimates one analysis may compute before it stops (each ~0.05 ms).
MAX_PREFILL_EVALUATIONS: int = 200_000


@dataclass(frozen=True, slots=True)
class PrefixRules:
    """What the releases from ``since`` (to the next row) offer for prefix caching of hybrid models.

    ``modes``: caching modes; ``retention_knob``: ``prefix_cache_retention_interval`` exists (vLLM);
    ``junctions``: a state is kept where a later request's attention hit ran deeper (semantic retention).
    """

    since: str
    modes: tuple[str, ...]
    retention_knob: bool
    junctions: bool
    source: str


VLLM_PREFIX_RELEASES: tuple[PrefixRules, ...] = (
    PrefixRules(
        "0.15.0",
        ("none", "align", "all"),
        False,
        False,
        "vllm 0.15.0 config/cache.py MambaCacheMode all/align/none, v1/kv_cache_interface.py "
        "MambaSpec.max_memory_usage_bytes; the same in 0.24.0 (platforms/interface.py _align_hybrid_block_size); "
        "0.25-0.28 not read",
    ),
    PrefixRules(
        "0.29.0",
        ("none", "align", "all"),
        True,
        True,
        "vllm 0.29.0 config/cache.py prefix_cache_retention_interval (0 semantic, k interval, None dense); "
        "0.30-0.32 not read",
    ),
    PrefixRules(
        "0.33.0",
        ("none", "align"),
        True,
        True,
        "vllm 0.33.0 config/cache.py MambaCacheMode align/none; v1/core/single_type_kv_cache_manager.py "
        "MambaManager.reachable_block_mask",
    ),
)
SGLANG_PREFIX_RELEASES: tuple[PrefixRules, ...] = (
    PrefixRules(
        "0.5.2",
        ("none",),
        False,
        False,
        "sglang 0.5.2: hybrid models served with the radix cache off (profiles/sglang.py)",
    ),
    PrefixRules(
        "0.5.4",
        ("none", "no_buffer"),
        False,
        False,
        "sglang 0.5.4+: radix cache on for hybrids, a state kept where a request ended "
        "(no_buffer rules read in 0.5.23)",
    ),
    PrefixRules(
        "0.5.14",
        ("none", "no_buffer", "extra_buffer"),
        False,
        True,
        "sglang 0.5.14 server_args.py: extra_buffer the default strategy; branching points read in 0.5.23 "
        "srt/mem_cache/unified_cache/components/mamba.py",
    ),
)


def prefix_rules(engine: str, version: str | None) -> tuple[str, PrefixRules]:
    """``(version, rules)`` of ``engine`` (``vllm``/``sglang``) at ``version`` (default: the newest read)."""
    if engine == "vllm":
        version, _ = vllm_release(version)
        return choose_release(VLLM_PREFIX_RELEASES, version, "0.33.0", "vLLM", "0.33.0")
    if engine == "sglang":
        version, _ = sglang_release(version)
        return choose_release(SGLANG_PREFIX_RELEASES, version, "0.5.23", "SGLang", "0.5.23")
    raise EngineInputError.single("engine", f"Prefix caching is modelled for {', '.join(prefix_cache_engines())}.")


# --- the trace ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: its id, arrival (s), prompt (tokens), and the shared prefix it starts
    with (an id naming the same token sequence across requests, and how many tokens of it this prompt
    holds; ``""`` / 0 for none)."""

    request_id: str
    arrival_s: float
    prompt_tokens: int
    shared_prefix_id: str = ""
    shared_prefix_tokens: int = 0


def parse_trace_csv(text: str) -> tuple[TraceRequest, ...]:
    """A CSV trace (header ``request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens``)
    -> requests. ``EngineInputError`` under ``trace``, each message naming the row (1 = the first row
    after the header), its line and the column."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TRACE_BYTES:
        raise EngineInputError.single("trace", f"The trace is larger than {MAX_TRACE_BYTES:,} bytes.")
    reader = csv.reader(io.StringIO(text), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise EngineInputError.single("trace", "The trace is empty: give a header and at least one row.") from None
    except csv.Error as exc:
        raise EngineInputError.single("trace", f"Line 1: not CSV ({exc}).") from None
    names = [h.strip().lower() for h in header]
    missing = [c for c in TRACE_COLUMNS if c not in names]
    if missing:
        raise EngineInputError.single(
            "trace",
            f"Line 1 (header): missing column(s) {', '.join(missing)}; the header is {','.join(TRACE_COLUMNS)}.",
        )
    index = {c: names.index(c) for c in TRACE_COLUMNS}
    rows: list[TraceRequest] = []
    problems: list[str] = []
    seen: set[str] = set()
    row = 0
    try:
        for values in reader:
            if not values or all(not v.strip() for v in values):
                continue
            row += 1
            if row > MAX_TRACE_ROWS:
                raise EngineInputError.single("trace", f"The trace has more than {MAX_TRACE_ROWS:,} rows.")
            where = f"Row {row} (line {reader.line_num})"
            if len(values) < len(names):
                problems.append(f"{where}: {len(values)} column(s), the header has {len(names)}.")
                continue
            cells = {c: values[i].strip() for c, i in index.items()}
            parsed, errors = _parse_row(cells)
            problems.extend(f"{where}, column {column}: {message}" for column, message in errors)
            if parsed is None:
                continue
            if parsed.request_id in seen:
                problems.append(f"{where}, column request_id: {parsed.request_id!r} appears twice.")
            seen.add(parsed.request_id)
            rows.append(parsed)
            if len(problems) >= 20:
                break
    except csv.Error as exc:
        problems.append(f"Line {reader.line_num}: not CSV ({exc}).")
    if problems:
        raise EngineInputError({"trace": problems[:20]})
    if not rows:
        raise EngineInputError.single("trace", "The trace has a header but no rows.")
    return tuple(rows)


def _parse_row(cells: dict[str, str]) -> tuple[TraceRequest | None, list[tuple[str, str]]]:
    errors: list[tuple[str, str]] = []
    request_id = cells["request_id"]
    prefix_id = cells["shared_prefix_id"]
    for column, value in (("request_id", request_id), ("shared_prefix_id", prefix_id)):
        if len(value) > MAX_TRACE_ID_CHARS:
            errors.append((column, f"longer than {MAX_TRACE_ID_CHARS} characters."))
    if not request_id:
        errors.append(("request_id", "empty."))
    try:
        arrival = float(cells["arrival_s"])
    except ValueError:
        arrival = math.nan
    if not (math.isfinite(arrival) and 0 <= arrival <= MAX_ARRIVAL_S):
        errors.append(("arrival_s", f"must be seconds from 0 to {MAX_ARRIVAL_S:,.0f} (got {cells['arrival_s']!r})."))
    prompt = _whole(cells["prompt_tokens"], 1, MAX_CONTEXT_TOKENS, "prompt_tokens", errors)
    shared = _whole(cells["shared_prefix_tokens"] or "0", 0, MAX_CONTEXT_TOKENS, "shared_prefix_tokens", errors)
    if prompt is not None and shared is not None:
        if shared > prompt:
            errors.append(("shared_prefix_tokens", f"{shared:,} is more than the prompt's {prompt:,} tokens."))
        if shared and not prefix_id:
            errors.append(("shared_prefix_id", "empty, but shared_prefix_tokens is not 0."))
    if errors or prompt is None or shared is None:
        return None, errors
    return TraceRequest(request_id, arrival, prompt, prefix_id, shared if prefix_id else 0), errors


def _whole(text: str, low: int, high: int, column: str, errors: list[tuple[str, str]]) -> int | None:
    try:
        value = int(text)
    except ValueError:
        errors.append((column, f"must be a whole number of tokens from {low:,} to {high:,} (got {text!r})."))
        return None
    if not low <= value <= high:
        errors.append((column, f"must be a whole number of tokens from {low:,} to {high:,} (got {value:,})."))
        return None
    return value


def trace_errors(trace: Sequence[TraceRequest]) -> dict[str, list[str]]:
    """Problems of a trace given as objects (the CSV parser checks the same rules)."""
    if not isinstance(trace, list | tuple) or not trace:
        return {"trace": ["Give at least one request."]}
    if len(trace) > MAX_TRACE_ROWS:
        return {"trace": [f"The trace has more than {MAX_TRACE_ROWS:,} rows."]}
    problems: list[str] = []
    for i, r in enumerate(trace, 1):
        if not isinstance(r, TraceRequest):
            problems.append(f"Row {i}: not a TraceRequest.")
            continue
        cells = {
            "request_id": str(r.request_id),
            "arrival_s": repr(r.arrival_s) if is_number(r.arrival_s) else "nan",
            "prompt_tokens": str(r.prompt_tokens) if is_int(r.prompt_tokens) else "x",
            "shared_prefix_id": str(r.shared_prefix_id),
            "shared_prefix_tokens": str(r.shared_prefix_tokens) if is_int(r.shared_prefix_tokens) else "x",
        }
        problems.extend(f"Row {i}, column {c}: {m}" for c, m in _parse_row(cells)[1])
    return {"trace": problems[:20]} if problems else {}


# --- results -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointCost:
    """The memory of one caching mode's state copies for one sequence at ``context_tokens``, per GPU.

    ``running_state_copies``: state copies a running request holds beyond its own (vLLM "align": 1;
    SGLang: slots per request - 1); ``retained_checkpoints_per_sequence``: states kept for later hits
    (semantic: the replay boundary; junctions come on top, one per shared prefix it branches at);
    ``sequences_per_replica`` at ``context_tokens`` when every running sequence keeps both resident,
    ``sequences_reserved_per_replica`` with the running copies only (a hard reservation: the engine
    evicts retained checkpoints, and loses their hits, before it refuses a request).
    """

    mode: str
    retention: str
    checkpoint_interval_tokens: int
    attention_block_size_tokens: int
    hit_granularity_tokens: int
    running_state_copies: int
    retained_checkpoints_per_sequence: int
    checkpoint_bytes_per_sequence_per_gpu: int
    sequences_per_replica: int
    sequences_reserved_per_replica: int
    sequences_lost: int
    sequences_lost_reserved: int

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class CopyOnWrite:
    """A partial hit's state copy on one GPU: ``bytes_per_hit_per_gpu`` read and written once each."""

    bytes_per_hit_per_gpu: int
    hbm_traffic_bytes_per_hit: int
    hbm_bandwidth_tbps: float
    seconds_per_hit: float | None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class RatioAdvice:
    """SGLang's ``mamba_full_memory_ratio`` (state pool : KV pool) for a workload, one GPU."""

    current_ratio: float
    best_ratio: float
    context_tokens: int
    concurrency: int | None
    state_bytes_per_request: int
    kv_bytes_per_request: int
    sequences_at_current: int
    sequences_at_best: int
    feasible_ratio_range: tuple[float, float] | None
    fits: bool | None
    reasoning: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        out["feasible_ratio_range"] = list(self.feasible_ratio_range) if self.feasible_ratio_range else None
        out["reasoning"] = list(self.reasoning)
        return out


@dataclass(frozen=True, slots=True)
class GranularityReuse:
    """Reuse of one trace at one hit granularity (tokens) under the engine's retention rule."""

    granularity_tokens: int
    reused_tokens: int
    reusable_token_fraction: float
    fraction_of_ideal: float | None
    hits: int
    checkpoints_retained: int
    checkpoint_bytes_per_gpu: int
    checkpoint_bytes_per_sequence_per_gpu: int
    padding_fraction: float | None
    prefill_s_saved: float
    engine_choice: bool

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        out["reusable_token_fraction"] = round(self.reusable_token_fraction, 6)
        if self.fraction_of_ideal is not None:
            out["fraction_of_ideal"] = round(self.fraction_of_ideal, 6)
        if self.padding_fraction is not None:
            out["padding_fraction"] = round(self.padding_fraction, 6)
        out["prefill_s_saved"] = round(self.prefill_s_saved, 6)
        return out


@dataclass(frozen=True, slots=True)
class PrefixCacheResult:
    """The prefix-cache analysis of one model, engine release and layout (``prefix_cache()``)."""

    model: str
    accelerator: str
    layout: Layout
    engine: str
    engine_version: str
    cache_mode: str
    retention: str
    checkpoint_interval_tokens: int
    context_tokens: int
    attention_block_size_tokens: int
    hit_granularity_tokens: int
    state_page_bytes: int | None
    padded_state_page_bytes: int | None
    padding_fraction: float
    state_bytes_per_sequence_per_gpu: int
    checkpoint_state_bytes_per_gpu: int
    checkpoint: CheckpointCost
    modes: tuple[CheckpointCost, ...]
    copy_on_write: CopyOnWrite | None
    state_pool_ratio: RatioAdvice | None
    granularities: tuple[GranularityReuse, ...]
    trace_requests: int
    trace_prompt_tokens: int
    ideal_reused_tokens: int
    ideal_reusable_token_fraction: float | None
    ideal_prefill_s_saved: float
    cold_prefill_s: float
    assumptions: tuple[str, ...] = field(default=())

    @property
    def reusable_token_fraction(self) -> dict[int, float]:
        """``{granularity tokens: fraction of the trace's prompt tokens reused}``."""
        return {g.granularity_tokens: g.reusable_token_fraction for g in self.granularities}

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "accelerator": self.accelerator,
            "layout": self.layout.as_dict(),
            "engine": self.engine,
            "engine_version": self.engine_version,
            "cache_mode": self.cache_mode,
            "retention": self.retention,
            "checkpoint_interval_tokens": self.checkpoint_interval_tokens,
            "context_tokens": self.context_tokens,
            "attention_block_size_tokens": self.attention_block_size_tokens,
            "hit_granularity_tokens": self.hit_granularity_tokens,
            "state_page_bytes": self.state_page_bytes,
            "padded_state_page_bytes": self.padded_state_page_bytes,
            "padding_fraction": round(self.padding_fraction, 6),
            "state_bytes_per_sequence_per_gpu": self.state_bytes_per_sequence_per_gpu,
            "checkpoint_state_bytes_per_gpu": self.checkpoint_state_bytes_per_gpu,
            "checkpoint_bytes": self.checkpoint.checkpoint_bytes_per_sequence_per_gpu,
            "checkpoint": self.checkpoint.to_dict(),
            "modes": [m.to_dict() for m in self.modes],
            "copy_on_write": self.copy_on_write.to_dict() if self.copy_on_write else None,
            "state_pool_ratio": self.state_pool_ratio.to_dict() if self.state_pool_ratio else None,
            "reusable_token_fraction": {
                str(g.granularity_tokens): round(g.reusable_token_fraction, 6) for g in self.granularities
            },
            "granularities": [g.to_dict() for g in self.granularities],
            "trace": {
                "requests": self.trace_requests,
                "prompt_tokens": self.trace_prompt_tokens,
                "ideal_reused_tokens": self.ideal_reused_tokens,
                "ideal_reusable_token_fraction": None
                if self.ideal_reusable_token_fraction is None
                else round(self.ideal_reusable_token_fraction, 6),
                "ideal_prefill_s_saved": round(self.ideal_prefill_s_saved, 6),
                "cold_prefill_s": round(self.cold_prefill_s, 6),
            },
            "assumptions": list(self.assumptions),
        }


# --- granularity and checkpoints -----------------------------------------------------------------


def prefix_granularity_tokens(allocation: EngineAllocation, cache_mode: str | None = None) -> int:
    """Tokens a prefix-cache hit lands on for an engine's allocation (a multiple of this; 0: no hits).

    vLLM: the attention block (``mamba_block_size = block_size`` with prefix caching); for a hybrid
    model in mode ``none``, 0 (vLLM caches no prefix of it). SGLang: the page size for attention-only
    models; for hybrids ``max(64, page)`` under ``extra_buffer`` (its default from 0.5.14), 1 under
    ``no_buffer`` (hits only where an earlier request ended), 0 with the radix cache off. For a router:
    a prompt sharing ``P`` tokens with a cached one reuses at most ``P // g x g`` of them.
    """
    hybrid = allocation.state_page_bytes is not None
    if allocation.engine == "vllm":
        if hybrid and cache_mode == "none":
            return 0
        return allocation.block_size_tokens
    if not hybrid:
        return allocation.block_size_tokens
    mode = cache_mode or _sglang_mode_of(allocation)
    if mode == "none":
        return 0
    if mode == "no_buffer":
        return 1
    return max(SGLANG_FLA_CHUNK, allocation.block_size_tokens)


def _sglang_mode_of(allocation: EngineAllocation) -> str:
    state = [g for g in allocation.groups if g.kind == "linear"]
    if not state:
        return "none"
    per_request = state[0].extra_blocks + 1
    if per_request == 1:
        return "none"
    return "no_buffer" if per_request == 3 else "extra_buffer"


def _state_groups(allocation: EngineAllocation) -> list:
    return [g for g in allocation.groups if g.kind == "linear"]


def checkpoint_state_bytes(allocation: EngineAllocation) -> int:
    """Bytes one state checkpoint of one sequence takes on one GPU: vLLM one (padded) page in every
    layer slot of each state group; SGLang one slot (every linear layer's state, unpadded)."""
    if allocation.engine == "vllm":
        return sum(g.page_bytes * g.layers for g in _state_groups(allocation))
    return allocation.state_bytes_per_sequence_per_gpu


def retained_per_sequence(policy: str, context: int, granularity: int, interval: int, chunk: int) -> int:
    """States a sequence of ``context`` tokens leaves behind under ``policy`` (its junctions aside).

    ``dense``: every boundary below the context, ``(context - 1) // g``; ``step``: one per scheduler
    step of ``chunk`` tokens (floored to the granularity) and the replay boundary; ``interval``: one per
    ``interval`` tokens and the replay boundary; ``semantic`` / ``request_end``: the replay boundary (1);
    ``none``: 0.
    """
    if policy == "none" or granularity <= 0:
        return 0
    last = context - 1
    tail = last // granularity * granularity
    if policy == "dense":
        return last // granularity
    if policy in ("semantic", "request_end"):
        return 1 if (tail > 0 or policy == "request_end") else 0
    spacing = interval if policy == "interval" else max(granularity, chunk // granularity * granularity)
    regular = last // spacing
    return regular + (1 if tail > 0 and tail % spacing else 0)


# --- the trace simulation ------------------------------------------------------------------------


@dataclass(slots=True)
class _Prefix:
    covered: int = 0
    retained: set[int] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class _Replay:
    hits: tuple[int, ...]
    retained: int


def replay_trace(
    trace: Sequence[TraceRequest],
    granularity: int,
    policy: str,
    *,
    interval: int = 0,
    chunk: int = 0,
    junctions: bool = True,
    tail_offset: int = 1,
) -> _Replay:
    """Tokens each request of ``trace`` (in arrival order) reuses at ``granularity`` under ``policy``.

    A request sharing ``P`` tokens of a prefix whose longest earlier copy held ``C`` tokens can reuse at
    most ``limit = min(P, C, prompt - 1)`` (the last prompt token is always computed: vLLM
    ``max_cache_hit_length = num_tokens - 1``). ``ideal``: ``limit``; ``dense``: ``limit // g x g``;
    otherwise the largest retained state ``<= limit`` (``interval`` also every multiple of it). After
    it, the request retains its replay boundary (``(prompt - tail_offset) // g x g``, if inside its
    shared part), under ``step`` its step boundaries, and with ``junctions`` the junction
    ``limit // g x g`` when that is deeper than its own hit. Nothing is evicted.
    """
    prefixes: dict[str, _Prefix] = {}
    hits: list[int] = []
    retained = 0
    g = max(1, granularity)
    for r in trace:
        if not r.shared_prefix_id or not r.shared_prefix_tokens:
            hits.append(0)
            continue
        entry = prefixes.get(r.shared_prefix_id)
        limit = min(r.shared_prefix_tokens, entry.covered, r.prompt_tokens - 1) if entry else 0
        if policy == "none":
            hit = 0
        elif policy == "ideal":
            hit = limit
        elif policy == "dense":
            hit = limit // g * g
        else:
            hit = max((b for b in entry.retained if b <= limit), default=0) if entry else 0
            if policy == "interval" and interval:
                hit = max(hit, limit // interval * interval)
        hits.append(hit)
        if entry is None:
            entry = prefixes[r.shared_prefix_id] = _Prefix()
        if policy in ("step", "semantic", "interval", "request_end"):
            own = r.shared_prefix_tokens
            tail = (r.prompt_tokens - tail_offset) // g * g
            if 0 < tail <= own:
                entry.retained.add(tail)
            if policy == "step":
                spacing = max(g, chunk // g * g)
                top = min(own, r.prompt_tokens - 1)
                entry.retained.update(range(spacing, top + 1, spacing))
            junction = limit // g * g
            if junctions and policy in ("semantic", "interval") and junction > hit:
                entry.retained.add(junction)
        entry.covered = max(entry.covered, r.shared_prefix_tokens)
    for entry in prefixes.values():
        if policy == "dense":
            retained += entry.covered // g
        elif policy == "interval" and interval:
            retained += entry.covered // interval + sum(1 for b in entry.retained if b % interval)
        elif policy not in ("none", "ideal"):
            retained += len(entry.retained)
    return _Replay(tuple(hits), retained)


# --- the analysis ----------------------------------------------------------------------------------


def _check(
    engine: str,
    cache_mode: str | None,
    retention: str | None,
    checkpoint_interval_tokens: int,
    context_tokens: int | None,
    concurrency: int | None,
    state_pool_ratio: float,
    mamba_chunk_size_tokens: int | None,
    granularities: Iterable[int] | None,
    available_kv_cache_gib: float | None,
) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if engine not in (modelled := prefix_cache_engines()):
        errors["engine"] = [f"Prefix caching is modelled for {', '.join(modelled)}."]
    elif cache_mode is not None and cache_mode not in CACHE_MODES[engine]:
        errors["cache_mode"] = [f"{engine} modes: {', '.join(CACHE_MODES[engine])}."]
    if retention is not None and retention not in RETENTIONS:
        errors["retention"] = [f"Use one of {', '.join(RETENTIONS)}."]
    message = int_error(checkpoint_interval_tokens, 0, MAX_CONTEXT_TOKENS, "of tokens")
    if message:
        errors["checkpoint_interval_tokens"] = [message]
    for name, value, high in (
        ("context_tokens", context_tokens, MAX_CONTEXT_TOKENS),
        ("concurrency", concurrency, MAX_BATCH),
        ("mamba_chunk_size_tokens", mamba_chunk_size_tokens, 65536),
    ):
        if value is not None:
            message = int_error(value, 1, high)
            if message:
                errors[name] = [message]
    message = float_error(state_pool_ratio, MAX_RATIO, MIN_RATIO)
    if message:
        errors["state_pool_ratio"] = [message]
    if available_kv_cache_gib is not None:
        message = float_error(available_kv_cache_gib, MAX_GIB, 0.0)
        if message:
            errors["available_kv_cache_gib"] = [message]
    if granularities is not None:
        values = list(granularities) if isinstance(granularities, list | tuple) else None
        if values is None or not values or len(values) > MAX_GRANULARITIES:
            errors["granularities"] = [f"Give 1 to {MAX_GRANULARITIES} block sizes (tokens)."]
        else:
            bad = [v for v in values if int_error(v, 1, MAX_CONTEXT_TOKENS)]
            if bad:
                errors["granularities"] = [f"Block sizes are whole numbers of tokens from 1 to {MAX_CONTEXT_TOKENS:,}."]
    return errors


def prefix_cache(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout | None = None,
    *,
    engine: str = "vllm",
    engine_version: str | None = None,
    cache_mode: str | None = None,
    retention: str | None = None,
    checkpoint_interval_tokens: int = 0,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    weight_format: str | None = None,
    context_tokens: int | None = None,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    runtime_reserve_gib: float | None = None,
    available_kv_cache_gib: float | None = None,
    block_size_tokens: int | None = None,
    concurrency: int | None = None,
    state_pool_ratio: float = DEFAULT_STATE_POOL_RATIO,
    mamba_chunk_size_tokens: int | None = None,
    trace: Sequence[TraceRequest] | None = None,
    granularities: Sequence[int] | None = None,
) -> PrefixCacheResult:
    """Prefix-cache granularity, checkpoint memory, copy-on-write and trace reuse of ``model`` served
    by ``engine`` (``vllm``/``sglang``, release ``engine_version``) on ``layout`` of ``accelerator``.

    ``cache_mode``: vLLM ``none``/``align``/``all`` (``mamba_cache_mode``), SGLang ``none`` (radix cache
    off)/``no_buffer``/``extra_buffer`` (``mamba_radix_cache_strategy``); default what the engine picks
    with prefix caching on. ``retention`` (vLLM 0.29+, mode ``align``): ``semantic`` (0, the default),
    ``interval`` (``checkpoint_interval_tokens``, a multiple of the block), ``dense`` (None).
    ``context_tokens`` (default 32,768 capped at the model's maximum) is where checkpoint memory and
    concurrency are quoted; ``concurrency`` the running requests SGLang's ratio is fitted to. The memory
    budget is ``size()``'s (``gpu_memory_utilization``, ``runtime_reserve_gib``, or the logged
    ``available_kv_cache_gib``). ``trace``: requests to replay at each of ``granularities`` (tokens;
    default ``DEFAULT_GRANULARITIES`` and the engine's own). Raises ``EngineInputError`` with field names.
    """
    errors = _check(
        engine,
        cache_mode,
        retention,
        checkpoint_interval_tokens,
        context_tokens,
        concurrency,
        state_pool_ratio,
        mamba_chunk_size_tokens,
        granularities,
        available_kv_cache_gib,
    )
    if trace is not None:
        errors.update(trace_errors(trace))
    if errors:
        raise EngineInputError(errors)
    version, rules = prefix_rules(engine, engine_version)
    layout = layout or Layout()
    linear = [g for g in model.layer_groups if g.kind == "linear"]
    hybrid = bool(linear)
    context = context_tokens or min(32_768, model.max_context_tokens or 32_768)
    notes: list[str] = [f"{engine} {version} prefix caching ({rules.source})."]

    mode = cache_mode or _default_mode(engine, rules, linear, version)
    if not hybrid:
        if cache_mode or retention:
            notes.append("cache_mode and retention apply to hybrid models only; ignored.")
        mode, retention = "kv", None
    if hybrid and mode not in rules.modes:
        raise EngineInputError.single(
            "cache_mode", f"{engine} {version} offers {', '.join(rules.modes)} for hybrid models, not {mode!r}."
        )
    if engine == "vllm" and mode == "all" and not _mamba_family(linear):
        notes.append(
            "vLLM runs mode 'all' only for Mamba-family models (SupportsMambaPrefixCaching: mamba, mamba2, jamba, "
            "bamba, nemotron_h, zamba2, granitemoehybrid, falcon_h1 in 0.15.0); it falls back to 'align' here."
        )
        mode = "align"
    policy, retention_name = _policy(engine, mode, retention, rules, version, hybrid)
    sizing_kwargs: dict[str, Any] = {
        "layout": layout,
        "weight_format": weight_format,
        "kv_cache_dtype": kv_cache_dtype,
        "context_tokens": context,
        "gpu_memory_utilization": gpu_memory_utilization,
        "runtime_reserve_gib": runtime_reserve_gib,
        "available_kv_cache_gib": available_kv_cache_gib,
        "engine": engine,
        "engine_version": version,
        "max_model_len": context,
    }
    if engine == "sglang":
        sizing_kwargs["state_pool_ratio"] = state_pool_ratio
    else:
        sizing_kwargs["prefix_caching"] = False  # each mode's own allocation below, not the release's default
    base = size(model, accelerator, block_size_tokens=block_size_tokens, **sizing_kwargs)
    allocation = base.allocation
    assert allocation is not None  # an engine profile always allocates
    chunk = mamba_chunk_size_tokens or (VLLM_DEFAULT_MAMBA_CHUNK if engine == "vllm" else SGLANG_FLA_CHUNK)

    # The allocation of the chosen mode (vLLM "all" rounds the block to the SSD chunk; SGLang's
    # strategies hold different slots per request).
    chosen, _ = _mode_allocation(
        mode, engine, model, accelerator, base, sizing_kwargs, block_size_tokens, chunk, state_pool_ratio, notes
    )
    granularity = prefix_granularity_tokens(chosen, mode)
    if engine == "sglang" and mode == "extra_buffer":
        granularity = max(chunk, chosen.block_size_tokens)
    interval = 0
    if policy == "interval":
        interval = checkpoint_interval_tokens
        if interval <= 0 or interval % max(1, granularity):
            raise EngineInputError.single(
                "checkpoint_interval_tokens",
                f"With retention 'interval' give a positive multiple of the {granularity}-token block "
                f"(vLLM: 'must be a multiple of the scheduler block size').",
            )
    elif checkpoint_interval_tokens and retention_name != "interval":
        notes.append("checkpoint_interval_tokens applies to retention 'interval' only; ignored.")

    ckpt_bytes = checkpoint_state_bytes(chosen) if hybrid else 0
    padded = None
    if hybrid and engine == "vllm":
        padded = _state_groups(chosen)[0].page_bytes
    state_page = chosen.state_page_bytes
    if hybrid:
        notes.append(
            f"Attention block {chosen.block_size_tokens} tokens (the {engine} profile's allocation); a hit lands "
            f"on multiples of {granularity} token(s); one checkpoint = {bytes_exact(ckpt_bytes)} per GPU "
            + (
                "(one padded state page in every layer slot of the state groups)."
                if engine == "vllm"
                else "(one state slot: every linear layer of the stage)."
            )
        )
    else:
        notes.append("No linear-attention layers: attention KV is reusable at every block; no state checkpoints.")

    batch_tokens = base.batch_tokens
    modes = _mode_table(
        engine,
        rules,
        model,
        accelerator,
        base,
        sizing_kwargs,
        block_size_tokens,
        chunk,
        state_pool_ratio,
        context,
        interval,
        batch_tokens,
        hybrid,
    )
    checkpoint = next(
        (m for m in modes if m.mode == mode and m.retention == retention_name),
        None,
    ) or _checkpoint_row(engine, mode, retention_name, policy, chosen, context, interval, batch_tokens, layout, chunk)

    cow = None
    if hybrid and mode != "none":
        copied = chosen.state_bytes_per_sequence_per_gpu
        bandwidth = accelerator.hbm_bandwidth_tbps
        seconds = 2 * copied / (bandwidth * TB) if bandwidth else None
        cow = CopyOnWrite(copied, 2 * copied, bandwidth, seconds)
        notes.append(
            f"Copy-on-write of a partial hit: {bytes_exact(copied)} of state per GPU (unpadded conv + recurrent state "
            f"of its linear layers) read and written once, 2 x {bytes_text(copied)} at "
            + (f"{bandwidth:g} TB/s = {seconds * 1e6:.1f} us." if seconds is not None else "an unknown bandwidth.")
        )
        if engine == "vllm" and mode == "align":
            notes.append(
                f"vLLM 'align' also copies the state block to block while a request runs: once per "
                f"{chosen.block_size_tokens} tokens decoded (MambaManager.remove_skipped_blocks)."
            )

    ratio = None
    if engine == "sglang" and hybrid:
        ratio = _ratio_advice(
            model, layout, chosen, mode, version, context, concurrency, state_pool_ratio, checkpoint, kv_cache_dtype
        )

    grans = _granularities(
        granularities, granularity, model, accelerator, layout, trace, policy, interval, batch_tokens, rules,
        engine, chosen, context, ckpt_bytes, kv_cache_dtype, weight_format, notes,
    )  # fmt: skip
    g_results, ideal_tokens, ideal_saved, cold = grans
    prompt_total = sum(r.prompt_tokens for r in trace) if trace else 0
    if trace:
        notes.append(
            "Trace replayed in arrival order with nothing evicted; a request reuses at most min(its shared "
            "tokens, the longest earlier copy of that prefix, prompt - 1). The ideal is a token-level cache "
            "keeping every token's state. Prefill time from the throughput model's one-prompt prefill "
            "(planner/engine/throughput/prefill.py) on one replica, without queueing."
        )
    notes.extend(a for a in chosen.assumptions if a.startswith(("Hybrid model", "State page padded")))
    return PrefixCacheResult(
        model=model.name,
        accelerator=accelerator.name,
        layout=layout,
        engine=engine,
        engine_version=version,
        cache_mode=mode,
        retention=retention_name,
        checkpoint_interval_tokens=interval,
        context_tokens=context,
        attention_block_size_tokens=chosen.block_size_tokens,
        hit_granularity_tokens=granularity,
        state_page_bytes=state_page,
        padded_state_page_bytes=padded,
        padding_fraction=chosen.page_padding_fraction,
        state_bytes_per_sequence_per_gpu=chosen.state_bytes_per_sequence_per_gpu,
        checkpoint_state_bytes_per_gpu=ckpt_bytes,
        checkpoint=checkpoint,
        modes=modes,
        copy_on_write=cow,
        state_pool_ratio=ratio,
        granularities=g_results,
        trace_requests=len(trace) if trace else 0,
        trace_prompt_tokens=prompt_total,
        ideal_reused_tokens=ideal_tokens,
        ideal_reusable_token_fraction=ideal_tokens / prompt_total if prompt_total else None,
        ideal_prefill_s_saved=ideal_saved,
        cold_prefill_s=cold,
        assumptions=tuple(dict.fromkeys(notes)),
    )


def _mamba_family(linear: list) -> bool:
    """Linear layers all Mamba2 (the models vLLM marks ``SupportsMambaPrefixCaching``)."""
    return bool(linear) and all(g.variant == "mamba2" for g in linear)


def _default_mode(engine: str, rules: PrefixRules, linear: list, version: str) -> str:
    """The mode the engine picks with prefix caching on (vLLM ``MambaModelConfig``; SGLang ``auto``)."""
    if engine == "vllm":
        return "all" if "all" in rules.modes and _mamba_family(linear) else "align"
    if "extra_buffer" in rules.modes:
        _, release = sglang_release(version)
        variants = {g.variant or "gated_deltanet" for g in linear}
        if variants and all(v in release.extra_buffer_variants for v in variants):
            return "extra_buffer"
    return "no_buffer" if "no_buffer" in rules.modes else "none"


def _policy(
    engine: str, mode: str, retention: str | None, rules: PrefixRules, version: str, hybrid: bool
) -> tuple[str, str]:
    """``(simulation policy, retention name shown)`` for a mode and the asked retention."""
    if not hybrid:
        return "dense", "dense"
    if mode == "none":
        if retention is not None:
            raise EngineInputError.single("retention", "Mode 'none' keeps no checkpoints.")
        return "none", "none"
    if engine == "vllm" and mode == "align" and rules.retention_knob:
        chosen = retention or "semantic"
        return chosen, chosen
    if retention is not None:
        raise EngineInputError.single(
            "retention",
            f"{engine} {version} mode {mode!r} has no retention setting (vLLM's prefix_cache_retention_interval "
            "arrived in 0.29.0 and applies to mode 'align').",
        )
    if engine == "vllm":
        return ("dense", "dense") if mode == "all" else ("step", "step")
    if mode == "no_buffer":
        return "request_end", "request_end"
    return ("semantic", "semantic") if rules.junctions else ("request_end", "request_end")


def _mode_allocation(
    mode: str,
    engine: str,
    model: ModelArch,
    accelerator: Accelerator,
    base: SizingResult,
    sizing_kwargs: dict[str, Any],
    block_size_tokens: int | None,
    chunk: int,
    state_pool_ratio: float,
    notes: list[str] | None = None,
) -> tuple[EngineAllocation, SizingResult]:
    allocation = base.allocation
    assert allocation is not None
    if allocation.state_page_bytes is None:
        return allocation, base
    if engine == "vllm":
        if mode == "align":
            sized = size(
                model, accelerator, block_size_tokens=block_size_tokens, **{**sizing_kwargs, "prefix_caching": True}
            )
            assert sized.allocation is not None
            return sized.allocation, sized
        if mode == "all":
            block = all_mode_block_tokens(allocation, chunk)
            block = max(block, block_size_tokens or 0)
            sized = size(model, accelerator, block_size_tokens=block, **sizing_kwargs)
            assert sized.allocation is not None
            if notes is not None:
                notes.append(
                    f"vLLM 'all': block rounded to the SSD chunk, lcm({chunk}, alignment) x cdiv(tokens per state, "
                    f"that) = {block} tokens (0.15.0 model_executor/models/config.py); a request holds "
                    "cdiv(context, block) state blocks."
                )
            return sized.allocation, sized
        return allocation, base
    radix = mode != "none"
    kwargs = {
        "available_bytes": allocation.available_kv_cache_bytes,
        "max_model_len": allocation.max_model_len,
        "kv_cache_dtype": base.kv_cache_dtype,
        "page_size": block_size_tokens,
        "version": allocation.engine_version,
        "mamba_full_memory_ratio": state_pool_ratio,
        "radix_cache": radix,
        "overlap_schedule": mode == "extra_buffer",
    }
    if mode == "no_buffer" and allocation.block_size_tokens > 1:
        raise EngineInputError.single("cache_mode", "SGLang's no_buffer strategy needs page size 1.")
    chosen = sglang_allocation(model, base.layout, **kwargs)
    if radix and _sglang_mode_of(chosen) == "none":
        raise EngineInputError.single(
            "cache_mode", f"SGLang {allocation.engine_version} serves this model with the radix cache off."
        )
    if mode == "extra_buffer" and _sglang_mode_of(chosen) != "extra_buffer":
        raise EngineInputError.single(
            "cache_mode", f"SGLang {allocation.engine_version} has no extra_buffer strategy for this model."
        )
    return chosen, base


def all_mode_block_tokens(allocation: EngineAllocation, chunk: int) -> int:
    """vLLM 0.15-0.32 ``mamba_cache_mode="all"`` attention block (tokens) from the profile's pages:
    ``c = lcm(chunk, align)``, ``c x cdiv(cdiv(state_page, page_per_token), c)`` with ``align`` the
    kernel block (16; 64 for MLA). ``page_per_token`` is the attention group's page over its block."""
    attention = [g for g in allocation.groups if g.kind != "linear"]
    page_per_token = attention[0].page_bytes // attention[0].block_size_tokens
    align = MLA_BLOCK_SIZE if any(g.kind == "mla" for g in attention) else DEFAULT_BLOCK_SIZE
    step = math.lcm(chunk, align)
    return step * ceil_div(ceil_div(allocation.state_page_bytes or 0, page_per_token), step)


def _sequences(allocation: EngineAllocation, context: int, extra_state_blocks: int, dp: int) -> int:
    """Whole requests of ``context`` tokens per replica when each holds ``extra_state_blocks`` more state
    blocks (vLLM: in each state group, from the shared pool) or slots (SGLang: from the state pool)."""
    if allocation.engine == "vllm":
        states = len(_state_groups(allocation))
        need = allocation.blocks_per_request(context) + states * extra_state_blocks
        return (allocation.num_blocks // need if need else 0) * dp
    token_need = allocation.blocks_per_request(context)
    by_tokens = allocation.num_blocks // token_need if token_need else 0
    if allocation.state_slots is None:
        return by_tokens * dp
    groups = _state_groups(allocation)
    per_request = (groups[0].extra_blocks + 1 if groups else 1) + extra_state_blocks
    return min(by_tokens, allocation.state_slots // per_request) * dp


def _checkpoint_row(
    engine: str,
    mode: str,
    retention: str,
    policy: str,
    allocation: EngineAllocation,
    context: int,
    interval: int,
    batch_tokens: int,
    layout: Layout,
    chunk: int = SGLANG_FLA_CHUNK,
) -> CheckpointCost:
    """One mode's state copies at ``context`` (``sequences_lost*`` filled in by ``_mode_table``).

    vLLM "align" holds 2 state blocks per running request (the profile's allocation with prefix caching
    counts the second); "all" holds ``cdiv(context, block)``, all of them running copies; SGLang holds
    the slots its strategy gives a running request. Retained checkpoints come on top.
    """
    granularity = prefix_granularity_tokens(allocation, mode)
    if engine == "sglang" and mode == "extra_buffer":
        granularity = max(chunk, allocation.block_size_tokens)
    if allocation.state_page_bytes is None:
        seqs = allocation.sequences(context) * layout.dp
        block = allocation.block_size_tokens
        return CheckpointCost(mode, retention, interval, block, granularity, 0, 0, 0, seqs, seqs, 0, 0)
    retained = retained_per_sequence(policy, context, granularity, interval, batch_tokens)
    if engine == "vllm":
        if mode == "all":
            running, retained = ceil_div(context, allocation.block_size_tokens) - 1, 0
            reserved = full = _sequences(allocation, context, running, layout.dp)
        else:
            running = 1 if mode == "align" else 0  # the align allocation holds it already
            reserved = _sequences(allocation, context, 0, layout.dp)
            full = _sequences(allocation, context, retained, layout.dp)
    else:
        groups = _state_groups(allocation)
        running = groups[0].extra_blocks if groups else 0
        reserved = _sequences(allocation, context, 0, layout.dp)
        full = _sequences(allocation, context, retained, layout.dp)
    return CheckpointCost(
        mode=mode,
        retention=retention,
        checkpoint_interval_tokens=interval,
        attention_block_size_tokens=allocation.block_size_tokens,
        hit_granularity_tokens=granularity,
        running_state_copies=running,
        retained_checkpoints_per_sequence=retained,
        checkpoint_bytes_per_sequence_per_gpu=(running + retained) * checkpoint_state_bytes(allocation),
        sequences_per_replica=full,
        sequences_reserved_per_replica=reserved,
        sequences_lost=0,
        sequences_lost_reserved=0,
    )


def _mode_table(
    engine: str,
    rules: PrefixRules,
    model: ModelArch,
    accelerator: Accelerator,
    base: SizingResult,
    sizing_kwargs: dict[str, Any],
    block_size_tokens: int | None,
    chunk: int,
    state_pool_ratio: float,
    context: int,
    interval: int,
    batch_tokens: int,
    hybrid: bool,
) -> tuple[CheckpointCost, ...]:
    """One row per caching mode of the release (vLLM 0.29+ "align": per retention), at ``context``;
    ``sequences_lost*`` against mode ``none``."""
    layout = base.layout
    rows: list[CheckpointCost] = []
    if not hybrid:
        allocation = base.allocation
        assert allocation is not None
        rows.append(_checkpoint_row(engine, "kv", "dense", "dense", allocation, context, 0, batch_tokens, layout))
        return tuple(rows)
    combos: list[tuple[str, str, str]] = []
    linear = [g for g in model.layer_groups if g.kind == "linear"]
    for mode in rules.modes:
        if engine == "vllm" and mode == "all" and not _mamba_family(linear):
            continue
        if engine == "vllm" and mode == "align" and rules.retention_knob:
            combos.append((mode, "semantic", "semantic"))
            if interval:
                combos.append((mode, "interval", "interval"))
            combos.append((mode, "dense", "dense"))
        else:
            policy, name = _policy(engine, mode, None, rules, base.engine_version or "", hybrid)
            combos.append((mode, name, policy))
    for mode, name, policy in combos:
        try:
            allocation, _ = _mode_allocation(
                mode, engine, model, accelerator, base, sizing_kwargs, block_size_tokens, chunk, state_pool_ratio
            )
        except EngineInputError:
            continue  # a mode this model or release cannot use (e.g. no extra_buffer for it)
        rows.append(
            _checkpoint_row(
                engine,
                mode,
                name,
                policy,
                allocation,
                context,
                interval if policy == "interval" else 0,
                batch_tokens,
                layout,
                chunk,
            )
        )
    reference = next((r for r in rows if r.mode == "none"), None)
    if reference is None:
        return tuple(rows)
    out = []
    for r in rows:
        out.append(
            CheckpointCost(
                **{
                    **r.to_dict(),
                    "sequences_lost": reference.sequences_per_replica - r.sequences_per_replica,
                    "sequences_lost_reserved": reference.sequences_reserved_per_replica
                    - r.sequences_reserved_per_replica,
                }
            )
        )
    return tuple(out)


def _ratio_advice(
    model: ModelArch,
    layout: Layout,
    allocation: EngineAllocation,
    mode: str,
    version: str,
    context: int,
    concurrency: int | None,
    current: float,
    checkpoint: CheckpointCost,
    kv_cache_dtype: str,
) -> RatioAdvice:
    """SGLang's state:KV ratio for running ``concurrency`` requests of ``context`` tokens.

    A request needs ``s = (slots per request + retained checkpoints) x slot`` bytes of state and
    ``k = ceil(context / page) x page x cell`` bytes of KV (cell: one token over the GPU's attention
    layers). The split ``state = rest x r / (1 + r)`` leaves neither pool stranded when
    ``r = s / k`` (``N`` cancels); from 0.5.17 the padding slot adds one slot: ``r = (N x slots + 1) x
    slot / (N x k)``. ``N`` requests fit at some ratio iff ``N x (s + k) (+ slot) <= rest``.
    """
    _, release = sglang_release(version)
    groups = _state_groups(allocation)
    per_request = (groups[0].extra_blocks + 1 if groups else 1) + checkpoint.retained_checkpoints_per_sequence
    slot = allocation.state_bytes_per_sequence_per_gpu
    page = allocation.block_size_tokens
    shared = [g for g in allocation.groups if g.pool == "shared" and g.kind != "linear"]
    cell = sum(g.page_bytes * g.layers for g in shared) // max(1, page)
    pages = ceil_div(context, page)
    kv = pages * page * cell
    state = per_request * slot
    pad = slot if release.padding_slot_charged else 0
    rest = allocation.available_kv_cache_bytes
    n = concurrency
    best = ((n * state + pad) / (n * kv) if n else state / kv) if kv else MAX_RATIO
    best = min(MAX_RATIO, max(MIN_RATIO, best))

    def sequences(ratio: float) -> int:
        alloc = sglang_allocation(
            model,
            layout,
            available_bytes=rest,
            max_model_len=context,
            kv_cache_dtype=kv_cache_dtype,
            page_size=page,
            version=version,
            mamba_full_memory_ratio=ratio,
            radix_cache=mode != "none",
            overlap_schedule=mode == "extra_buffer",
        )
        return _sequences(alloc, context, checkpoint.retained_checkpoints_per_sequence, layout.dp)

    # The floors of slots and pages can cost one request at the exact balance: try the neighbours too.
    candidates = sorted({best, min(MAX_RATIO, best * 1.001), max(MIN_RATIO, best / 1.001)})
    scored = [(sequences(r), -abs(r - best), r) for r in candidates]
    at_best, _, best = max(scored)
    at_current = sequences(current)
    reasoning = [
        f"A running request of {context:,} tokens needs {per_request} state slot(s) x {bytes_exact(slot)} = "
        f"{bytes_exact(state)} of "
        f"state ({mode}: {per_request - checkpoint.retained_checkpoints_per_sequence} running, "
        f"{checkpoint.retained_checkpoints_per_sequence} retained) and {pages:,} page(s) x {page} x {cell:,} B = "
        f"{bytes_exact(kv)} of KV on each GPU.",
        f"SGLang splits its rest memory ({bytes_exact(rest)}) as state = rest x r / (1 + r): the ratio that "
        f"strands neither pool is state / KV = {best:.4g}"
        + (f" for {n:,} requests (the padding slot included)." if n else "."),
        f"At the current r = {current:g}: {at_current:,} request(s) per replica; at r = {best:.4g}: {at_best:,}.",
    ]
    feasible = None
    fits = None
    if n:
        need_state = n * state + pad
        need_kv = n * kv
        fits = need_state + need_kv <= rest
        if fits:
            low = need_state / (rest - need_state) if rest > need_state else MAX_RATIO
            high = (rest - need_kv) / need_kv if need_kv else MAX_RATIO
            feasible = (round(max(MIN_RATIO, low), 6), round(min(MAX_RATIO, high), 6))
            reasoning.append(
                f"{n:,} requests need {bytes_exact(need_state)} of state and {bytes_exact(need_kv)} of KV: any r "
                f"from {feasible[0]:.4g} "
                f"to {feasible[1]:.4g} holds them."
            )
        else:
            reasoning.append(
                f"{n:,} requests need {bytes_exact(need_state + need_kv)} per GPU, more than the "
                f"{bytes_exact(rest)} rest: no ratio "
                f"holds them; {at_best:,} is the most at this context."
            )
    return RatioAdvice(
        current_ratio=current,
        best_ratio=round(best, 6),
        context_tokens=context,
        concurrency=n,
        state_bytes_per_request=state,
        kv_bytes_per_request=kv,
        sequences_at_current=at_current,
        sequences_at_best=at_best,
        feasible_ratio_range=feasible,
        fits=fits,
        reasoning=tuple(reasoning),
    )


def _granularities(
    asked: Sequence[int] | None,
    engine_granularity: int,
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout,
    trace: Sequence[TraceRequest] | None,
    policy: str,
    interval: int,
    batch_tokens: int,
    rules: PrefixRules,
    engine: str,
    allocation: EngineAllocation,
    context: int,
    ckpt_bytes: int,
    kv_cache_dtype: str,
    weight_format: str | None,
    notes: list[str],
) -> tuple[tuple[GranularityReuse, ...], int, float, float]:
    """Reuse per granularity, with the ideal token-level cache and the cold prefill time (s)."""
    values = sorted(set(asked or DEFAULT_GRANULARITIES) | ({engine_granularity} if engine_granularity else set()))
    ordered = sorted(trace, key=lambda r: r.arrival_s) if trace else []  # stable: ties keep the file's order
    prompt_total = sum(r.prompt_tokens for r in ordered)
    memo: dict[tuple[int, int], float] = {}
    timing: list[PrefillModel] = []

    def prefill_s(prompt: int, cached: int) -> float:
        """One prompt's prefill time (s): the throughput model's ``prefill()`` (its first call checks the
        inputs), then its ``PrefillModel`` built once and asked per (prompt, cached) pair."""
        key = (prompt, cached)
        if key not in memo:
            if len(memo) >= MAX_PREFILL_EVALUATIONS:
                raise EngineInputError.single("trace", "Too many distinct prompts and hits to time; shorten the trace.")
            if not timing:
                first = prefill(
                    model, accelerator, layout, prompt_tokens=prompt, cached_tokens=cached,
                    kv_cache_dtype=kv_cache_dtype, weight_format=weight_format,
                )  # fmt: skip
                dm = DecodeModel(model, accelerator, layout, kv_cache_dtype, DEFAULT_OPTIONS, weight_format, True)
                timing.append(PrefillModel(dm))
                memo[key] = first.time_s
            else:
                memo[key] = timing[0].parts(prompt, cached).time_s
        return memo[key]

    def saved(hits: Sequence[int]) -> float:
        return sum(
            prefill_s(r.prompt_tokens, 0) - prefill_s(r.prompt_tokens, h)
            for r, h in zip(ordered, hits, strict=True)
            if h
        )

    cold = sum(prefill_s(r.prompt_tokens, 0) for r in ordered)
    ideal = replay_trace(ordered, 1, "ideal") if ordered else _Replay((), 0)
    ideal_tokens = sum(ideal.hits)
    ideal_saved = saved(ideal.hits) if ordered else 0.0
    tail_offset = 1 if engine == "vllm" else 0
    hybrid = allocation.state_page_bytes is not None
    page_per_token = 0
    if engine == "vllm":
        attention = [g for g in allocation.groups if g.kind != "linear"]
        page_per_token = attention[0].page_bytes // max(1, attention[0].block_size_tokens)
    out: list[GranularityReuse] = []
    for g in values:
        step_interval = interval
        if policy == "interval" and interval % g:
            step_interval = max(g, interval // g * g)
        if ordered:
            replay = replay_trace(
                ordered,
                g,
                policy,
                interval=step_interval,
                chunk=batch_tokens,
                junctions=rules.junctions,
                tail_offset=tail_offset,
            )
            reused = sum(replay.hits)
            hits = sum(1 for h in replay.hits if h)
            retained = replay.retained
            seconds = saved(replay.hits)
        else:
            reused = hits = retained = 0
            seconds = 0.0
        padding = None
        if hybrid and engine == "vllm" and page_per_token and allocation.state_page_bytes:
            page = g * page_per_token
            if page >= allocation.state_page_bytes:
                padding = (page - allocation.state_page_bytes) / allocation.state_page_bytes
        out.append(
            GranularityReuse(
                granularity_tokens=g,
                reused_tokens=reused,
                reusable_token_fraction=reused / prompt_total if prompt_total else 0.0,
                fraction_of_ideal=reused / ideal_tokens if ideal_tokens else None,
                hits=hits,
                checkpoints_retained=retained,
                checkpoint_bytes_per_gpu=retained * ckpt_bytes,
                checkpoint_bytes_per_sequence_per_gpu=retained_per_sequence(
                    policy, context, g, step_interval, batch_tokens
                )
                * ckpt_bytes,
                padding_fraction=padding,
                prefill_s_saved=seconds,
                engine_choice=g == engine_granularity,
            )
        )
    if hybrid and engine == "vllm":
        notes.append(
            f"Granularities are what-ifs of the hit granularity under the same retention rule; vLLM cannot use a "
            f"physical block below {allocation.block_size_tokens} tokens for this model (its padding_fraction is "
            "null there: one attention page would be smaller than a state page)."
        )
    return tuple(out), ideal_tokens, ideal_saved, cold


__all__ = [
    "CACHE_MODES",
    "DEFAULT_GRANULARITIES",
    "RETENTIONS",
    "SGLANG_PREFIX_RELEASES",
    "TRACE_COLUMNS",
    "VLLM_PREFIX_RELEASES",
    "CheckpointCost",
    "CopyOnWrite",
    "GranularityReuse",
    "PrefixCacheResult",
    "PrefixRules",
    "RatioAdvice",
    "TraceRequest",
    "all_mode_block_tokens",
    "checkpoint_state_bytes",
    "parse_trace_csv",
    "prefix_cache",
    "prefix_granularity_tokens",
    "prefix_rules",
    "replay_trace",
    "retained_per_sequence",
    "trace_errors",
]
