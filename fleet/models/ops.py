"""Operational records written by the Celery workers themselves."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

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


#: The job :class:`ScheduledRun` records for each poll cycle beat sends (``fleet.poller.start_poll_cycle``).
POLL_CYCLE_JOB = "fleet.poll_cycle"


class ScheduledRun(models.Model):
    """When a job beat schedules last started on a worker, one row per job (``fleet.poll_cycle``).

    Written by the worker at the start of the job (one UPDATE), so it says that beat sent it and a
    worker took it: the fleet page and ``/healthz`` read it to say when polls stopped (a stopped
    beat, or no worker taking its tasks). Why not the latest poll's time: a cycle with nothing due
    polls nothing, a fleet may have no endpoint, and a poll-now (sent without beat) would hide a
    stopped beat (docs/operations.md, "Health").
    """

    job = models.CharField(max_length=100, unique=True)
    last_started = models.DateTimeField()
    runs = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["job"]

    def __str__(self) -> str:
        return f"{self.job} @ {self.last_started:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def mark(cls, job: str, now: datetime | None = None) -> None:
        """Record that ``job`` started now (an upsert: one UPDATE, an INSERT the first time)."""
        now = now or timezone.now()
        if not cls.objects.filter(job=job).update(last_started=now, runs=F("runs") + 1):
            cls.objects.get_or_create(job=job, defaults={"last_started": now, "runs": 1})


@dataclass(frozen=True)
class PollingState:
    """Whether beat's poll cycles run: ``state`` is ``ok``, ``stopped`` (the last cycle started more
    than ``limit_s`` seconds ago) or ``never`` (no cycle recorded); ``last_cycle`` its start."""

    state: str
    last_cycle: datetime | None
    interval_s: float
    now: datetime

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    @property
    def limit_s(self) -> float:
        """Seconds without a cycle after which polls are stopped: twice beat's interval."""
        return 2 * self.interval_s

    @property
    def age_s(self) -> float | None:
        """Seconds since the last cycle started (None: never)."""
        return None if self.last_cycle is None else max(0.0, (self.now - self.last_cycle).total_seconds())

    @property
    def stopped_at(self) -> str:
        """When polls stopped as a person reads it: ``21:04 UTC`` today, with the date before (empty: never)."""
        if self.last_cycle is None:
            return ""
        at, today = timezone.localtime(self.last_cycle), timezone.localtime(self.now)
        shown = at.strftime("%H:%M") if at.date() == today.date() else at.strftime("%Y-%m-%d %H:%M")
        return f"{shown} {at.tzname()}"

    def sentence(self) -> str:
        """What the fleet page and ``/healthz`` say (empty when polls run)."""
        every = f"beat sends one every {self.interval_s:g} s"
        if self.state == "never":
            return f"No poll cycle has run yet ({every}): is Celery beat running, and a worker?"
        if self.state == "stopped":
            return (
                f"Polls stopped at {self.stopped_at}: no poll cycle started for {self.age_s:,.0f} s ({every}). "
                "Is Celery beat running, and a worker taking its tasks?"
            )
        return ""


def polling_state(now: datetime | None = None) -> PollingState:
    """Whether poll cycles run (one query): ``stopped`` when the last one started more than twice beat's
    interval ago (``POLL_CYCLE_S``, 5 s: so 10 s), ``never`` when none was recorded."""
    now = now or timezone.now()
    interval_s = float(settings.POLL_CYCLE_S)
    last = ScheduledRun.objects.filter(job=POLL_CYCLE_JOB).values_list("last_started", flat=True).first()
    state = "never" if last is None else "stopped" if (now - last).total_seconds() > 2 * interval_s else "ok"
    return PollingState(state, last, interval_s, now)


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


class IdempotentRequest(models.Model):
    """A POST made with an ``Idempotency-Key`` (``fleet.idempotency``): the caller's key, what the request was
    (``fingerprint``: SHA-256 of method, path and body) and the first answer, replayed to a retry for a day."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    done = models.BooleanField(default=False, help_text="False while the first request is being answered.")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    content_type = models.CharField(max_length=100, blank=True)
    location = models.CharField(max_length=500, blank=True)
    body = models.BinaryField(blank=True, default=b"")
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_once_per_user")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.key}"
