"""One normalised scrape (:class:`MetricsSnapshot`) and its cumulative histograms (:class:`HistogramData`).

Both round-trip through JSON-safe dicts (``to_dict``/``from_dict``) for storage; no NaN or infinity
is ever written. :mod:`fleet.polling.metrics` builds snapshots from ``/metrics`` pages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any


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
            "sum": finite(self.sum),
            "count": finite(self.count),
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
    ``num_gpu_blocks`` and ``block_size_tokens`` are vLLM's ``cache_config_info`` labels (blocks per
    GPU worker, tokens per block) of its first engine;
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
    num_gpu_blocks: int | None = None
    block_size_tokens: int | None = None
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
                data[f.name] = finite(value)
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


def finite(value: float | None) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value
