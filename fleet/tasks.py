"""Celery tasks of the fleet app, and each worker's own heartbeat. Thin: the work lives in
``fleet.poller``, ``fleet.poll_rollups`` and the models.

Naming: a task is registered as ``<app>.<job>`` (``fleet.poll_cycle``) and its Python function
ends in ``_task``, so it never shares a name with the function it calls (``fleet.poller.poll_batch``).

Retries: only on :data:`TRANSIENT_ERRORS` (a database that dropped the connection or is restarting),
with exponential backoff and jitter, a bounded number of times. Endpoint trouble is never an
exception (the poller stores it as a poll status), so nothing else is worth retrying. The tasks
are idempotent: polls take a lease, a batch polls only what is still due, pruning merges.
"""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection

log = logging.getLogger(__name__)

#: Errors after which running the same task again, a little later, may succeed.
TRANSIENT_ERRORS = (OperationalError, InterfaceError)
#: Retry settings of a task that a person or a schedule would otherwise have to send again: waits
#: of about 2, 4, 8, 16 s (jittered down to a random fraction, at most 60 s), then give up.
RETRY_ON_TRANSIENT = {
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": 4,
}


# The cycle and its batches do not retry: beat sends the next cycle 5 s later, and it finds every
# deployment a failed cycle or batch did not poll still due.
@shared_task(
    name="fleet.poll_cycle",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=120,
    time_limit=150,
    max_retries=0,
)
def poll_cycle_task(self) -> dict[str, float]:
    """Poll every due deployment (beat: every 5 s); beyond ``POLL_CONCURRENCY`` of them, the rest
    go out as ``fleet.poll_batch`` tasks on this task's queue, for the other worker processes."""
    from fleet.poller import start_poll_cycle

    queue = (self.request.delivery_info or {}).get("routing_key") or None
    return start_poll_cycle(lambda ids: poll_batch_task.apply_async(args=[ids], queue=queue)).summary()


@shared_task(
    name="fleet.poll_batch",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=120,
    time_limit=150,
    max_retries=0,
)
def poll_batch_task(self, deployment_ids: list[int]) -> dict[str, float]:
    """Poll one batch of a cycle (idempotent: what is no longer due, or leased, is skipped)."""
    from fleet.poller import poll_batch

    return poll_batch(deployment_ids).summary()


@shared_task(
    name="fleet.poll_one",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=60,
    time_limit=75,
    **RETRY_ON_TRANSIENT,
)
def poll_one_task(self, deployment_id: int) -> str:
    """Poll one deployment now (the API's poll-now). Idempotent: a concurrent poll holds the lease
    and this one is skipped; the poll in flight is the answer."""
    from fleet.models import Deployment
    from fleet.poller import poll_deployment

    deployment = Deployment.objects.select_related("cluster__sku", "model").filter(pk=deployment_id).first()
    if deployment is None:
        return "gone"
    poll = poll_deployment(deployment)
    return "skipped" if poll is None else poll.status


# No retries: beat sends the next sweep 10 s later, and it finds whatever this one did not send.
@shared_task(
    name="fleet.send_outbox",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=60,
    time_limit=75,
    max_retries=0,
)
def send_outbox_task(self) -> dict[str, int]:
    """Publish the outbox messages a request could not (broker down when it committed)."""
    from fleet.outbox import sweep

    return sweep().as_dict()


@shared_task(name="fleet.apply_cluster_changes", bind=True, acks_late=True, ignore_result=True, **RETRY_ON_TRANSIENT)
def apply_cluster_changes_task(self) -> list[str]:
    """Put in force the cluster changes scheduled for today or before (beat: hourly; idempotent)."""
    from fleet.models import Cluster

    return Cluster.apply_due_changes()


# A 200 MB bill reads in about a minute or two (docs/benchmarks.md, "Bill import"). Retried with the run's
# token on a database blip only (its rows deleted first); a refusal is stored on the bill, never retried.
# Idempotent: the bill is claimed by a conditional UPDATE, and a row already stored is never written again.
@shared_task(
    name="fleet.import_bill",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=1800,
    time_limit=1860,
    max_retries=4,
)
def import_bill_task(self, bill_id: str, token: str | None = None) -> str:
    """Import a stored FOCUS bill (task id = bill id)."""
    from celery.utils.time import get_exponential_backoff_interval

    from fleet.bills import ImportInterrupted, run_import

    try:
        bill = run_import(bill_id, token=token)
    except ImportInterrupted as exc:
        wait = get_exponential_backoff_interval(2, self.request.retries, 60, full_jitter=True)
        raise self.retry(args=[bill_id], kwargs={"token": exc.token}, exc=exc, countdown=wait) from exc
    return "gone" if bill is None else bill.status


@shared_task(name="fleet.prune_polls", bind=True, acks_late=True, ignore_result=True, **RETRY_ON_TRANSIENT)
def prune_polls_task(self) -> dict[str, int]:
    """Roll old polls into hourly rows and drop what is past retention (beat: hourly; idempotent:
    an hour rolled up twice is merged)."""
    from fleet.poll_rollups import prune_polls

    rolled, kept = prune_polls()
    return {"rolled_up": rolled, "kept": kept}


# Worker liveness. Each worker's main process writes its own WorkerHeartbeat row from a thread,
# every WORKER_HEARTBEAT_S seconds, whatever the transport and however busy its pool is (a solo
# pool running a ten-minute plan still beats). A task scheduled by beat would prove only that some
# worker took it; `control.ping` costs the web process its whole timeout and, on the filesystem
# transport, leaves a message file per dead worker per ping (docs/operations.md, "Health").
class _Heartbeat:
    def __init__(self, worker: str, interval_s: float):
        self.worker = worker
        self.interval_s = interval_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="fleetcap-heartbeat", daemon=True)

    def run(self) -> None:
        from fleet.models import WorkerHeartbeat

        while True:
            try:
                close_old_connections()
                WorkerHeartbeat.beat(self.worker)
            except Exception as exc:  # a database blip must not end the beating: the next one may work
                log.warning("worker heartbeat of %s not recorded: %s", self.worker, type(exc).__name__)
            finally:
                connection.close()  # this thread's own connection; never held between beats
            if self.stop.wait(self.interval_s):
                return


_heartbeats: dict[str, _Heartbeat] = {}


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs) -> None:
    """Start beating when a worker is ready to take tasks (its main process only)."""
    name = getattr(sender, "hostname", None)
    if not name or name in _heartbeats:
        return
    heartbeat = _heartbeats[name] = _Heartbeat(name, settings.WORKER_HEARTBEAT_S)
    heartbeat.thread.start()


@worker_shutdown.connect
def _stop_heartbeat(sender=None, **kwargs) -> None:
    """A worker that stops cleanly removes its row: only workers that vanished show as silent."""
    from fleet.models import WorkerHeartbeat

    for name, heartbeat in list(_heartbeats.items()):
        heartbeat.stop.set()
        heartbeat.thread.join(timeout=5)
        try:
            WorkerHeartbeat.objects.filter(worker=name).delete()
        except Exception as exc:  # the database may be why the worker stops
            log.warning("worker heartbeat of %s not removed: %s", name, type(exc).__name__)
        finally:
            connection.close()
        del _heartbeats[name]
