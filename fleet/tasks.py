"""Celery tasks of the fleet app. Thin: the work lives in model methods and services."""

from __future__ import annotations

import socket

from celery import shared_task
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from fleet.models import WorkerHeartbeat


@shared_task(bind=True, acks_late=True, max_retries=3, ignore_result=True)
def heartbeat(self, worker: str | None = None) -> str:
    """Record that a worker is alive (scheduled by beat every minute). Idempotent: an upsert."""
    name = worker or getattr(self.request, "hostname", None) or socket.gethostname()
    with transaction.atomic():
        hb, created = WorkerHeartbeat.objects.get_or_create(
            worker=name, defaults={"last_seen": timezone.now(), "beats": 1}
        )
        if not created:
            WorkerHeartbeat.objects.filter(pk=hb.pk).update(last_seen=timezone.now(), beats=F("beats") + 1)
    return name


@shared_task(bind=True, acks_late=True, ignore_result=True, soft_time_limit=120, time_limit=150)
def poll_cycle(self) -> dict[str, float]:
    """Poll every due deployment (beat: every 5 s); beyond ``POLL_CONCURRENCY`` of them, the rest
    go out as ``poll_batch`` tasks on this task's queue, for the other worker processes."""
    from fleet.poller import start_poll_cycle

    queue = (self.request.delivery_info or {}).get("routing_key") or None
    return start_poll_cycle(lambda ids: poll_batch.apply_async(args=[ids], queue=queue)).summary()


@shared_task(bind=True, acks_late=True, ignore_result=True, soft_time_limit=120, time_limit=150)
def poll_batch(self, deployment_ids: list[int]) -> dict[str, float]:
    """Poll one batch of a cycle (idempotent: what is no longer due, or leased, is skipped)."""
    from fleet.poller import poll_batch as run

    return run(deployment_ids).summary()


@shared_task(bind=True, acks_late=True, max_retries=3, ignore_result=True)
def poll_one(self, deployment_id: int) -> str:
    """Poll one deployment now (idempotent: a second concurrent poll is skipped by the lease)."""
    from fleet.models import Deployment
    from fleet.poller import poll_deployment

    deployment = Deployment.objects.select_related("cluster__sku", "model").filter(pk=deployment_id).first()
    if deployment is None:
        return "gone"
    poll = poll_deployment(deployment)
    return "skipped" if poll is None else poll.status


@shared_task(bind=True, acks_late=True, ignore_result=True)
def prune_polls(self) -> dict[str, int]:
    """Roll old polls into hourly rows and drop what is past retention (beat: hourly)."""
    from fleet.poll_rollups import prune_polls as prune

    rolled, kept = prune()
    return {"rolled_up": rolled, "kept": kept}
