"""Our figures for Prometheus and Grafana: per deployment and per cluster, read, not recomputed.

``fleet_figures(now)`` gathers, for every deployment and cluster, what the pages and APIs show: the
predicted side from each deployment's stored capacity snapshot (``planner.snapshots``, computed by a
worker: capacity and the engine profile's allocation, the live speed correction and the latest
startup-log calibration it used, the output rate at the SLO-limited concurrency and the cost per hour
and per million output tokens at the quote in force), whether that snapshot is current, headroom
against the last poll, the last poll's cache and block checks (``EndpointPoll.calibration_ratio`` /
``block_ratios``), and per cluster its GPUs and spend so far this month (the actual part of
``planner.spend.spend_for_month``).

``exposition(figures)`` renders them in the Prometheus text format with a ``FleetCollector`` on a
fresh ``CollectorRegistry`` (no global state). Queries: a fixed handful whatever the fleet's size
(deployments with their snapshots, clusters, and spend's own). Names, units, labels and sources:
docs/grafana/README.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from fleet.errors import FIELD_ERRORS
from fleet.models import Cluster, Deployment, EndpointPoll
from fleet.models.snapshots import snapshot_of
from planner.headroom import stored_headroom
from planner.snapshots import PRICING_KIND  # the kind the stored costs are priced in
from planner.spend import spend_for_month

log = logging.getLogger(__name__)

DEPLOYMENT_LABELS = ("deployment", "cluster", "model", "sku", "engine")
CLUSTER_LABELS = ("cluster", "sku", "team", "provider")
#: The last poll's columns (``Deployment.last_metrics``) the block check reads.
CHECK_FIELDS = (
    "observed_num_blocks",
    "predicted_num_blocks",
    "observed_block_size",
    "predicted_block_size",
)


@dataclass
class DeploymentFigures:
    """One deployment's figures; ``None``: not known (not sized, never polled, no quote...)."""

    labels: dict[str, str]
    served_model_id: str
    gpus: int
    sizing_error: str = ""
    fits: bool | None = None
    capacity_sequences: int | None = None
    planning_context_tokens: int | None = None
    kv_cache_tokens: int | None = None  # as the engine logs it, per data-parallel rank
    max_concurrency: float | None = None  # requests of max_model_len, per data-parallel rank
    gpu_blocks: int | None = None  # vLLM num_gpu_blocks per GPU
    block_size_tokens: int | None = None
    requests_running: float | None = None
    headroom_sequences: int | None = None
    headroom_used_ratio: float | None = None
    last_poll_seconds: float | None = None
    up: bool | None = None
    cache_calibration_ratio: float | None = None  # observed / predicted KV tokens, last poll
    block_ratios: tuple[float, float] | None = None  # observed / predicted (blocks, block size)
    speed_factors: dict[str, float] = field(default_factory=dict)  # phase -> observed / predicted time
    speed_correction_age_s: float | None = None
    startup_ratios: dict[str, float] = field(default_factory=dict)  # figure -> predicted / logged
    output_tokens_per_s: float | None = None
    usd_per_gpu_hour: Decimal | None = None
    usd_per_hour: Decimal | None = None
    usd_per_mtok_output: Decimal | None = None
    snapshot_current: int = 0  # 1 when the stored capacity snapshot is current
    snapshot_seconds: float | None = None  # when it was computed (Unix time)


@dataclass
class ClusterFigures:
    labels: dict[str, str]
    gpus: int
    status: str
    spend_usd: Decimal | None = None
    spend_gpu_hours: Decimal | None = None


@dataclass
class FleetFigures:
    deployments: list[DeploymentFigures]
    clusters: list[ClusterFigures]
    spend_error: str = ""
    at: datetime | None = None


def _deployments() -> list[Deployment]:
    return list(
        Deployment.objects.select_related("cluster__sku", "model", "workload", "capacity_snapshot")
        .defer("api_key_encrypted", "model__source", "model__assumptions")
        .order_by("slug")
    )


def _last_poll_blocks(deployment: Deployment) -> EndpointPoll:
    """The last poll's block figures as an (unsaved) poll, whose ``block_ratios`` gives the ratios."""
    metrics = deployment.last_metrics or {}
    return EndpointPoll(**{name: metrics.get(name) for name in CHECK_FIELDS})


def _decimal(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def deployment_figures(deployments: list[Deployment], now: datetime) -> list[DeploymentFigures]:
    """Figures of ``deployments`` (select_related cluster__sku, model, workload and capacity_snapshot
    beforehand): the predicted side read from each stored capacity snapshot (``planner.snapshots``
    computed it on a worker; nothing is recomputed per scrape), the live side from the last poll."""
    out = []
    for row in stored_headroom(deployments, now):
        d = row.deployment
        sku = d.cluster.sku.slug
        labels = {"deployment": d.slug, "cluster": d.cluster.slug, "model": d.model.slug, "sku": sku}
        figures = DeploymentFigures(
            labels=labels | {"engine": d.engine},
            served_model_id=d.served_model_id,
            gpus=d.gpus,
            requests_running=row.observed,
            last_poll_seconds=d.last_polled.timestamp() if d.last_polled else None,
            up=None if d.last_polled is None else d.shown_status(now) == "up",  # a stale poll is not up
            snapshot_current=int(row.state == "current"),
            snapshot_seconds=row.computed_at.timestamp() if row.computed_at else None,
        )
        snap = snapshot_of(d)
        stored = (snap.figures if snap is not None else None) or {}
        if row.error and not stored:
            figures.sizing_error = row.error
        elif stored:
            figures.fits = row.fits
            figures.capacity_sequences = row.capacity
            figures.planning_context_tokens = stored.get("planning_context_tokens")
            figures.kv_cache_tokens = stored.get("kv_cache_tokens")
            figures.max_concurrency = stored.get("max_concurrency")
            figures.gpu_blocks = stored.get("gpu_blocks")
            figures.block_size_tokens = stored.get("block_size_tokens")
            figures.headroom_sequences = row.free
            figures.headroom_used_ratio = row.used_fraction
            figures.speed_factors = dict(stored.get("speed_factors") or {})
            fitted = stored.get("speed_correction_fitted_at")
            if fitted:
                figures.speed_correction_age_s = max(0.0, (now - datetime.fromisoformat(fitted)).total_seconds())
            figures.startup_ratios = dict(stored.get("startup_ratios") or {})
            figures.output_tokens_per_s = stored.get("output_tokens_per_s")
            figures.usd_per_gpu_hour = _decimal(stored.get("usd_per_gpu_hour"))
            figures.usd_per_hour = _decimal(stored.get("usd_per_hour"))
            figures.usd_per_mtok_output = _decimal(stored.get("usd_per_mtok_output"))
        figures.cache_calibration_ratio = d.calibration_ratio
        figures.block_ratios = _last_poll_blocks(d).block_ratios
        out.append(figures)
    return out


def cluster_figures(now: datetime) -> tuple[list[ClusterFigures], str]:
    """GPUs of every cluster, and each one's spend this month through today (one error for all when
    the month cannot be priced, e.g. a day without any quote: the spend figures are then left out)."""
    clusters = list(Cluster.objects.select_related("sku", "provider").order_by("slug"))
    rows = {
        c.slug: ClusterFigures(
            labels={"cluster": c.slug, "sku": c.sku.slug, "team": c.team, "provider": c.provider.name},
            gpus=c.total_gpus,
            status=c.status,
        )
        for c in clusters
    }
    today = now.date()
    error = ""
    try:
        spend = spend_for_month(today.year, today.month, today, PRICING_KIND, trend=False, detail=False).spend
    except FIELD_ERRORS as exc:
        error = "; ".join(m for messages in exc.errors.values() for m in messages)
        log.warning("spend so far this month not computed: %s", error)
    else:
        # A cluster with actual days no quote prices has no month-to-date figure (never a partial sum).
        unpriced = {w.cluster for w in spend.warnings if w.kind == "missing" and w.part == "actual"}
        if unpriced:
            error = "; ".join(w.message for w in spend.warnings if w.kind == "missing" and w.part == "actual")
            log.warning("spend so far this month not priced for %s", ", ".join(sorted(unpriced)))
        for c in spend.clusters:
            row = rows.get(c.cluster)
            if row is not None and c.cluster not in unpriced:  # (a cluster's history is deleted with it)
                row.spend_usd, row.spend_gpu_hours = c.actual.cost_usd, c.actual.gpu_hours
    return list(rows.values()), error


def fleet_figures(now: datetime | None = None) -> FleetFigures:
    """Every deployment's and cluster's figures at ``now`` (default: now)."""
    now = now or timezone.now()
    clusters, error = cluster_figures(now)
    return FleetFigures(deployment_figures(_deployments(), now), clusters, error, now)


def _gauge(name: str, doc: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


def _one(attr: str) -> Callable[[Any], list[tuple[tuple[str, ...], Any]]]:
    return lambda row: [((), getattr(row, attr))]


def _flag(attr: str) -> Callable[[Any], list[tuple[tuple[str, ...], Any]]]:
    return lambda row: [((), None if getattr(row, attr) is None else int(getattr(row, attr)))]


#: Deployment gauges: (name after ``fleetcap_deployment_``, help, samples of a row, extra label names).
#: A sample whose value is None (not known) is left out, never shown as 0.
DEPLOYMENT_GAUGES: tuple[tuple[str, str, Callable[[DeploymentFigures], list], tuple[str, ...]], ...] = (
    ("gpus", "GPUs the deployment occupies (replicas x tp x pp x dp).", _one("gpus"), ()),
    ("capacity_snapshot_current", "1 when the stored capacity snapshot the predicted figures come from is "
     "current, 0 when it is stale, failed or not computed yet.", _one("snapshot_current"), ()),
    ("capacity_snapshot_timestamp_seconds", "When the stored capacity snapshot was computed (Unix time).",
     _one("snapshot_seconds"), ()),
    ("sizing_error", "1 when the sizing engine cannot model the deployment.",
     lambda r: [((), int(bool(r.sizing_error)))], ()),
    ("fits", "1 when the weights fit (the sizing engine), 0 when they do not.", _flag("fits"), ()),
    ("capacity_sequences", "Concurrent sequences the deployment admits at its planning context (max_model_len), "
     "whole deployment, its engine's limits applied (the stored snapshot's; planner.engine.Serving).",
     _one("capacity_sequences"), ()),
    ("planning_context_tokens", "Context length the capacity is quoted at (tokens).",
     _one("planning_context_tokens"), ()),
    ("kv_cache_tokens", "KV cache tokens the engine profile predicts the engine logs (vLLM 'GPU KV cache "
     "size', SGLang max_total_num_tokens), per data-parallel rank.", _one("kv_cache_tokens"), ()),
    ("max_concurrency", "Requests of max_model_len the engine profile predicts held at once, per "
     "data-parallel rank (vLLM 'Maximum concurrency').", _one("max_concurrency"), ()),
    ("gpu_blocks", "KV cache blocks (pages) per GPU the engine profile predicts (vLLM num_gpu_blocks).",
     _one("gpu_blocks"), ()),
    ("block_size_tokens", "KV block (page) size the engine profile uses (tokens).", _one("block_size_tokens"), ()),
    ("requests_running", "Requests running at the last poll (the poller's reading).", _one("requests_running"), ()),
    ("headroom_sequences", "Predicted capacity less the requests running at the last poll.",
     _one("headroom_sequences"), ()),
    ("headroom_used_ratio", "Requests running at the last poll over predicted capacity, 0..1.",
     _one("headroom_used_ratio"), ()),
    ("up", "1 when the last poll found the endpoint up and is not stale, else 0.", _flag("up"), ()),
    ("last_poll_timestamp_seconds", "When the deployment was last polled (Unix time).", _one("last_poll_seconds"), ()),
    ("kv_cache_calibration_ratio", "KV cache tokens the engine publishes over the sizing engine's prediction, "
     "at the last poll (1 = exact; pages flag it outside 0.9-1.1).", _one("cache_calibration_ratio"), ()),
    ("block_ratio", "vLLM's cache_config_info over the vLLM profile's prediction at the last poll, per dimension.",
     lambda r: list(zip((("num_gpu_blocks",), ("block_size",)), r.block_ratios or (), strict=False)),
     ("dimension",)),
    ("speed_correction_factor", "Live speed correction in use: observed over predicted time (decode: TPOT; "
     "prefill: TTFT less decode), 1 = as modelled.", lambda r: [((k,), v) for k, v in r.speed_factors.items()],
     ("phase",)),
    ("speed_correction_age_seconds", "Age of the speed correction in use.", _one("speed_correction_age_s"), ()),
    ("startup_calibration_ratio", "Latest startup-log calibration: predicted over logged, per figure the log "
     "states.", lambda r: [((k,), v) for k, v in r.startup_ratios.items()], ("figure",)),
    ("output_tokens_per_second", "Output tokens/s of the whole deployment the throughput model predicts at its "
     "SLO-limited concurrency (with the live speed correction); absent when it does not fit memory.",
     _one("output_tokens_per_s"), ()),
    ("gpu_price_usd_per_gpu_hour", f"The deployment's cluster's {PRICING_KIND} price in force today: its provider's "
     "own quote, else that provider's public list price (USD per GPU-hour); absent when unpriced.",
     _one("usd_per_gpu_hour"), ()),
    ("cost_usd_per_hour", "What the deployment's GPUs cost an hour at that price (USD); absent when unpriced.",
     _one("usd_per_hour"), ()),
    ("cost_usd_per_million_output_tokens", "Rent over the output tokens produced at full use of the predicted "
     "rate (USD per 1e6 output tokens).", _one("usd_per_mtok_output"), ()),
)  # fmt: skip


class FleetCollector(Collector):
    """A prometheus-client collector over one ``FleetFigures``: one gauge family per figure (every
    family is yielded, with its HELP and TYPE, even when no deployment has the figure)."""

    def __init__(self, figures: FleetFigures) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        yield from self._deployments(self.figures.deployments)
        yield from self._clusters(self.figures.clusters)
        ok = _gauge("fleetcap_spend_ok", "1 when this month's spend could be priced, else 0.", ())
        ok.add_metric([], 0 if self.figures.spend_error else 1)
        yield ok

    def _deployments(self, rows: list[DeploymentFigures]) -> Iterator[Metric]:
        labels = DEPLOYMENT_LABELS
        info = _gauge("fleetcap_deployment_info", "A registered deployment (always 1).", (*labels, "served_model_id"))
        for row in rows:
            info.add_metric([*(row.labels[k] for k in labels), row.served_model_id], 1)
        yield info
        for name, doc, samples, extra in DEPLOYMENT_GAUGES:
            gauge = _gauge(f"fleetcap_deployment_{name}", doc, labels + extra)
            for row in rows:
                base = [row.labels[k] for k in labels]
                for more, value in samples(row):
                    if value is not None:
                        gauge.add_metric(base + list(more), float(value))
            yield gauge

    def _clusters(self, rows: list[ClusterFigures]) -> Iterator[Metric]:
        labels = CLUSTER_LABELS
        gpus = _gauge("fleetcap_cluster_gpus", "GPUs in the cluster (nodes x GPUs per node).", (*labels, "status"))
        spend = _gauge(
            "fleetcap_cluster_spend_month_to_date_usd",
            "GPU spend this calendar month through today (UTC, whole days), USD.",
            labels,
        )
        hours = _gauge(
            "fleetcap_cluster_gpu_hours_month_to_date", "GPU-hours billed this calendar month through today.", labels
        )
        for row in rows:
            base = [row.labels[k] for k in labels]
            gpus.add_metric([*base, row.status], row.gpus)
            if row.spend_usd is not None:
                spend.add_metric(base, float(row.spend_usd))
                hours.add_metric(base, float(row.spend_gpu_hours))
        yield from (gpus, spend, hours)


def exposition(figures: FleetFigures) -> bytes:
    """The figures in the Prometheus text format (``CONTENT_TYPE_LATEST``), from a fresh registry."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(figures))
    return generate_latest(registry)
