"""Admission headroom per deployment: predicted capacity (sizing engine) against observed load.

Predicted: concurrent sequences the deployment admits at its planning context
(``Deployment.planning_context_tokens``). Observed: requests running on the engine at the
last poll (``last_metrics["requests_running"]``).

Pages and ``/metrics`` read the predicted side from the deployment's stored capacity snapshot
(``stored_headroom``, and ``stored_curve`` for the admitted sequences at each context: no engine call, the
snapshot's state said beside it; planner/snapshots.py computes it on a worker with
``planner.engine.Serving``, the one rule). ``headroom`` sizes it now, for a deployment page's memory
envelope (bytes per GPU; the sequences it is drawn at are the stored capacity); one engine object is built
per model and reused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fleet.models import Deployment
from fleet.models.snapshots import input_versions, snapshot_of
from planner.engine import GIB, EngineInputError, ModelArch, SizingResult


@dataclass(frozen=True, slots=True)
class Headroom:
    deployment: Deployment
    capacity: int | None  # predicted concurrent sequences (None: the layout does not size)
    fits: bool
    observed: float | None  # requests running at the last poll
    error: str = ""
    result: SizingResult | None = None  # the sizing behind ``capacity`` (None when it failed, or stored)
    #: The stored snapshot's state (``fleet.models.snapshots.SNAPSHOT_STATES``; "current" when computed now),
    #: why it is not current, and when it was computed.
    state: str = "current"
    state_reason: str = ""
    computed_at: Any = None

    @property
    def used_fraction(self) -> float | None:
        """Observed load over predicted capacity, 0..1 (None when either is unknown)."""
        if self.observed is None or not self.capacity:
            return None
        return min(1.0, self.observed / self.capacity)

    @property
    def used_percent(self) -> int | None:
        fraction = self.used_fraction
        return None if fraction is None else round(fraction * 100)

    @property
    def free(self) -> int | None:
        """Sequences that still fit beside the observed load."""
        if self.capacity is None:
            return None
        return max(0, self.capacity - int(self.observed or 0))


def headroom(deployments: Iterable[Deployment]) -> list[Headroom]:
    """Headroom of each deployment (select_related cluster__sku and model beforehand)."""
    engines: dict[int, ModelArch] = {}
    rows = []
    for d in deployments:
        observed = d.last_metrics.get("requests_running") if d.last_metrics else None
        try:
            engine = engines.get(d.model_id) or engines.setdefault(d.model_id, d.model.to_engine())
            result = d.sizing(model=engine)
        except EngineInputError as exc:
            rows.append(Headroom(d, None, False, observed, error=str(exc)))
            continue
        rows.append(Headroom(d, result.max_concurrent_sequences, result.fits, observed, result=result))
    return rows


#: What ``stored_headroom`` reads of a deployment and of the records joined to it, for ``.only()``: the
#: snapshot's columns (never its figures' JSON) and each record's version, nothing wide (no model layer
#: groups, no SKU datasheet). ``stored_headroom_rows`` applies it.
STORED_HEADROOM_FIELDS: tuple[str, ...] = (
    "slug", "cluster_id", "model_id", "workload_id", "updated", "last_metrics",
    "cluster__updated", "cluster__sku__updated", "model__updated", "workload__updated",
    *(f"capacity_snapshot__{name}" for name in (
        "computed_at", "capacity_sequences", "fits", "versions", "stale_since", "stale_reason", "error",
        "failed_at", "valid_until",
    )),
)  # fmt: skip


def stored_headroom_rows(queryset: Any, *fields: str) -> Any:
    """``queryset`` of deployments joined to what ``stored_headroom`` reads, loading only
    ``STORED_HEADROOM_FIELDS`` and ``fields`` (e.g. ``"cluster__slug"``): one narrow query."""
    related = ("cluster__sku", "model", "workload", "capacity_snapshot")
    return queryset.select_related(*related).only(*STORED_HEADROOM_FIELDS, *fields)


def stored_headroom(deployments: Iterable[Deployment], now: Any = None) -> list[Headroom]:
    """Headroom of each deployment from its stored capacity snapshot (select_related or prefetch
    ``capacity_snapshot``, ``cluster__sku``, ``model`` and ``workload`` beforehand: no queries, no
    engine call). A snapshot that failed without ever computing carries its error; one never computed
    has no capacity (``pending``)."""
    from django.utils import timezone

    now = now or timezone.now()
    rows = []
    for d in deployments:
        observed = d.last_metrics.get("requests_running") if d.last_metrics else None
        snap = snapshot_of(d)
        if snap is None:
            rows.append(Headroom(d, None, True, observed, state="pending", state_reason="Not computed yet."))
            continue
        versions = input_versions(d)
        state = snap.state(now, versions)
        reason = "" if state == "current" else snap.why_stale(now, versions)
        if snap.computed_at is None:
            rows.append(Headroom(d, None, False, observed, snap.error, state=state, state_reason=reason))
            continue
        rows.append(
            Headroom(
                d,
                snap.capacity_sequences,
                bool(snap.fits),
                observed,
                state=state,
                state_reason=reason,
                computed_at=snap.computed_at,
            )
        )
    return rows


def envelope(result, sequences: int | None = None) -> dict[str, Any]:
    """Memory envelope of one GPU in GiB: weights, runtime, state and KV for ``sequences``
    concurrent sequences of the deployment (default: its predicted capacity), free, the
    reserve left out by ``gpu_memory_utilization`` and the GPU's memory (``gpu``: the driver's
    figure, ``SizingResult.gpu_memory_bytes``, the one the usable memory is a fraction of); ``bytes``
    holds the same figures in bytes.

    The bar's parts add up to the GPU memory it is drawn against: weights + runtime + state + kv +
    free = usable, + reserve = gpu. ``runtime`` is the part of the runtime reserve the engine keeps
    inside the usable memory (SGLang keeps activations and CUDA graphs in the 1 - fraction left over:
    there it is in ``reserve``, and ``runtime_outside`` says how much). A load the usable memory cannot
    hold (a layout that does not fit, more running sequences than it admits) leaves no free memory and
    ``short`` bytes beyond the GPU's memory: then the parts add up to gpu + short."""
    ranks = max(1, result.replicas * result.layout.dp)
    total = result.max_concurrent_sequences if sequences is None else sequences
    per_gpu = -(-int(total) // ranks) if total else 0  # sequences held by one data-parallel rank's GPUs
    gpu = result.gpu_memory_bytes
    usable = result.usable_bytes
    weights = result.weights_bytes_per_gpu
    runtime = min(result.runtime_bytes, max(0, usable - weights - result.cache_bytes))
    state = per_gpu * result.state_bytes_per_sequence_per_gpu
    kv = per_gpu * result.kv_bytes_per_sequence_per_gpu
    demand = weights + runtime + state + kv
    exact = {
        "weights": weights,
        "runtime": runtime,
        "state": state,
        "kv": kv,
        "free": max(0, usable - demand),
        "reserve": gpu - usable,
        "gpu": gpu,
        "usable": usable,
        "short": max(0, demand - usable),
        "runtime_outside": result.runtime_bytes - runtime,
    }
    # In GiB for the chart (``gpu``: the GPU's whole memory, its line), and the same figures in bytes.
    return {**{part: n / GIB for part, n in exact.items()}, "sequences_per_gpu": per_gpu, "bytes": exact}


def stored_curve(deployment: Deployment) -> list[dict[str, int]]:
    """The admitted sequences against context length its stored snapshot holds (``capacity_curve``:
    ``{"context", "sequences"}`` up to its max_model_len, the engine's limits applied); empty before the
    first computation."""
    snap = snapshot_of(deployment)
    return list((snap.figures or {}).get("capacity_curve") or []) if snap is not None else []
