"""Endpoint polling without Django: the outbound-request guard, the poller, metrics normalisation.

The Django side (models, Celery tasks, forms) calls these functions with plain values and stores
``PollOutcome.to_dict()``; nothing here imports Django. See docs/polling.md.
"""

from .client import PollOutcome, PollStatus, poll_endpoint, poll_endpoint_async, public_outcome
from .guard import (
    DEFAULT_ALLOWED_NETWORKS,
    DEFAULT_LOOPBACK_REFUSED_PORTS,
    FetchResult,
    UrlRefused,
    check_url,
    display_url,
    fetch,
    fetch_async,
    parse_networks,
)
from .metrics import (
    DerivedMetrics,
    HistogramData,
    MetricsParseError,
    MetricsSnapshot,
    SeriesHeads,
    derive,
    parse_metrics,
)

__all__ = [
    "DEFAULT_ALLOWED_NETWORKS",
    "DEFAULT_LOOPBACK_REFUSED_PORTS",
    "DerivedMetrics",
    "FetchResult",
    "HistogramData",
    "MetricsParseError",
    "MetricsSnapshot",
    "PollOutcome",
    "PollStatus",
    "SeriesHeads",
    "UrlRefused",
    "check_url",
    "derive",
    "display_url",
    "fetch",
    "fetch_async",
    "parse_metrics",
    "parse_networks",
    "poll_endpoint",
    "poll_endpoint_async",
    "public_outcome",
]
