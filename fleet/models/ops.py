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


class OutboxMessage(models.Model):
    """A Celery task to send, recorded in the same transaction as the work it stands for (a plan,
    a poll-now), so a broker that is down when the request commits loses nothing: ``fleet.outbox``
    sends it after the commit, and the sweeper (``fleet.send_outbox``, beat) sends what is still
    unsent once the broker is back. Tasks sent from here must be idempotent: a message can be
    published twice (the sweeper and the request racing, or a publish whose confirmation was lost).
    """

    task = models.CharField(max_length=100, help_text="Registered Celery task name, e.g. planner.run_plan.")
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    task_id = models.CharField(max_length=100, blank=True, help_text="Celery task id (empty: Celery picks one).")
    queue = models.CharField(max_length=100, blank=True, help_text="Queue name (empty: the default queue).")
    created = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True, db_index=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Publish attempts that failed.")
    last_error = models.CharField(max_length=300, blank=True, help_text="The last publish error's class and message.")

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["sent_at", "created"], name="fleet_outbox_unsent")]

    def __str__(self) -> str:
        state = f"sent {self.sent_at:%Y-%m-%d %H:%M:%S}" if self.sent_at else f"unsent after {self.attempts} attempts"
        return f"{self.task}({self.task_id or '-'}) {state}"
