"""Operational records written by the Celery workers themselves."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import F
from django.utils import timezone


def heartbeat_stale_after() -> timedelta:
    """A worker whose last beat is older than three beat intervals is reported as silent."""
    return timedelta(seconds=3 * settings.WORKER_HEARTBEAT_S)


class WorkerHeartbeat(models.Model):
    """The last beat of each Celery worker (one row per worker hostname, e.g. ``worker@host``).

    Written by a thread in each worker's main process every ``WORKER_HEARTBEAT_S`` seconds
    (``fleet.tasks``), removed when the worker stops cleanly. Lets the fleet page and ``/healthz``
    tell whether background work (polling, plans) runs.
    """

    worker = models.CharField(max_length=200, unique=True)
    last_seen = models.DateTimeField()
    beats = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        return f"{self.worker} @ {self.last_seen:%Y-%m-%d %H:%M:%S}"

    @property
    def is_alive(self) -> bool:
        return timezone.now() - self.last_seen < heartbeat_stale_after()

    @classmethod
    def alive(cls) -> models.QuerySet:
        return cls.objects.filter(last_seen__gte=timezone.now() - heartbeat_stale_after())

    @classmethod
    def beat(cls, worker: str) -> None:
        """Record one beat of ``worker`` (an upsert: one UPDATE, an INSERT the first time)."""
        now = timezone.now()
        if not cls.objects.filter(worker=worker).update(last_seen=now, beats=F("beats") + 1):
            cls.objects.get_or_create(worker=worker, defaults={"last_seen": now, "beats": 1})
