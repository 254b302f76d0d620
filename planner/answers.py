"""The stored answers the workers keep current, and what changes which of them.

Three kinds of answer are stored: each enabled deployment's capacity snapshot (``planner.snapshots``),
each workload's rent-vs-API breakeven and each current decision's review (``planner.reviews``). They
are recomputed by the task ``planner.refresh_answers`` (planner/tasks.py):

* **on a change**: the signal receivers below run after a record is saved or deleted and call
  ``planner.snapshots.request_refresh`` with the deployments and workloads the change can move, which
  marks their answers stale and records the task in the outbox in one transaction (published after the
  commit; the sweeper sends it when the broker is back). Django sends ``post_save`` after the row's own
  commit, so a process that dies between the two leaves the change without its message: the record
  versions then still make the snapshot read as stale (``CapacitySnapshot.state``), and the beat below
  recomputes everything within its period;
* **on a schedule**: beat sends ``planner.refresh_answers`` without arguments every
  ``refresh-answers`` period (settings.CELERY_BEAT_SCHEDULE); ``fan_out`` then records one message per
  batch of ``SNAPSHOT_BATCH`` deployments and one per batch of workloads, so a large fleet spreads
  over the workers.

What moves what: a deployment, its cluster, its SKU or its model -> the deployment's snapshot (and the
breakeven and reviews of the workload it serves); a workload -> its deployments and itself; a GPU
quote -> the deployments on its SKU, and the workloads whose current decision priced that SKU; an API
price -> the workloads served by its model's deployments and those whose current decision used it; an
owned cluster's purchase or running costs -> its deployments; a site's electricity price -> the
deployments on the owned clusters at that site; a speed correction or a calibration -> its deployment.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from fleet import outbox
from fleet.models import (
    ApiPrice,
    Cluster,
    ClusterPurchase,
    Deployment,
    ElectricityPrice,
    GpuQuote,
    HardwareSku,
    ModelSpec,
    OwnedCosts,
    Workload,
)
from planner.reviews import refresh_breakevens, review_decisions
from planner.snapshots import REFRESH_TASK, enabled_deployment_ids, refresh_snapshots, request_refresh


def refresh(deployments: Iterable[int], workloads: Iterable[int], served: bool = True) -> dict[str, Any]:
    """Recompute the snapshots of ``deployments``, then the breakevens and decision reviews of
    ``workloads`` and (``served``) of the workloads those deployments serve. Idempotent."""
    deployment_ids = sorted(set(deployments))
    workload_ids = set(workloads)
    out: dict[str, Any] = {"snapshots": refresh_snapshots(deployment_ids).as_dict() if deployment_ids else {}}
    if served and deployment_ids:
        workload_ids |= set(
            Deployment.objects.filter(pk__in=deployment_ids, workload__isnull=False).values_list(
                "workload_id", flat=True
            )
        )
    if workload_ids:
        out["breakevens"] = refresh_breakevens(sorted(workload_ids))
        out["reviews"] = review_decisions(sorted(workload_ids))
    return out


def fan_out() -> dict[str, int]:
    """Record (one transaction) and send one ``refresh_answers`` message per batch of enabled
    deployments and per batch of workloads: the whole fleet, spread over the workers."""
    size = settings.SNAPSHOT_BATCH
    deployment_ids = enabled_deployment_ids()
    workload_ids = list(Workload.objects.order_by("pk").values_list("pk", flat=True))
    with transaction.atomic():
        messages = [
            outbox.record(REFRESH_TASK, kwargs={"deployments": deployment_ids[i : i + size], "served": False})
            for i in range(0, len(deployment_ids), size)
        ] + [
            outbox.record(REFRESH_TASK, kwargs={"deployments": [], "workloads": workload_ids[i : i + size]})
            for i in range(0, len(workload_ids), size)
        ]
    sent = sum(1 for message in messages if outbox.send(message))
    return {"messages": len(messages), "sent": sent, "deployments": len(deployment_ids), "workloads": len(workload_ids)}


def _served(deployment_ids: Iterable[int]) -> set[int]:
    return set(
        Deployment.objects.filter(pk__in=list(deployment_ids), workload__isnull=False).values_list(
            "workload_id", flat=True
        )
    )


def _decided(**match: str) -> set[int]:
    """Workloads whose current decision's frozen inputs name ``match`` (e.g. ``sku="h100-sxm-80gb"``,
    ``api_price="deepseek-api"``): a change to that record can flip it."""
    from planner.models import Decision

    found = set()
    for workload_id, inputs in Decision.objects.filter(superseded_by__isnull=True).values_list("workload_id", "inputs"):
        for key, slug in match.items():
            record = (inputs or {}).get(key) or {}
            if isinstance(record, dict) and record.get("slug") == slug:
                found.add(workload_id)
    return found


_local = threading.local()


@contextmanager
def coalesced(reason: str) -> Iterator[None]:
    """Inside, the receivers collect what to recompute; on leaving, one ``request_refresh`` for all of
    it (a job saving many records, such as fitting every deployment's speed correction, sends one
    message instead of one per record). Nested uses join the outermost."""
    if getattr(_local, "pending", None) is not None:
        yield
        return
    pending = _local.pending = (set(), set())
    try:
        yield
    finally:
        _local.pending = None
        request_refresh(deployments=pending[0], workloads=pending[1], reason=reason)


def _refresh(deployments: Iterable[int], workloads: Iterable[int], reason: str) -> None:
    pending = getattr(_local, "pending", None)
    if pending is not None:
        pending[0].update(deployments)
        pending[1].update(workloads)
        return
    request_refresh(deployments=deployments, workloads=workloads, reason=reason)


# Receivers: thin; each names what the change can move. ``raw`` saves (loaddata) are skipped.


def _deployment_saved(sender: Any, instance: Deployment, raw: bool = False, update_fields: Any = None, **kw: Any):
    if raw or (update_fields and set(update_fields) <= set(Deployment.LIVE_FIELDS)):
        return  # the poller's live state: read live by the pages, refreshed by the beat
    _refresh([instance.pk], [], f"Deployment {instance.slug} changed")


def _deployment_deleted(sender: Any, instance: Deployment, **kw: Any):
    if instance.workload_id:
        _refresh([], [instance.workload_id], f"Deployment {instance.slug} removed")


def _cluster_saved(sender: Any, instance: Cluster, raw: bool = False, **kw: Any):
    if not raw:
        _refresh(instance.deployments.values_list("pk", flat=True), [], f"Cluster {instance.slug} changed")


def _sku_saved(sender: Any, instance: HardwareSku, raw: bool = False, **kw: Any):
    if not raw:
        ids = Deployment.objects.filter(cluster__sku=instance).values_list("pk", flat=True)
        _refresh(ids, [], f"SKU {instance.slug} changed")


def _model_saved(sender: Any, instance: ModelSpec, raw: bool = False, **kw: Any):
    if not raw:
        _refresh(instance.deployments.values_list("pk", flat=True), [], f"Model {instance.slug} changed")


def _workload_saved(sender: Any, instance: Workload, raw: bool = False, **kw: Any):
    if not raw:
        _refresh(instance.deployments.values_list("pk", flat=True), [instance.pk], f"Workload {instance.slug} changed")


def _quote_changed(sender: Any, instance: GpuQuote, raw: bool = False, **kw: Any):
    if raw:
        return
    ids = list(Deployment.objects.filter(cluster__sku_id=instance.sku_id).values_list("pk", flat=True))
    sku = HardwareSku.objects.filter(pk=instance.sku_id).values_list("slug", flat=True).first()
    what = f"GPU quote {instance.provider or 'assumption'} {instance.pricing_kind} for {sku}"
    _refresh(ids, _decided(sku=sku) if sku else set(), f"{what} changed")


def _api_price_changed(sender: Any, instance: ApiPrice, raw: bool = False, **kw: Any):
    if raw:
        return
    served = _served(Deployment.objects.filter(model_id=instance.model_id).values_list("pk", flat=True))
    _refresh([], served | _decided(api_price=instance.slug), f"API price {instance.slug} changed")


def _owned_costs_changed(sender: Any, instance: Any, raw: bool = False, **kw: Any):
    """A purchase or the running costs of an owned cluster: its price in force, so its deployments."""
    if not raw:
        ids = Deployment.objects.filter(cluster_id=instance.cluster_id).values_list("pk", flat=True)
        _refresh(ids, [], f"The costs of owned cluster {instance.cluster_id} changed")


def _electricity_changed(sender: Any, instance: ElectricityPrice, raw: bool = False, **kw: Any):
    """A site's electricity price: the price in force of the owned clusters at that site."""
    if not raw:
        ids = Deployment.objects.filter(cluster__owned_costs__site=instance.site).values_list("pk", flat=True)
        _refresh(ids, [], f"The electricity price of site {instance.site} changed")


def _correction_saved(sender: Any, instance: Any, created: bool = False, raw: bool = False, **kw: Any):
    if not raw:
        _refresh([instance.deployment_id], [], "A new live speed correction was fitted")


def _calibration_saved(sender: Any, instance: Any, created: bool = False, raw: bool = False, **kw: Any):
    if not raw:
        _refresh([instance.deployment_id], [], "A startup-log calibration was recorded")


def connect() -> None:
    """Connect the receivers (``PlannerConfig.ready``)."""
    from planner.models import Calibration, SpeedCorrection

    post_save.connect(_deployment_saved, sender=Deployment, dispatch_uid="answers-deployment")
    post_delete.connect(_deployment_deleted, sender=Deployment, dispatch_uid="answers-deployment-deleted")
    post_save.connect(_cluster_saved, sender=Cluster, dispatch_uid="answers-cluster")
    post_save.connect(_sku_saved, sender=HardwareSku, dispatch_uid="answers-sku")
    post_save.connect(_model_saved, sender=ModelSpec, dispatch_uid="answers-model")
    post_save.connect(_workload_saved, sender=Workload, dispatch_uid="answers-workload")
    post_save.connect(_quote_changed, sender=GpuQuote, dispatch_uid="answers-quote")
    post_delete.connect(_quote_changed, sender=GpuQuote, dispatch_uid="answers-quote-deleted")
    post_save.connect(_api_price_changed, sender=ApiPrice, dispatch_uid="answers-api-price")
    post_delete.connect(_api_price_changed, sender=ApiPrice, dispatch_uid="answers-api-price-deleted")
    for model in (ClusterPurchase, OwnedCosts):
        post_save.connect(_owned_costs_changed, sender=model, dispatch_uid=f"answers-{model.__name__}")
        post_delete.connect(_owned_costs_changed, sender=model, dispatch_uid=f"answers-{model.__name__}-deleted")
    post_save.connect(_electricity_changed, sender=ElectricityPrice, dispatch_uid="answers-electricity")
    post_delete.connect(_electricity_changed, sender=ElectricityPrice, dispatch_uid="answers-electricity-deleted")
    post_save.connect(_correction_saved, sender=SpeedCorrection, dispatch_uid="answers-correction")
    post_save.connect(_calibration_saved, sender=Calibration, dispatch_uid="answers-calibration")
