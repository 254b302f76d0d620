"""Operational records written by the Celery workers themselves."""

from datetime import timedelta

from django.db import models
from django.utils import timezone

#: A worker whose heartbeat is older than this is reported as silent.
HEARTBEAT_STALE_AFTER = timedelta(minutes=3)


class WorkerHeartbeat(models.Model):
    """The last time each Celery worker ran the periodic heartbeat task.

    Lets the dashboard and ``/healthz`` tell whether background work (polling, plans) runs.
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
        return timezone.now() - self.last_seen < HEARTBEAT_STALE_AFTER

    @classmethod
    def alive(cls) -> models.QuerySet:
        return cls.objects.filter(last_seen__gte=timezone.now() - HEARTBEAT_STALE_AFTER)
