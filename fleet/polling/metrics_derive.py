"""Rates and percentiles between two snapshots: ``derive(prev, cur)`` and :class:`DerivedMetrics`.

Counter deltas become per-second rates, a prefix-cache hit rate and a preemption count; histogram
bucket differences give latency percentiles like Prometheus ``histogram_quantile``. Reset rules are
in docs/polling.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

from .metrics_snapshot import HistogramData, MetricsSnapshot, finite

#: Counter fields compared by ``derive`` to detect a reset.
COUNTER_FIELDS = ("prefix_cache_queries", "prefix_cache_hits", "prompt_tokens", "generation_tokens", "preemptions")


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
        return {k: finite(v) if isinstance(v, float) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> DerivedMetrics | None:
        """Inverse of :meth:`to_dict`."""
        if not data:
            return None
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


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
