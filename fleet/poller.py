"""Polling deployments from Django: one poll now, and the cycle over every due deployment (bounded
fan-out on one event loop, batched writes). The HTTP work is ``fleet.polling``'s; leases and writes
are ``fleet.poll_store``'s; pruning and utilisation ``fleet.poll_rollups``'.

How a cycle spends its time (docs/polling.md, "Cycle"): this thread leases every due deployment
with one UPDATE, a helper thread runs every poll's requests and parsing on one event loop (no
database), and this thread stores what comes back in batches: one transaction, one bulk INSERT of
polls, one UPDATE per deployment sent with executemany and one upsert of the daily counters per
batch. One database connection per cycle, however many endpoints are in flight.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from fleet.crypto import UndecryptableSecret
from fleet.egress import guard_kwargs
from fleet.models import Deployment, EndpointPoll, ScheduledRun
from fleet.models.ops import POLL_CYCLE_JOB
from fleet.poll_store import (
    Polled,
    lease_is_free,
    lease_seconds,
    previous_snapshots,
    release_leases,
    store_polls,
    take_leases,
)
from fleet.polling import (
    MetricsSnapshot,
    PollOutcome,
    PollStatus,
    SeriesHeads,
    display_url,
    poll_endpoint,
    poll_endpoint_async,
)
from planner.engine import poll_routes

log = logging.getLogger(__name__)


def _poll_kwargs() -> dict[str, Any]:
    """The guard's settings (``fleet.egress``: registration applies the same) and every engine's routes
    (the serving-engine registry's ``poll_routes()``: ``fleet.polling`` may not import planner, so the
    routes travel with each poll)."""
    return {
        "engines": poll_routes(),
        "timeout_s": settings.POLL_TIMEOUT_S,
        "max_bytes": settings.POLL_MAX_BYTES,
        **guard_kwargs(),
        "verify": settings.POLL_VERIFY_TLS,
    }


Endpoint = tuple[str, str, str, str | None]


def _endpoint(deployment: Deployment) -> Endpoint:
    """``poll_endpoint()``'s positional arguments for a deployment (the API key decrypted).

    Raises ``UndecryptableSecret`` when the stored key cannot be decrypted: polling without it would
    report a misleading ``unauthorized`` (or poll unauthenticated), so the caller records that instead."""
    return deployment.base_url, deployment.engine, deployment.served_model_id, deployment.decrypted_api_key() or None


def undecryptable_key_outcome(deployment: Deployment, exc: UndecryptableSecret) -> PollOutcome:
    """The poll recorded, without any request, for a deployment whose stored API key no configured
    key decrypts: ``misconfigured``, saying to re-enter the key (never the key or its token)."""
    return PollOutcome(
        status=PollStatus.MISCONFIGURED, reason=str(exc), base_url=display_url(deployment.base_url),
        engine=deployment.engine,
        served_model_id=deployment.served_model_id, polled_at=time.time(),
    )  # fmt: skip


def poll_deployment(deployment: Deployment, now: datetime | None = None) -> EndpointPoll | None:
    """Poll one deployment now; None when another worker is already polling it (or it was deleted
    while this poll ran)."""
    now = now or timezone.now()
    if not deployment.base_url:
        return None
    owner, leased = take_leases([deployment.pk], now)
    if not leased:
        return None
    try:
        try:
            endpoint = _endpoint(deployment)
        except UndecryptableSecret as exc:
            outcome = undecryptable_key_outcome(deployment, exc)
        else:
            previous = previous_snapshots([deployment.pk]).get(deployment.pk)
            outcome = poll_endpoint(*endpoint, prev_snapshot=previous, **_poll_kwargs())
        stored = store_polls([Polled(deployment, outcome, timezone.now())])
    except Exception:
        release_leases(owner)
        raise
    if not stored:  # deleted while it was being polled
        release_leases(owner)
        return None
    return stored[0]


def due_deployments(now: datetime, among: Iterable[int] | None = None) -> list[Deployment]:
    """Enabled deployments with an endpoint whose interval has passed since their last poll and
    that no worker holds; only those of ``among`` (ids) when given."""
    candidates = (
        Deployment.objects.filter(enabled=True)
        .exclude(base_url="")
        .filter(lease_is_free(now))
        .select_related("cluster__sku", "model", "capacity_snapshot")
    )
    if among is not None:
        candidates = candidates.filter(pk__in=list(among))
    due = [d for d in candidates if d.last_polled is None or (now - d.last_polled).total_seconds() >= d.poll_interval_s]
    # Deployments last seen down first: they are the likeliest to hang, and a hang that starts early
    # ends early instead of waiting behind the other polls' CPU work (docs/benchmarks.md).
    return sorted(due, key=lambda d: (d.last_status != "down", d.slug))


@dataclass
class CycleReport:
    """What a cycle did: deployments due, polled and stored, skipped (another worker held them),
    failed, and its wall time in seconds."""

    due: int
    polled: int
    skipped: int
    failed: int
    seconds: float

    def summary(self) -> dict[str, float]:
        """The figures a Celery task returns (and its log shows)."""
        return {"due": self.due, "polled": self.polled, "failed": self.failed, "seconds": round(self.seconds, 3)}


def _fetch_all(
    deployments: list[tuple[Deployment, Endpoint]],
    previous: dict[int, MetricsSnapshot],
    kwargs: dict[str, Any],
    concurrency: int,
    done: queue.SimpleQueue,
) -> None:
    """Fetch every deployment on one event loop (run in its own thread, no database), at most
    ``concurrency`` at once. Each deployment yields exactly one ``(deployment, outcome or exception,
    finished_at)`` on ``done``; ``None`` follows the last one."""

    heads = SeriesHeads()  # the fleet's engines repeat their metric series: each parsed once a cycle

    async def one(deployment: Deployment, endpoint: Endpoint, gate: asyncio.Semaphore) -> None:
        async with gate:
            try:
                result: PollOutcome | BaseException = await poll_endpoint_async(
                    *endpoint, prev_snapshot=previous.get(deployment.pk), series_heads=heads, **kwargs
                )
            except Exception as exc:  # one broken deployment must not stop the cycle
                result = exc
        done.put((deployment, result, timezone.now()))

    async def every() -> None:
        gate = asyncio.Semaphore(concurrency)
        await asyncio.gather(*(one(d, endpoint, gate) for d, endpoint in deployments))

    try:
        asyncio.run(every())
    finally:
        done.put(None)


def run_poll_cycle(deployments: Iterable[Deployment] | None = None, concurrency: int | None = None) -> CycleReport:
    """Poll every due deployment, ``concurrency`` at a time (default ``POLL_CONCURRENCY``).

    Deployments another worker holds are skipped. The requests run on one event loop in a helper
    thread; this thread stores the polls in batches as they finish (whatever finished while the
    last batch was being written makes the next batch).
    """
    started_mono = time.monotonic()
    started = timezone.now()
    due = [d for d in (due_deployments(started) if deployments is None else deployments) if d.base_url]
    owner, leased = take_leases([d.pk for d in due], started) if due else ("", set())
    mine = [d for d in due if d.pk in leased]
    polled = 0
    try:
        # API keys are decrypted here, before the loop: one that cannot be is recorded at once as a
        # misconfigured poll, and the others go out.
        fetch, unreadable = [], []
        for d in mine:
            try:
                fetch.append((d, _endpoint(d)))
            except UndecryptableSecret as exc:
                unreadable.append(Polled(d, undecryptable_key_outcome(d, exc), timezone.now()))
        polled += len(store_polls(unreadable))
        if fetch:
            done: queue.SimpleQueue = queue.SimpleQueue()
            fetcher = threading.Thread(
                target=_fetch_all,
                args=(
                    fetch,
                    previous_snapshots(leased),
                    _poll_kwargs(),
                    concurrency or settings.POLL_CONCURRENCY,
                    done,
                ),
                name="poll-fetch",
                daemon=True,
            )
            fetcher.start()
            finished = False
            while not finished:
                # A poll ends within three timeouts; waiting longer than a lease means a stuck fetcher.
                batch = [done.get(timeout=lease_seconds())]
                while True:  # everything that finished while the last batch was being written
                    try:
                        batch.append(done.get_nowait())
                    except queue.Empty:
                        break
                finished = batch[-1] is None
                ok = []
                for deployment, result, at in filter(None, batch):
                    if isinstance(result, BaseException):
                        log.error("poll of deployment %s failed: %s", deployment.slug, type(result).__name__)
                    else:
                        ok.append(Polled(deployment, result, at))
                polled += len(store_polls(ok))
            fetcher.join()
    finally:
        if owner:
            release_leases(owner)  # only what was not stored (failures) is still held
    seconds = time.monotonic() - started_mono
    return CycleReport(len(due), polled, len(due) - len(mine), len(mine) - polled, seconds)


def start_poll_cycle(dispatch: Callable[[list[int]], object]) -> CycleReport:
    """The beat's cycle for a fleet of any size: recorded as started (``ScheduledRun``: how the fleet
    page and ``/healthz`` see that beat stopped), it polls the first ``POLL_CONCURRENCY`` due
    deployments here and hands each further ``POLL_CONCURRENCY`` of them to ``dispatch`` (ids; a
    Celery task per batch, so that other worker processes and machines poll them at the same time).
    """
    now = timezone.now()
    ScheduledRun.mark(POLL_CYCLE_JOB, now)  # what the fleet page and /healthz tell a stopped beat by
    due = due_deployments(now)
    size = max(1, settings.POLL_CONCURRENCY)
    for start in range(size, len(due), size):
        dispatch([d.pk for d in due[start : start + size]])
    return run_poll_cycle(due[:size])


def poll_batch(deployment_ids: Iterable[int]) -> CycleReport:
    """Poll a batch handed out by :func:`start_poll_cycle`: those of ``deployment_ids`` that are
    still due and free (a batch that waited in the queue past a later cycle finds them polled)."""
    return run_poll_cycle(due_deployments(timezone.now(), among=deployment_ids))
