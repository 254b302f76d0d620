"""Polling deployments from Django: leases, one poll, a whole cycle (bounded fan-out, batched
writes), pruning into hourly rollups, and utilisation for spend. The HTTP work is ``fleet.polling``'s.

Why a lease and not a database lock: a poll may wait seconds on a hanging endpoint, and holding a
transaction open that long would pin a connection; a lease is a conditional UPDATE that works the
same on PostgreSQL and SQLite, and expires by itself if a worker dies mid-poll.

How a cycle spends its time (docs/polling.md, "Cycle"): this thread leases every due deployment
with one UPDATE, worker threads do nothing but the guarded HTTP and the parsing (no database), and
this thread stores what they return in batches: one transaction, one bulk INSERT of polls, one bulk
UPDATE of deployments and one upsert of the daily counters per batch. One database connection per
cycle, however many threads.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Avg, Count, JSONField, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from fleet.models import DailyPollCount, Deployment, EndpointPoll, EndpointPollHourly
from fleet.polling import MetricsSnapshot, PollOutcome, poll_endpoint, poll_endpoint_async
from planner.engine.errors import EngineInputError

log = logging.getLogger(__name__)

#: Poll columns copied from the derived metrics as they are, and those converted from seconds to ms.
DERIVED_FIELDS = ("requests_running", "requests_waiting", "kv_cache_usage", "prefix_cache_hit_rate",
                  "prompt_tokens_per_s", "generation_tokens_per_s")  # fmt: skip
MILLISECOND_FIELDS = {"ttft_p50_ms": "ttft_p50_s", "ttft_p95_ms": "ttft_p95_s", "itl_p50_ms": "itl_p50_s",
                      "itl_p95_ms": "itl_p95_s"}  # fmt: skip
#: Deployment columns a stored poll writes (the live state) and the lease it releases.
LIVE_FIELDS = ("last_status", "last_status_changed", "last_polled", "last_metrics", "poll_lease_until",
               "poll_lease_owner")  # fmt: skip
#: Deployments per UPDATE or SELECT of a cycle (keeps IN lists well under every database's parameter cap).
LEASE_CHUNK = 500


def _lease_seconds() -> float:
    # Up to three requests in a row, each bounded by the timeout, plus a margin for the write.
    return settings.POLL_TIMEOUT_S * 3 + 10


def _free_lease(now: datetime) -> Q:
    return Q(poll_lease_until__isnull=True) | Q(poll_lease_until__lt=now)


def take_leases(deployment_ids: Iterable[int], now: datetime) -> tuple[str, set[int]]:
    """Lease every deployment of ``deployment_ids`` that no other worker holds; returns the lease's
    owner token and the ids leased. One conditional UPDATE per 500 ids, then one SELECT."""
    owner = uuid.uuid4().hex
    until = now + timedelta(seconds=_lease_seconds())
    ids = list(deployment_ids)
    for i in range(0, len(ids), LEASE_CHUNK):
        chunk = ids[i : i + LEASE_CHUNK]
        Deployment.objects.filter(pk__in=chunk).filter(_free_lease(now)).update(
            poll_lease_until=until, poll_lease_owner=owner
        )
    leased = set(Deployment.objects.filter(poll_lease_owner=owner).values_list("pk", flat=True))
    return owner, leased


def acquire_lease(deployment_id: int, now: datetime) -> bool:
    """Take the right to poll this deployment; False when another worker holds it."""
    return bool(take_leases([deployment_id], now)[1])


def release_leases(owner: str) -> None:
    """Give back whatever ``owner`` still holds (after a failure)."""
    Deployment.objects.filter(poll_lease_owner=owner).update(poll_lease_until=None, poll_lease_owner="")


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def predicted_cache_tokens(deployment: Deployment) -> int | None:
    """KV-cache tokens the sizing engine predicts for one replica (what one endpoint reports).

    Per data-parallel rank: cache budget per GPU / KV bytes per token per GPU; times dp.
    """
    try:
        result = deployment.sizing()
    except EngineInputError:
        return None
    if result.cache_bytes <= 0 or result.kv_bytes_per_token_per_gpu <= 0:
        return None
    return result.cache_bytes // result.kv_bytes_per_token_per_gpu * deployment.dp


def previous_snapshots(deployment_ids: Iterable[int]) -> dict[int, MetricsSnapshot]:
    """The snapshot of each deployment's latest poll (for rates), one query per 500 deployments."""
    latest = EndpointPoll.objects.filter(deployment=OuterRef("pk")).order_by("-polled_at").values("outcome")[:1]
    ids = list(deployment_ids)
    found = {}
    for i in range(0, len(ids), LEASE_CHUNK):
        rows = (
            Deployment.objects.filter(pk__in=ids[i : i + LEASE_CHUNK])
            .annotate(previous=Subquery(latest, output_field=JSONField()))
            .values_list("pk", "previous")
        )
        for pk, outcome in rows:
            snapshot = MetricsSnapshot.from_dict(outcome.get("snapshot")) if isinstance(outcome, dict) else None
            if snapshot is not None:
                found[pk] = snapshot
    return found


@dataclass
class Polled:
    """One finished poll waiting to be stored: the deployment as leased, what came back, when."""

    deployment: Deployment
    outcome: PollOutcome
    at: datetime


def _poll_row(item: Polled) -> tuple[EndpointPoll, dict[str, Any]]:
    deployment, outcome = item.deployment, item.outcome
    snap, derived = outcome.snapshot, outcome.derived
    observed = snap.cache_capacity_tokens if snap else None
    values: dict[str, Any] = {name: getattr(derived, name, None) for name in DERIVED_FIELDS}
    values |= {column: _ms(getattr(derived, seconds, None)) for column, seconds in MILLISECOND_FIELDS.items()}
    values["observed_cache_tokens"] = observed
    values["predicted_cache_tokens"] = predicted_cache_tokens(deployment) if observed else None
    poll = EndpointPoll(
        deployment_id=deployment.pk, polled_at=item.at, status=str(outcome.status), reason=outcome.reason or "",
        latency_ms=_ms(outcome.latencies_s.get("models")), counter_reset=bool(derived and derived.counter_reset),
        outcome=outcome.to_dict(), **values,
    )  # fmt: skip
    return poll, values


def _daily_upsert_sql() -> str:
    table = connection.ops.quote_name(DailyPollCount._meta.db_table)
    # Same statement on PostgreSQL and SQLite (3.24+): add to today's row, or create it. The table
    # name is our own model's, quoted; the values are parameters.
    return (
        f"INSERT INTO {table} (deployment_id, day, polls, busy_polls) VALUES (%s, %s, 1, %s) "  # noqa: S608
        f"ON CONFLICT (deployment_id, day) DO UPDATE SET polls = {table}.polls + 1, "
        f"busy_polls = {table}.busy_polls + excluded.busy_polls"
    )


def _daily_params(deployment_id: int, day: date, busy: bool) -> list:
    return [deployment_id, connection.ops.adapt_datefield_value(day), int(busy)]


def _live_update_sql(fields: list) -> str:
    qn = connection.ops.quote_name
    assignments = ", ".join(f"{qn(f.column)} = %s" for f in fields)
    return f"UPDATE {qn(Deployment._meta.db_table)} SET {assignments} WHERE {qn(Deployment._meta.pk.column)} = %s"  # noqa: S608


def store_polls(items: list[Polled]) -> list[EndpointPoll]:
    """Store finished polls and update their deployments' live state, releasing their leases.

    One transaction for the batch. If the batch cannot be written (a deployment deleted while it
    was being polled), each poll is stored on its own so the others are not lost.
    """
    if not items:
        return []
    try:
        with transaction.atomic():
            return _store(items)
    except DatabaseError:
        if len(items) == 1:
            raise
        stored: list[EndpointPoll] = []
        for item in items:
            try:
                with transaction.atomic():
                    polls = _store([item])
            except DatabaseError:  # (the deferred foreign key check fails at the commit)
                log.exception("storing the poll of deployment %s failed", item.deployment.slug)
            else:
                stored += polls
        return stored


def _store(items: list[Polled]) -> list[EndpointPoll]:
    rows = [_poll_row(item) for item in items]
    polls = EndpointPoll.objects.bulk_create([poll for poll, _values in rows])
    zipped = list(zip(items, rows, strict=True))
    deployments = []
    for item, (_poll, values) in zipped:
        d, status = item.deployment, str(item.outcome.status)
        if d.last_status != status:
            d.last_status_changed = item.at
        d.last_status, d.last_polled = status, item.at
        d.last_metrics = {k: v for k, v in values.items() if v is not None}
        d.poll_lease_until, d.poll_lease_owner = None, ""
        deployments.append(d)
    # One parameterised UPDATE per deployment, sent with executemany: bulk_update() would build a
    # CASE WHEN per field and row, and cost more CPU than the polls themselves.
    fields = [Deployment._meta.get_field(name) for name in LIVE_FIELDS]
    with connection.cursor() as cursor:
        cursor.executemany(
            _live_update_sql(fields),
            [[f.get_db_prep_save(getattr(d, f.attname), connection) for f in fields] + [d.pk] for d in deployments],
        )
        counts = [_daily_params(it.deployment.pk, it.at.date(), bool(v["requests_running"])) for it, (_p, v) in zipped]
        cursor.executemany(_daily_upsert_sql(), counts)
    return polls


def count_poll(deployment_id: int, day: date, busy: bool) -> None:
    """Add one poll to the deployment's daily counters (one upsert)."""
    with connection.cursor() as cursor:
        cursor.execute(_daily_upsert_sql(), _daily_params(deployment_id, day, busy))


def _poll_kwargs() -> dict[str, Any]:
    return {
        "timeout_s": settings.POLL_TIMEOUT_S,
        "max_bytes": settings.POLL_MAX_BYTES,
        "allowed_networks": tuple(settings.POLL_ALLOWED_NETWORKS),
        "verify": settings.POLL_VERIFY_TLS,
    }


def _endpoint(deployment: Deployment) -> tuple[str, str, str, str | None]:
    """``poll_endpoint()``'s positional arguments for a deployment (the API key decrypted)."""
    return deployment.base_url, deployment.engine, deployment.served_model_id, deployment.api_key() or None


def poll_deployment(deployment: Deployment, now: datetime | None = None) -> EndpointPoll | None:
    """Poll one deployment now; None when another worker is already polling it."""
    now = now or timezone.now()
    if not deployment.base_url:
        return None
    owner, leased = take_leases([deployment.pk], now)
    if not leased:
        return None
    try:
        previous = previous_snapshots([deployment.pk]).get(deployment.pk)
        outcome = poll_endpoint(*_endpoint(deployment), prev_snapshot=previous, **_poll_kwargs())
        deployment.poll_lease_owner = owner
        return store_polls([Polled(deployment, outcome, timezone.now())])[0]
    except Exception:
        release_leases(owner)
        raise


def due_deployments(now: datetime) -> list[Deployment]:
    """Enabled deployments with an endpoint whose interval has passed since their last poll."""
    candidates = (
        Deployment.objects.filter(enabled=True)
        .exclude(base_url="")
        .filter(_free_lease(now))
        .select_related("cluster__sku", "model")
    )
    due = [d for d in candidates if d.last_polled is None or (now - d.last_polled).total_seconds() >= d.poll_interval_s]
    # Deployments last seen down first: they are the likeliest to hang, and a hang that starts early
    # ends early instead of waiting behind the other polls' CPU work (docs/benchmarks.md).
    return sorted(due, key=lambda d: (d.last_status != "down", d.slug))


@dataclass
class CycleReport:
    due: int
    polled: int
    skipped: int
    failed: int
    seconds: float


def _fetch_all(
    deployments: list[Deployment],
    previous: dict[int, MetricsSnapshot],
    kwargs: dict[str, Any],
    concurrency: int,
    done: queue.SimpleQueue,
) -> None:
    """Fetch every deployment on one event loop (run in its own thread, no database), at most
    ``concurrency`` at once. Each deployment yields exactly one ``(deployment, outcome or exception,
    finished_at)`` on ``done``; ``None`` follows the last one."""

    async def one(deployment: Deployment, gate: asyncio.Semaphore) -> None:
        async with gate:
            try:
                result: PollOutcome | BaseException = await poll_endpoint_async(
                    *_endpoint(deployment), prev_snapshot=previous.get(deployment.pk), **kwargs
                )
            except Exception as exc:  # one broken deployment must not stop the cycle
                result = exc
        done.put((deployment, result, timezone.now()))

    async def every() -> None:
        gate = asyncio.Semaphore(concurrency)
        await asyncio.gather(*(one(d, gate) for d in deployments))

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
    for d in mine:
        d.poll_lease_owner = owner
    polled = 0
    try:
        if mine:
            done: queue.SimpleQueue = queue.SimpleQueue()
            fetcher = threading.Thread(
                target=_fetch_all,
                args=(mine, previous_snapshots(leased), _poll_kwargs(), concurrency or settings.POLL_CONCURRENCY, done),
                name="poll-fetch",
                daemon=True,
            )
            fetcher.start()
            finished = False
            while not finished:
                # A poll ends within three timeouts; waiting longer than a lease means a stuck fetcher.
                batch = [done.get(timeout=_lease_seconds())]
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


def _max(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def prune_polls(now: datetime | None = None) -> tuple[int, int]:
    """Roll raw polls older than the retention into hourly rows, delete them, and delete rollups
    older than theirs. Idempotent: an hour already rolled up is merged, never duplicated."""
    now = now or timezone.now()
    cutoff = (now - timedelta(days=settings.POLL_RETENTION_DAYS)).replace(minute=0, second=0, microsecond=0)
    old = EndpointPoll.objects.filter(polled_at__lt=cutoff)
    groups = (
        old.annotate(hour=TruncHour("polled_at"))
        .values("deployment_id", "hour")
        .annotate(
            polls=Count("id"),
            up_polls=Count("id", filter=Q(status="up")),
            busy_polls=Count("id", filter=Q(requests_running__gt=0)),
            running_avg=Avg("requests_running"),
            running_max=Max("requests_running"),
            kv_avg=Avg("kv_cache_usage"),
            gen_avg=Avg("generation_tokens_per_s"),
            ttft_max=Max("ttft_p95_ms"),
            itl_max=Max("itl_p95_ms"),
        )
    )
    rolled = 0
    with transaction.atomic():
        for g in groups:
            row, _ = EndpointPollHourly.objects.get_or_create(
                deployment_id=g["deployment_id"], hour=g["hour"],
                defaults={"polls": 0, "up_polls": 0, "busy_polls": 0},
            )  # fmt: skip
            total = row.polls + g["polls"]

            def merge(old_avg, new_avg, old_n=row.polls, new_n=g["polls"], n=total):
                if new_avg is None:
                    return old_avg
                return new_avg if old_avg is None else (old_avg * old_n + new_avg * new_n) / n

            row.requests_running_avg = merge(row.requests_running_avg, g["running_avg"])
            row.kv_cache_usage_avg = merge(row.kv_cache_usage_avg, g["kv_avg"])
            row.generation_tokens_per_s_avg = merge(row.generation_tokens_per_s_avg, g["gen_avg"])
            row.requests_running_max = _max(row.requests_running_max, g["running_max"])
            row.ttft_p95_ms_max = _max(row.ttft_p95_ms_max, g["ttft_max"])
            row.itl_p95_ms_max = _max(row.itl_p95_ms_max, g["itl_max"])
            row.polls, row.up_polls, row.busy_polls = (
                total,
                row.up_polls + g["up_polls"],
                row.busy_polls + g["busy_polls"],
            )
            row.save()
            rolled += g["polls"]
        old.delete()
        rollup_cutoff = now - timedelta(days=settings.POLL_ROLLUP_RETENTION_DAYS)
        EndpointPollHourly.objects.filter(hour__lt=rollup_cutoff).delete()
        DailyPollCount.objects.filter(day__lt=rollup_cutoff.date()).delete()
    return rolled, EndpointPoll.objects.count()


def cluster_utilisation(start: date, end: date) -> dict[str, float]:
    """Busy fraction per cluster slug over days [start, end): polls that saw running requests over
    all polls of its deployments, from the daily counters. Clusters without polls are absent."""
    rows = (
        DailyPollCount.objects.filter(day__gte=start, day__lt=end)
        .values("deployment__cluster__slug")
        .annotate(n=Sum("polls"), b=Sum("busy_polls"))
    )
    return {r["deployment__cluster__slug"]: r["b"] / r["n"] for r in rows if r["n"]}
