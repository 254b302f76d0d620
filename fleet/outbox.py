"""The transactional outbox: work for Celery is recorded in the database in the same transaction
as the record it stands for, then published; what could not be published is sent by the sweeper.

Why: publishing inside a request that has already committed its row (a queued plan) loses the work
when the broker is down (the row stays ``queued`` and nothing ever runs it), and publishing before
the commit can run a task for a row that is then rolled back. With the outbox the row and its
message commit together; :func:`send` publishes after the commit and marks the message sent, or
leaves it unsent with the error; :func:`sweep` (task ``fleet.send_outbox``, beat every
``OUTBOX_SWEEP_S`` seconds) publishes unsent messages older than ``OUTBOX_GRACE_S`` once the broker
is back. A message may be published twice (the sweeper racing a slow request, or a publish whose
confirmation was lost), so every task sent from here is idempotent (docs/reliability.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from kombu.exceptions import ChannelError, OperationalError

from fleet.models import OutboxMessage

log = logging.getLogger(__name__)

#: What publishing raises when the broker cannot be reached: Redis down gives kombu's
#: OperationalError after the publish retries (``CELERY_TASK_PUBLISH_RETRY_POLICY``); the filesystem
#: broker's folder missing or unwritable gives ChannelError; a socket error can escape as OSError.
BROKER_ERRORS: tuple[type[BaseException], ...] = (OperationalError, ChannelError, OSError)


#: What an answer that queued work says about its message: ``sent`` (the broker took it),
#: ``broker_unreachable`` (stored; the sweeper sends it when the broker is back), ``none`` (nothing
#: needed sending, e.g. a poll already in flight).
DISPATCH: tuple[str, ...] = ("sent", "broker_unreachable", "none")


def record(
    task: str, *, args: Iterable[Any] = (), kwargs: dict[str, Any] | None = None, task_id: str = "", queue: str = ""
) -> OutboxMessage:
    """Record a task to send (call it inside the transaction that writes the work's own rows)."""
    return OutboxMessage.objects.create(
        task=task, args=list(args), kwargs=dict(kwargs or {}), task_id=task_id, queue=queue
    )


def send(message: OutboxMessage) -> bool:
    """Publish ``message`` now; True when the broker took it (the message is marked sent). On a
    broker error the message stays unsent with the error recorded, for the sweeper; False."""
    queue = message.queue or current_app.conf.task_default_queue
    try:
        if current_app.conf.task_always_eager:
            # Eager mode (tests, a shell) runs the task here, as apply_async would; send_task ignores it.
            current_app.tasks[message.task].apply(
                args=message.args, kwargs=message.kwargs, task_id=message.task_id or None
            )
        else:
            current_app.send_task(
                message.task, args=message.args, kwargs=message.kwargs, task_id=message.task_id or None, queue=queue
            )
    except BROKER_ERRORS as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
        OutboxMessage.objects.filter(pk=message.pk, sent_at__isnull=True).update(
            attempts=F("attempts") + 1, last_error=error
        )
        log.warning(
            "outbox: %s %s not sent, broker unreachable (%s)", message.task, message.task_id, type(exc).__name__
        )
        return False
    OutboxMessage.objects.filter(pk=message.pk).update(sent_at=timezone.now())
    return True


@dataclass(frozen=True)
class SweepSummary:
    sent: int
    unsent: int
    deleted: int

    def as_dict(self) -> dict[str, int]:
        return {"sent": self.sent, "unsent": self.unsent, "deleted": self.deleted}


def sweep(*, batch: int = 200) -> SweepSummary:
    """Publish the unsent messages older than ``OUTBOX_GRACE_S`` (oldest first, at most ``batch``;
    stop at the first broker error: the rest would fail too) and delete sent messages older than
    ``OUTBOX_RETENTION_HOURS``. Safe to run in several workers at once: each takes its rows with
    ``SELECT ... FOR UPDATE SKIP LOCKED`` (PostgreSQL; SQLite serialises writers anyway)."""
    now = timezone.now()
    sent = 0
    with transaction.atomic():
        due = (
            OutboxMessage.objects.select_for_update(skip_locked=True)
            .filter(sent_at__isnull=True, created__lt=now - timedelta(seconds=settings.OUTBOX_GRACE_S))
            .order_by("created", "id")[:batch]
        )
        for message in list(due):
            if not send(message):
                break
            sent += 1
    unsent = OutboxMessage.objects.filter(sent_at__isnull=True).count()
    cutoff = now - timedelta(hours=settings.OUTBOX_RETENTION_HOURS)
    deleted, _ = OutboxMessage.objects.filter(sent_at__lt=cutoff).delete()
    return SweepSummary(sent=sent, unsent=unsent, deleted=deleted)
