"""Operational records written by the Celery workers themselves."""

from django.db import models


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
