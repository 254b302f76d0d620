"""Capacity snapshots: each enabled deployment's capacity, speed and cost, computed by a worker and
stored (``fleet.CapacitySnapshot``), so pages, the API and ``/metrics`` read instead of recompute.

What a snapshot holds (``compute_figures``): whether the weights fit and the per-GPU memory envelope,
the engine profile's KV-cache tokens, blocks and max concurrency at the deployment's
``max_model_len`` (``Deployment.sizing()``: the sizing engine with vLLM's or SGLang's allocator),
the predicted TPOT and TTFT at the batch the last poll observed (``planner.corrections``: with the
deployment's live speed correction when one is fitted), its output rate at the SLO-limited
concurrency and its cost per hour and per million output tokens at the GPU quote in force (as rent vs
API prices it, ``planner.metrics`` before snapshots). Every figure comes from the engine; this module
only gathers the inputs, dates them and stores.

When it is recomputed: ``request_refresh`` marks the affected snapshots stale and records one outbox
message (``planner.refresh_answers``) in the same transaction as the change that calls it (the signal
handlers in ``planner.signals``: a deployment, its cluster, SKU, model or workload, a GPU quote, an API
price, a speed correction or a calibration), so the work is never lost; beat sends
``planner.refresh_answers`` every 5 minutes for the whole fleet, fanned out in batches of
``SNAPSHOT_BATCH``. ``refresh_snapshots`` is idempotent: recomputing twice stores the same figures,
and a recomputation that started before a newer change leaves the snapshot stale for the newer one's
own run. A recomputation that raises keeps the previous figures, marked failed with the error.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fleet import outbox
from fleet.errors import FIELD_ERRORS
from fleet.models import CapacitySnapshot, Deployment, OutboxMessage
from fleet.models.snapshots import input_versions, versions_key
from fleet.poll_store import predicted_cache_of
from fleet.prices import PriceBook
from planner.breakeven import deployment_output_rate
from planner.corrections import calibration_of, corrected_throughput, estimate_for, latest_for_many, to_engine
from planner.engine import DEFAULT_PRICING_KIND, PriceInForce, apply_correction, unit_economics
from planner.models import Calibration
from planner.reviews import mark_stale

log = logging.getLogger(__name__)

#: The task that recomputes snapshots, breakevens and decision reviews (planner/tasks.py).
REFRESH_TASK = "planner.refresh_answers"
#: The pricing kind a deployment's GPU-hours are priced at (the engine's one default).
PRICING_KIND = DEFAULT_PRICING_KIND


def request_refresh(
    *, deployments: Iterable[int] = (), workloads: Iterable[int] = (), reason: str, now: datetime | None = None
) -> OutboxMessage | None:
    """Mark the snapshots of ``deployments`` stale (``reason``: what changed) and record the
    recomputation of them and of ``workloads``' breakevens and decision reviews as one outbox message,
    published after the commit (the sweeper sends it if the broker is down). Call it inside the
    transaction of the change. None when there is nothing to recompute."""
    deployment_ids, workload_ids = sorted(set(deployments)), sorted(set(workloads))
    if not deployment_ids and not workload_ids:
        return None
    now = now or timezone.now()
    with transaction.atomic():
        if deployment_ids:
            snapshots = CapacitySnapshot.objects.filter(deployment_id__in=deployment_ids)
            CapacitySnapshot.mark_stale(snapshots, reason, now)
        if workload_ids:
            mark_stale(workload_ids, reason, now)
        message = outbox.record(REFRESH_TASK, kwargs={"deployments": deployment_ids, "workloads": workload_ids})
    transaction.on_commit(lambda: outbox.send(message))
    return message


def _chunks(ids: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


@dataclass
class RefreshSummary:
    """What one ``refresh_snapshots`` stored: snapshots computed, failed, and batches (transactions)."""

    computed: int = 0
    failed: int = 0
    batches: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"computed": self.computed, "failed": self.failed, "batches": self.batches}


def enabled_deployment_ids() -> list[int]:
    return list(Deployment.objects.filter(enabled=True).order_by("pk").values_list("pk", flat=True))


def refresh_snapshots(
    deployment_ids: Iterable[int] | None = None, *, now: datetime | None = None, batch: int | None = None
) -> RefreshSummary:
    """Recompute and store the snapshots of ``deployment_ids`` (None: every enabled deployment), in
    batches of ``batch`` (default ``SNAPSHOT_BATCH``): per batch a fixed handful of queries (the
    deployments with their records, their speed corrections, calibrations and the GPU quotes) and one
    transaction. Deleted deployments are skipped; a disabled one is recomputed when named (its own
    change: disabling it must not leave its snapshot stale for ever), not by the beat's whole fleet."""
    ids = sorted(set(deployment_ids)) if deployment_ids is not None else enabled_deployment_ids()
    summary = RefreshSummary()
    for chunk in _chunks(ids, batch or settings.SNAPSHOT_BATCH):
        started = timezone.now()
        at = now or started
        deployments = list(
            Deployment.objects.filter(pk__in=chunk)
            .select_related("cluster__sku", "cluster__provider", "model", "workload")
            .defer("api_key_encrypted", "model__source", "model__assumptions")
        )
        if not deployments:
            continue
        computed = compute_batch(deployments, at)
        _store(computed, started, at)
        summary.batches += 1
        summary.computed += sum(1 for c in computed if c.error is None)
        summary.failed += sum(1 for c in computed if c.error is not None)
    return summary


@dataclass
class Computed:
    """One deployment's recomputation: the figures and their inputs, or the error that stopped it."""

    deployment_id: int
    inputs: dict[str, Any]
    figures: dict[str, Any] | None = None
    valid_until: datetime | None = None
    error: str | None = None


def compute_batch(deployments: list[Deployment], now: datetime) -> list[Computed]:
    """The snapshot of each of ``deployments`` (select_related cluster__sku, model and workload) at ``now``."""
    corrections = latest_for_many(deployments, now)
    calibrations = _latest_calibrations([d.pk for d in deployments])
    today = now.date()
    book = PriceBook.load({d.cluster.sku_id for d in deployments}, kind=PRICING_KIND)
    engines: dict[int, Any] = {}
    out = []
    for d in deployments:
        correction = corrections.get(d.pk)
        calibration = calibrations.get(d.pk)
        price = book.for_deployment(d, today, PRICING_KIND)
        change = book.next_cluster_change(d.cluster, today)
        inputs = {
            **input_versions(d),
            "quote": price.quote.id if price is not None else None,
            "speed_correction": correction.pk if correction is not None else None,
            "calibration": calibration.pk if calibration is not None else None,
        }
        valid_until = datetime.combine(change, time(0), tzinfo=UTC) if change is not None else None
        try:
            engine = engines.get(d.model_id) or engines.setdefault(d.model_id, d.model.to_engine())
            figures = compute_figures(d, engine, price, correction, calibration, now)
        except FIELD_ERRORS as exc:
            out.append(Computed(d.pk, inputs, valid_until=valid_until, error=str(exc)[:2000]))
            continue
        except Exception as exc:
            log.exception("capacity snapshot of %s failed", d.slug)
            out.append(Computed(d.pk, inputs, valid_until=valid_until, error=f"{type(exc).__name__}: {exc}"[:2000]))
            continue
        out.append(Computed(d.pk, inputs, figures, valid_until))
    return out


def _latest_calibrations(ids: list[int]) -> dict[int, Calibration]:
    """The newest calibration of each deployment (one query; logs and predictions left unread)."""
    rows = Calibration.objects.filter(deployment_id__in=ids).only("id", "deployment_id", "created", "figures")
    latest: dict[int, Calibration] = {}
    for row in rows.order_by("deployment_id", "-created", "-id"):
        latest.setdefault(row.deployment_id, row)
    return latest


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def compute_figures(
    d: Deployment, engine: Any, price: PriceInForce | None, correction: Any, calibration: Any, now: datetime
) -> dict[str, Any]:
    """A deployment's snapshot figures (JSON-ready; money as strings), priced at its cluster's price in
    force (``price``; None: unpriced, said in ``price_note``). Raises the engine's ``EngineInputError``
    when its layout cannot be sized."""
    serving = d.serving(engine)
    result = serving.size(d.planning_context_tokens)
    running = (d.last_metrics or {}).get("requests_running")
    figures: dict[str, Any] = {
        "fits": result.fits,
        "capacity_sequences": result.max_concurrent_sequences,
        "planning_context_tokens": result.context_tokens,
        # Admitted sequences at each context up to max_model_len (the engine's own limits applied): the
        # deployment page's curve and table; its last point is capacity_sequences.
        "capacity_curve": [
            {"context": p.context_tokens, "sequences": p.max_concurrent_sequences} for p in serving.admitted_curve()
        ],
        "max_running_requests": result.allocation.max_running_requests if result.allocation else None,
        "engine": result.engine,
        "engine_version": result.engine_version,
        "kv_cache_tokens": result.engine_kv_cache_tokens,
        "max_concurrency": result.engine_max_concurrency,
        "gpu_blocks": result.engine_num_blocks,
        "block_size_tokens": result.engine_block_size_tokens,
        "deficit_bytes_per_gpu": 0 if result.fits else result.deficit_bytes,
        "envelope_bytes_per_gpu": {
            "gpu": result.gpu_memory_bytes,  # the driver's bytes, as every page shows them
            "usable": result.usable_bytes,
            "weights": result.weights_bytes_per_gpu,
            "runtime": result.runtime_bytes,
            "kv_per_sequence": result.kv_bytes_per_sequence_per_gpu,
            "state_per_sequence": result.state_bytes_per_sequence_per_gpu,
        },
        "observed_running": running,
        # What the endpoint should publish (vLLM's blocks, SGLang's token pool): polls compare with this.
        "predicted_cache": predicted_cache_of(result, d.dp),
        "speed": None,
        "output_tokens_per_s": None,
        "usd_per_gpu_hour": None,
        "usd_per_hour": None,
        "usd_per_mtok_output": None,
        "quote": price.quote.to_dict() if price is not None else None,
        "price_basis": price.basis if price is not None else None,
        "price_note": price.note if price is not None else _unpriced(d),
        "speed_factors": {},
        "speed_correction_age_s": None,
        "startup_ratios": {},
        "assumptions": list(result.assumptions[:3]),
    }
    if correction is not None:
        shape = calibration_of(correction, now)
        figures["speed_factors"] = {"decode": shape["factor_decode"], "prefill": shape["factor_prefill"]}
        figures["speed_correction_age_s"] = shape["age_s"]
        figures["speed_correction_fitted_at"] = shape["fitted_at"]
    if calibration is not None:
        figures["startup_ratios"] = {f["name"]: f["ratio"] for f in calibration.figures if f.get("ratio") is not None}
    tokens_per_s = None
    if result.fits:
        try:
            speed = corrected_throughput(d, correction, now=now).result
            figures["speed"] = _speed_at_observed(d, engine, running, correction, now)
        except FIELD_ERRORS as exc:
            figures["speed_error"] = str(exc)
        else:
            tokens_per_s = figures["output_tokens_per_s"] = deployment_output_rate(d, speed)
            figures["slo_limited_batch"] = speed.concurrency_limit
    if price is not None:
        economics = unit_economics(d.gpus, price.usd_per_gpu_hour, tokens_per_s or 0)
        figures["usd_per_gpu_hour"] = _money(price.usd_per_gpu_hour)
        figures["usd_per_hour"] = _money(economics.cluster_usd_per_hour)
        figures["usd_per_mtok_output"] = _money(economics.cost_per_mtok_output_usd) if tokens_per_s else None
    return figures


def _unpriced(d: Deployment) -> str:
    cluster = d.cluster
    return (
        f"Unpriced: {cluster.provider.name} has no {PRICING_KIND} quote or public list price for {cluster.sku.name} "
        "in force today (add the provider's quote on the quotes page)."
    )


def _speed_at_observed(d: Deployment, engine: Any, running: float | None, correction: Any, now: datetime) -> dict:
    """TPOT and TTFT (ms) the throughput model predicts at the batch per replica the last poll saw (at
    least 1: an idle deployment's next request), with the live correction applied when there is one."""
    replicas = max(1, d.replicas)
    batch = max(1, math.ceil((running or 0) / replicas - 1e-9))
    result = estimate_for(d, batch=batch, model=engine)
    calibrated = correction is not None
    if calibrated:
        age_s = max(0.0, (now - correction.fitted_at).total_seconds())
        result = apply_correction(result, to_engine(correction, with_assumptions=False), age_s=age_s)
    ttft = result.ttft_s * 1e3
    return {
        "batch_per_replica": batch,
        "tpot_ms": result.tpot_s * 1e3,
        "ttft_ms": ttft if ttft != float("inf") else None,
        "calibrated": calibrated,
        "observed_running": running,
    }


#: The columns a recomputation writes.
STORED_FIELDS = [
    "figures", "inputs", "computed_at", "valid_until", "error", "failed_at", "capacity_sequences", "fits",
    "versions",
]  # fmt: skip


def _fill(snap: CapacitySnapshot, c: Computed, now: datetime) -> None:
    """A recomputation into its snapshot; a failed one keeps the previous figures, with its error."""
    if c.error is None:
        snap.figures, snap.inputs, snap.computed_at = c.figures, c.inputs, now
        snap.valid_until, snap.error, snap.failed_at = c.valid_until, "", None
        snap.capacity_sequences, snap.fits = c.figures["capacity_sequences"], c.figures["fits"]
        snap.versions = versions_key(c.inputs)
    else:
        snap.error, snap.failed_at = c.error, now


def _store(computed: list[Computed], started: datetime, now: datetime) -> None:
    """Write one batch in one transaction (``StoredAnswer.store``: a snapshot marked stale after this batch
    ``started`` keeps its mark, a failed one keeps its figures)."""
    CapacitySnapshot.store(computed, _fill, STORED_FIELDS, started=started, now=now)
