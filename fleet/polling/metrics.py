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
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

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

#: Counter fields compared by ``derive`` to detect a reset.
COUNTER_FIELDS = ("prefix_cache_queries", "prefix_cache_hits", "prompt_tokens", "generation_tokens", "preemptions")


class MetricsParseError(ValueError):
    """The ``/metrics`` body is not Prometheus text."""


@dataclass(frozen=True)
class HistogramData:
    """A cumulative histogram: ``buckets`` are (upper bound, cumulative count) sorted by bound, the
    last bound ``inf``; ``sum`` is in the observed unit (seconds here), ``count`` observations."""

    buckets: tuple[tuple[float, float], ...]
    sum: float
    count: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: the infinite bound is written ``"+Inf"``."""
        return {
            "buckets": [["+Inf" if math.isinf(le) else le, n] for le, n in self.buckets],
            "sum": _finite(self.sum),
            "count": _finite(self.count),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HistogramData:
        """Inverse of :meth:`to_dict`."""
        buckets = tuple((float(le), float(n)) for le, n in data.get("buckets", []))
        return cls(buckets=buckets, sum=float(data.get("sum") or 0.0), count=float(data.get("count") or 0.0))


@dataclass(frozen=True)
class MetricsSnapshot:
    """One scrape, normalised. None means the engine does not publish the signal.

    Counts are requests; ``kv_cache_usage`` and ``kv_cache_usage_max`` are fractions 0..1;
    ``*_tokens`` and ``prefix_cache_*`` are cumulative token counters (vLLM before V1 counted
    prefix-cache queries and hits in blocks: the hit rate is unaffected); ``preemptions`` is a
    cumulative count (SGLang: retracted requests); ``ttft`` and ``itl`` histograms are in seconds;
    ``cache_capacity_tokens`` is the KV-cache capacity the engine reports, in tokens;
    ``scraped_at`` and ``process_start_time_s`` are Unix times in seconds.
    """

    engine: str | None = None
    scraped_at: float | None = None
    shards: int = 0
    requests_running: float | None = None
    requests_waiting: float | None = None
    kv_cache_usage: float | None = None
    kv_cache_usage_max: float | None = None
    kv_cache_used_tokens: float | None = None
    cache_capacity_tokens: int | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    reported_prefix_hit_rate: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    preemptions: float | None = None
    ttft: HistogramData | None = None
    itl: HistogramData | None = None
    process_start_time_s: float | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (no NaN or infinity) for storage; see :meth:`from_dict`."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, HistogramData):
                data[f.name] = value.to_dict()
            elif isinstance(value, float):
                data[f.name] = _finite(value)
            elif isinstance(value, dict):
                data[f.name] = dict(value)
            else:
                data[f.name] = value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> MetricsSnapshot | None:
        """Rebuild a snapshot stored with :meth:`to_dict` (unknown keys are ignored)."""
        if not data:
            return None
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        for name in ("ttft", "itl"):
            if kwargs.get(name) is not None:
                kwargs[name] = HistogramData.from_dict(kwargs[name])
        return cls(**kwargs)


@dataclass(frozen=True)
class DerivedMetrics:
    """What happened between two snapshots.

    Rates are tokens per second over ``interval_s`` (seconds); ``prefix_cache_hit_rate`` is hits
    over queries in the interval (0..1); ``preemptions`` a count in the interval; latencies in
    seconds, estimated from histogram bucket differences like Prometheus ``histogram_quantile``.
    ``counter_reset`` says a counter went down or the process start time changed (an engine
    restart): then, as Prometheus ``rate()`` does, the current values are the interval's deltas
    (counts since the restart), so rates are never negative (and under-estimate, not over-).
    ``first_scrape`` is True when there was nothing to compare with (only gauges are meaningful).
    """

    interval_s: float | None = None
    first_scrape: bool = True
    counter_reset: bool = False
    prompt_tokens_per_s: float | None = None
    generation_tokens_per_s: float | None = None
    prefix_cache_hit_rate: float | None = None
    preemptions: float | None = None
    requests_started: float | None = None
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    ttft_mean_s: float | None = None
    itl_p50_s: float | None = None
    itl_p95_s: float | None = None
    itl_mean_s: float | None = None
    requests_running: float | None = None
    requests_waiting: float | None = None
    kv_cache_usage: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (no NaN or infinity)."""
        return {k: _finite(v) if isinstance(v, float) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> DerivedMetrics | None:
        """Inverse of :meth:`to_dict`."""
        if not data:
            return None
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _finite(value: float | None) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

Labels = tuple[tuple[str, str], ...]
Series = dict[str, list[tuple[dict[str, str], float]]]


def _collect(text: str) -> Series:
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


def _detect_engine(series: Series) -> str | None:
    for prefix, engine in (("vllm:", "vllm"), ("sglang:", "sglang"), ("llamacpp:", "llamacpp")):
        if any(name.startswith(prefix) for name in series):
            return engine
    return None


def parse_metrics(text: str | bytes, *, scraped_at: float | None = None) -> MetricsSnapshot:
    """Normalise one ``/metrics`` page. ``scraped_at`` is the scrape's Unix time in seconds.

    Raises :class:`MetricsParseError` when the text is not Prometheus text. A page without any
    known metric gives a snapshot whose fields are all None.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MetricsParseError(f"not UTF-8 text: {exc}") from None
    series = _collect(text)
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

    return MetricsSnapshot(
        engine=_detect_engine(series),
        scraped_at=scraped_at,
        shards=shards,
        cache_capacity_tokens=capacity,
        sources=sources,
        ttft=histograms.get("ttft"),
        itl=histograms.get("itl"),
        **values,
    )


# --------------------------------------------------------------------------------------------
# Rates and percentiles
# --------------------------------------------------------------------------------------------


def histogram_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """The ``q`` quantile (0..1) of cumulative ``buckets``, as Prometheus ``histogram_quantile``.

    Linear interpolation inside the bucket holding the rank; the first bucket starts at 0 (unless
    its bound is not positive); a rank in the ``+Inf`` bucket gives the highest finite bound.
    None when there are no observations.
    """
    ordered = sorted(buckets)
    if not ordered or not math.isinf(ordered[-1][0]):
        return None
    # Non-monotonic counts (a scrape racing an update) are flattened, as Prometheus does.
    fixed: list[tuple[float, float]] = []
    for le, count in ordered:
        fixed.append((le, max(count, fixed[-1][1]) if fixed else count))
    total = fixed[-1][1]
    if total <= 0 or len(fixed) < 2:
        return None
    rank = q * total
    index = next((i for i, (_, count) in enumerate(fixed[:-1]) if count >= rank), len(fixed) - 1)
    if index == len(fixed) - 1:
        return fixed[-2][0]
    upper, count = fixed[index]
    if index == 0:
        if upper <= 0:
            return upper
        lower, below = 0.0, 0.0
    else:
        lower, below = fixed[index - 1]
    in_bucket = count - below
    if in_bucket <= 0:
        return upper
    return lower + (upper - lower) * (rank - below) / in_bucket


def _hist_delta(prev: HistogramData | None, cur: HistogramData | None, reset: bool) -> HistogramData | None:
    if cur is None:
        return None
    if prev is None or reset:
        return cur
    prev_counts = dict(prev.buckets)
    if set(prev_counts) != {le for le, _ in cur.buckets}:
        return None  # bucket layout changed: no meaningful difference
    buckets = tuple((le, n - prev_counts[le]) for le, n in cur.buckets)
    return HistogramData(buckets=buckets, sum=cur.sum - prev.sum, count=cur.count - prev.count)


def _histogram_went_down(prev: HistogramData | None, cur: HistogramData | None) -> bool:
    if prev is None or cur is None:
        return False
    return cur.count < prev.count or cur.sum < prev.sum - 1e-9


def _latency(delta: HistogramData | None) -> tuple[float | None, float | None, float | None]:
    if delta is None or delta.count <= 0:
        return None, None, None
    mean = delta.sum / delta.count if delta.sum >= 0 else None
    return histogram_quantile(0.50, delta.buckets), histogram_quantile(0.95, delta.buckets), mean


def derive(prev: MetricsSnapshot | None, cur: MetricsSnapshot, interval_s: float | None = None) -> DerivedMetrics:
    """Rates, hit rate, preemptions and latency percentiles between ``prev`` and ``cur``.

    ``interval_s`` (seconds) defaults to the difference of the snapshots' ``scraped_at``.
    Without ``prev`` (first scrape) only the gauges are filled in; the histograms' percentiles are
    then over the engine's whole life. With a counter reset the current values are the deltas.
    """
    gauges = {
        "requests_running": cur.requests_running,
        "requests_waiting": cur.requests_waiting,
        "kv_cache_usage": cur.kv_cache_usage,
    }
    if prev is None or (prev.engine and cur.engine and prev.engine != cur.engine):
        ttft = _latency(cur.ttft)
        itl = _latency(cur.itl)
        return DerivedMetrics(
            first_scrape=True,
            ttft_p50_s=ttft[0],
            ttft_p95_s=ttft[1],
            ttft_mean_s=ttft[2],
            itl_p50_s=itl[0],
            itl_p95_s=itl[1],
            itl_mean_s=itl[2],
            **gauges,
        )

    if interval_s is None and prev.scraped_at is not None and cur.scraped_at is not None:
        interval_s = cur.scraped_at - prev.scraped_at
    if interval_s is not None and interval_s <= 0:
        interval_s = None

    reset = any(
        getattr(prev, name) is not None and getattr(cur, name) is not None and getattr(cur, name) < getattr(prev, name)
        for name in COUNTER_FIELDS
    )
    reset = reset or _histogram_went_down(prev.ttft, cur.ttft) or _histogram_went_down(prev.itl, cur.itl)
    if (
        prev.process_start_time_s is not None
        and cur.process_start_time_s is not None
        and abs(cur.process_start_time_s - prev.process_start_time_s) > 1e-6
    ):
        reset = True

    def delta(name: str) -> float | None:
        now, before = getattr(cur, name), getattr(prev, name)
        if now is None:
            return None
        if reset:
            return now
        if before is None:
            return None
        return now - before

    def rate(name: str) -> float | None:
        d = delta(name)
        return None if d is None or interval_s is None else d / interval_s

    queries, hits = delta("prefix_cache_queries"), delta("prefix_cache_hits")
    hit_rate = None
    if queries is not None and hits is not None and queries > 0:
        hit_rate = min(max(hits / queries, 0.0), 1.0)
    ttft_delta = _hist_delta(prev.ttft, cur.ttft, reset)
    ttft = _latency(ttft_delta)
    itl = _latency(_hist_delta(prev.itl, cur.itl, reset))
    return DerivedMetrics(
        interval_s=interval_s,
        first_scrape=False,
        counter_reset=reset,
        prompt_tokens_per_s=rate("prompt_tokens"),
        generation_tokens_per_s=rate("generation_tokens"),
        prefix_cache_hit_rate=hit_rate,
        preemptions=delta("preemptions"),
        requests_started=ttft_delta.count if ttft_delta is not None else None,
        ttft_p50_s=ttft[0],
        ttft_p95_s=ttft[1],
        ttft_mean_s=ttft[2],
        itl_p50_s=itl[0],
        itl_p95_s=itl[1],
        itl_mean_s=itl[2],
        **gauges,
    )
