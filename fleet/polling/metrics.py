"""Prometheus text from vLLM, SGLang and llama.cpp, normalised into one snapshot, and rates over time.

``parse_metrics(text)`` reads a ``/metrics`` page (prometheus-client's text parser) into a
:class:`MetricsSnapshot`; ``derive(prev, cur)`` turns two snapshots into per-interval rates, a
prefix-cache hit rate and latency percentiles (:class:`DerivedMetrics`).

Name mapping, preference order and aggregation rules are in docs/polling.md. In short:

* the current name wins over a deprecated one when a server exports both (vLLM 0.9 to 0.10 do);
* ``*_created`` series are ignored;
* series that differ only in a *replica* label (``tp_rank``, ``pp_rank``, ``moe_ep_rank``,
  ``attn_tp_rank``: ranks of one scheduler, which all see the same batch) are reduced with ``max``;
  series that differ in any other label (vLLM's ``engine``, SGLang's ``dp_rank``, ``engine_type``,
  ``model_name``) are separate engines ("shards"): counters and counts are summed across them,
  the KV-cache usage fraction is averaged (``kv_cache_usage``, equal to the pooled usage when the
  engines' pools are equal, as with data parallelism) and its maximum kept (``kv_cache_usage_max``);
* histograms: per shard the replica with the most observations, then buckets summed across shards.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from .metrics_derive import COUNTER_FIELDS, DerivedMetrics, derive, histogram_quantile
from .metrics_snapshot import HistogramData, MetricsSnapshot

__all__ = [
    "COUNTER_FIELDS",
    "GENERATION_TOKENS",
    "ITL",
    "KV_USAGE",
    "KV_USED_TOKENS",
    "METRIC_FAMILIES",
    "PREEMPTIONS",
    "PREFIX_HITS",
    "PREFIX_QUERIES",
    "PROCESS_START",
    "PROMPT_TOKENS",
    "REPLICA_LABELS",
    "RUNNING",
    "SGLANG_CACHED_TOKENS",
    "SGLANG_CAPACITY",
    "SGLANG_HIT_RATE",
    "TTFT",
    "VLLM_CACHE_CONFIG",
    "WAITING",
    "DerivedMetrics",
    "HistogramData",
    "MetricsParseError",
    "MetricsSnapshot",
    "SeriesHeads",
    "derive",
    "histogram_quantile",
    "parse_metrics",
]

#: Labels that tell ranks of one scheduler apart (they repeat the scheduler's numbers).
REPLICA_LABELS = frozenset({"tp_rank", "pp_rank", "moe_ep_rank", "attn_tp_rank", "attn_cp_rank"})

# Candidate names per field, best first. The first name with at least one sample is used.
RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing")
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred")
KV_USAGE = (
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
    "llamacpp:kv_cache_usage_ratio",
)
KV_USED_TOKENS = ("sglang:num_used_tokens", "llamacpp:kv_cache_tokens")
PREFIX_QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
PREFIX_HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
PROMPT_TOKENS = ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total", "llamacpp:prompt_tokens_total")
GENERATION_TOKENS = (
    "vllm:generation_tokens_total",
    "sglang:generation_tokens_total",
    "llamacpp:tokens_predicted_total",
)
PREEMPTIONS = ("vllm:num_preemptions_total", "sglang:num_retracted_requests_total")
TTFT = ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds")
ITL = (
    "vllm:inter_token_latency_seconds",
    "vllm:time_per_output_token_seconds",
    "sglang:inter_token_latency_seconds",
    "sglang:time_per_output_token_seconds",
)
SGLANG_CACHED_TOKENS = "sglang:cached_tokens_total"
SGLANG_CAPACITY = "sglang:max_total_num_tokens"
SGLANG_HIT_RATE = "sglang:cache_hit_rate"
VLLM_CACHE_CONFIG = "vllm:cache_config_info"
PROCESS_START = "process_start_time_seconds"


#: Every sample name ``parse_metrics`` reads. Lines of other samples are dropped before the parser
#: sees them: a vLLM page is mostly histograms nobody here reads, and prometheus-client's parser costs
#: tens of microseconds a sample (docs/polling.md, "Parsing cost").
READ_SAMPLES = frozenset(
    (*RUNNING, *WAITING, *KV_USAGE, *KV_USED_TOKENS, *PREFIX_QUERIES, *PREFIX_HITS, *PROMPT_TOKENS,
     *GENERATION_TOKENS, *PREEMPTIONS, SGLANG_CACHED_TOKENS, SGLANG_CAPACITY, SGLANG_HIT_RATE, VLLM_CACHE_CONFIG,
     PROCESS_START)
) | {f"{base}{suffix}" for base in (*TTFT, *ITL) for suffix in ("_bucket", "_sum", "_count")}  # fmt: skip

# One pass in C over the page: the lines that start (after blanks) with a read sample's name followed
# by its labels or a blank. Longest names first, so that a name never stops at a shorter prefix.
_READ_LINES = re.compile(
    r"^[ \t]*(?:" + "|".join(re.escape(n) for n in sorted(READ_SAMPLES, key=len, reverse=True)) + r")[{ \t].*$",
    re.MULTILINE,
)
_ENGINE_PREFIXES = (("vllm", "vllm:"), ("sglang", "sglang:"), ("llamacpp", "llamacpp:"))
#: The families of metric names this module reads (the names above, by prefix). Which serving engine
#: exports which family is the serving-engine registry's (``planner.engine.serving_engines``,
#: ``metric_family``); tests/engine/test_serving_engine_registry.py checks each is one of these.
METRIC_FAMILIES: tuple[str, ...] = tuple(family for family, _prefix in _ENGINE_PREFIXES)


class MetricsParseError(ValueError):
    """The ``/metrics`` body is not Prometheus text."""


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

Labels = tuple[tuple[str, str], ...]
Series = dict[str, list[tuple[dict[str, str], float]]]


class SeriesHeads:
    """Series heads (``name{labels}``) parsed by prometheus-client's text parser, remembered for the
    parses that share this object, at most ``limit`` of them (then further heads are parsed each time).

    The poll cycle keeps one for its polls (``fleet/poller.py``): a fleet's engines repeat the same
    few hundred heads (one set per model and engine version), so each is parsed once a cycle instead
    of once a page (docs/polling.md, "Parsing cost"). Its owner drops it; nothing is kept globally.
    """

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self._known: dict[str, tuple[str, dict[str, str]]] = {}

    def __len__(self) -> int:
        return len(self._known)

    def parse(self, head: str) -> tuple[str, dict[str, str]]:
        """A sample line's name and labels (the labels dict is shared: copy before changing it)."""
        known = self._known.get(head)
        if known is None:
            sample = next(iter(text_string_to_metric_families(f"{head} 0\n"))).samples[0]
            known = (sample.name, dict(sample.labels))
            if len(self._known) < self.limit:
                self._known[head] = known
        return known


def _collect(text: str, heads: SeriesHeads) -> Series:
    """Samples by name (``_created`` series skipped) of the lines that carry a read sample.

    Only those lines are read. Each line's head (``name{labels}``) is parsed by prometheus-client's
    parser (through ``heads``); the value after it is read as that parser reads values. A page with
    none of those lines is parsed whole by prometheus-client, so that a reply that is not Prometheus
    text at all (an HTML error page) is still reported as such.
    """
    lines = _READ_LINES.findall(text)
    if not lines:
        return _parse(text)
    series: Series = defaultdict(list)
    try:
        for line in lines:
            line = line.strip()
            end = line.rfind("}")  # a value never holds a brace: the last one closes the labels
            if end >= 0:
                head, rest = line[: end + 1], line[end + 1 :]
            else:
                head, _, rest = line.replace("\t", " ").partition(" ")
            name, labels = heads.parse(head)
            if not name.endswith("_created"):
                series[name].append((dict(labels), _value(rest)))
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise MetricsParseError(f"not Prometheus text: {str(exc)[:200]}") from None
    return series


def _value(rest: str) -> float:
    """The value of a sample line (what follows the head; a timestamp after it is ignored), read
    as prometheus-client reads values: a float, no digit separators."""
    parts = rest.split()
    if not parts or "_" in parts[0]:
        raise ValueError(f"invalid sample value {rest.strip()[:40]!r}")
    return float(parts[0])


def _parse(text: str) -> Series:
    series: Series = defaultdict(list)
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.endswith("_created"):
                    continue
                series[sample.name].append((dict(sample.labels), float(sample.value)))
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise MetricsParseError(f"not Prometheus text: {str(exc)[:200]}") from None
    return series


def _shard_key(labels: dict[str, str], drop: Iterable[str] = ()) -> Labels:
    dropped = REPLICA_LABELS | set(drop)
    return tuple(sorted((k, v) for k, v in labels.items() if k not in dropped))


def _per_shard(samples: list[tuple[dict[str, str], float]]) -> list[float]:
    """One value per shard: the max over its replicas (NaN samples ignored)."""
    shards: dict[Labels, float] = {}
    for labels, value in samples:
        if math.isnan(value):
            continue
        key = _shard_key(labels)
        shards[key] = max(shards.get(key, value), value)
    return list(shards.values())


def _pick(series: Series, names: Iterable[str]) -> tuple[str, list[float]] | None:
    for name in names:
        values = _per_shard(series.get(name, []))
        if values:
            return name, values
    return None


def _histogram(series: Series, base: str) -> HistogramData | None:
    buckets = series.get(f"{base}_bucket", [])
    if not buckets:
        return None
    # shard -> replica -> {le: count}
    per: dict[Labels, dict[Labels, dict[float, float]]] = defaultdict(lambda: defaultdict(dict))
    for labels, value in buckets:
        le = labels.get("le")
        if le is None:
            continue
        replica = tuple(sorted((k, v) for k, v in labels.items() if k in REPLICA_LABELS))
        per[_shard_key(labels, drop=("le",))][replica][float(le)] = value
    sums = {(_shard_key(lb), tuple(sorted((k, v) for k, v in lb.items() if k in REPLICA_LABELS))): v
            for lb, v in series.get(f"{base}_sum", [])}  # fmt: skip
    chosen: list[tuple[dict[float, float], float]] = []
    for shard, replicas in per.items():
        replica, counts = max(replicas.items(), key=lambda item: max(item[1].values(), default=0.0))
        chosen.append((counts, sums.get((shard, replica), 0.0)))
    common = set.intersection(*(set(counts) for counts, _ in chosen))
    if not common:
        return None
    bounds = sorted(common)
    merged = [(le, sum(counts[le] for counts, _ in chosen)) for le in bounds]
    if not math.isinf(bounds[-1]):
        merged.append((math.inf, merged[-1][1]))
    return HistogramData(buckets=tuple(merged), sum=sum(s for _, s in chosen), count=merged[-1][1])


def _vllm_capacity(series: Series) -> int | None:
    total = 0
    seen: set[Labels] = set()
    for labels, _value in series.get(VLLM_CACHE_CONFIG, []):
        key = _shard_key(labels, drop=("num_gpu_blocks", "block_size"))
        try:
            blocks = int(float(labels.get("num_gpu_blocks", "")))
            block_size = int(float(labels.get("block_size", "")))
        except ValueError:
            continue  # "None" before the engine sized its cache
        if key in seen:
            continue
        seen.add(key)
        total += blocks * block_size
    return total or None


def _vllm_blocks(series: Series) -> tuple[int, int] | None:
    """``(num_gpu_blocks, block_size)`` of the first engine's ``cache_config_info`` (every data-parallel
    engine allocates alike); None before the engine sized its cache (labels "None")."""
    for labels, _value in sorted(series.get(VLLM_CACHE_CONFIG, []), key=lambda item: sorted(item[0].items())):
        try:
            return int(float(labels.get("num_gpu_blocks", ""))), int(float(labels.get("block_size", "")))
        except ValueError:
            continue
    return None


def _detect_engine(text: str) -> str | None:
    """The engine whose metric-name prefix starts a sample line (comments do not count)."""
    for engine, prefix in _ENGINE_PREFIXES:
        if re.search(rf"^[ \t]*{prefix}", text, re.MULTILINE):
            return engine
    return None


def parse_metrics(
    text: str | bytes, *, scraped_at: float | None = None, heads: SeriesHeads | None = None
) -> MetricsSnapshot:
    """Normalise one ``/metrics`` page. ``scraped_at`` is the scrape's Unix time in seconds; ``heads``
    the series heads parsed by earlier pages (:class:`SeriesHeads`; None: this page's own).

    Raises :class:`MetricsParseError` when the text is not Prometheus text. A page without any
    known metric gives a snapshot whose fields are all None.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MetricsParseError(f"not UTF-8 text: {exc}") from None
    series = _collect(text, heads if heads is not None else SeriesHeads())
    sources: dict[str, str] = {}
    values: dict[str, Any] = {}
    shards = 0

    def take(field_name: str, names: Iterable[str], how: str) -> None:
        nonlocal shards
        picked = _pick(series, names)
        if picked is None:
            return
        name, per_shard = picked
        sources[field_name] = name
        shards = max(shards, len(per_shard))
        if how == "sum":
            values[field_name] = float(sum(per_shard))
        elif how == "mean":
            values[field_name] = float(sum(per_shard) / len(per_shard))
            values[f"{field_name}_max"] = float(max(per_shard))
        else:
            values[field_name] = float(max(per_shard))

    take("requests_running", RUNNING, "sum")
    take("requests_waiting", WAITING, "sum")
    take("kv_cache_usage", KV_USAGE, "mean")
    take("kv_cache_used_tokens", KV_USED_TOKENS, "sum")
    take("prefix_cache_queries", PREFIX_QUERIES, "sum")
    take("prefix_cache_hits", PREFIX_HITS, "sum")
    take("prompt_tokens", PROMPT_TOKENS, "sum")
    take("generation_tokens", GENERATION_TOKENS, "sum")
    take("preemptions", PREEMPTIONS, "sum")
    take("reported_prefix_hit_rate", (SGLANG_HIT_RATE,), "max")
    take("process_start_time_s", (PROCESS_START,), "max")

    # SGLang counts cached prompt tokens; its prefix-cache queries are all prompt tokens.
    if "prefix_cache_queries" not in values and series.get(SGLANG_CACHED_TOKENS):
        take("prefix_cache_hits", (SGLANG_CACHED_TOKENS,), "sum")
        if "prompt_tokens" in values:
            values["prefix_cache_queries"] = values["prompt_tokens"]
            sources["prefix_cache_queries"] = sources["prompt_tokens"]

    capacity = _vllm_capacity(series)
    if capacity is not None:
        sources["cache_capacity_tokens"] = VLLM_CACHE_CONFIG
    else:
        picked = _pick(series, (SGLANG_CAPACITY,))
        if picked is not None and sum(picked[1]) > 0:
            capacity = int(sum(picked[1]))
            sources["cache_capacity_tokens"] = SGLANG_CAPACITY
    if (
        "kv_cache_used_tokens" not in values
        and capacity
        and values.get("kv_cache_usage") is not None
        and sources.get("kv_cache_usage", "").startswith("vllm:")
    ):
        values["kv_cache_used_tokens"] = values["kv_cache_usage"] * capacity

    histograms: dict[str, HistogramData] = {}
    for field_name, names in (("ttft", TTFT), ("itl", ITL)):
        for name in names:
            hist = _histogram(series, name)
            if hist is not None:
                histograms[field_name] = hist
                sources[field_name] = name
                break

    blocks = _vllm_blocks(series)
    return MetricsSnapshot(
        engine=_detect_engine(text),
        scraped_at=scraped_at,
        shards=shards,
        cache_capacity_tokens=capacity,
        num_gpu_blocks=blocks[0] if blocks else None,
        block_size_tokens=blocks[1] if blocks else None,
        sources=sources,
        ttft=histograms.get("ttft"),
        itl=histograms.get("itl"),
        **values,
    )
