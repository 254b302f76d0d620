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
