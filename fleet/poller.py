"""Polling deployments from Django: one poll (with a lease), a whole cycle (bounded fan-out),
pruning into hourly rollups, and utilisation for spend. The HTTP work is ``fleet.polling``'s.

Why a lease and not a database lock: a poll may wait seconds on a hanging endpoint, and holding a
transaction open that long would pin a connection; a lease is a single conditional UPDATE that
works the same on PostgreSQL and SQLite, and expires by itself if a worker dies mid-poll.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import Avg, Count, F, Max, Q, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from fleet.models import DailyPollCount, Deployment, EndpointPoll, EndpointPollHourly
from fleet.polling import MetricsSnapshot, PollOutcome, poll_endpoint
from planner.engine.errors import EngineInputError

log = logging.getLogger(__name__)

#: Poll columns copied from the derived metrics as they are, and those converted from seconds to ms.
DERIVED_FIELDS = ("requests_running", "requests_waiting", "kv_cache_usage", "prefix_cache_hit_rate",
                  "prompt_tokens_per_s", "generation_tokens_per_s")  # fmt: skip
MILLISECOND_FIELDS = {"ttft_p50_ms": "ttft_p50_s", "ttft_p95_ms": "ttft_p95_s", "itl_p50_ms": "itl_p50_s",
                      "itl_p95_ms": "itl_p95_s"}  # fmt: skip


def _lease_seconds() -> float:
    # Up to three requests in a row, each bounded by the timeout, plus a margin.
    return settings.POLL_TIMEOUT_S * 3 + 10


def acquire_lease(deployment_id: int, now: datetime) -> bool:
    """Take the right to poll this deployment; False when another worker holds it."""
    until = now + timedelta(seconds=_lease_seconds())
    free = Q(poll_lease_until__isnull=True) | Q(poll_lease_until__lt=now)
    return Deployment.objects.filter(pk=deployment_id).filter(free).update(poll_lease_until=until) == 1


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


def record(deployment: Deployment, outcome: PollOutcome, now: datetime) -> EndpointPoll:
    """Store one poll and update the deployment's live state, in one transaction."""
    snap, derived = outcome.snapshot, outcome.derived
    observed = snap.cache_capacity_tokens if snap else None
    values: dict[str, float | int | None] = {name: getattr(derived, name, None) for name in DERIVED_FIELDS}
    values |= {column: _ms(getattr(derived, seconds, None)) for column, seconds in MILLISECOND_FIELDS.items()}
    values["observed_cache_tokens"] = observed
    values["predicted_cache_tokens"] = predicted_cache_tokens(deployment) if observed else None
    with transaction.atomic():
        poll = EndpointPoll.objects.create(
            deployment=deployment, polled_at=now, status=str(outcome.status), reason=outcome.reason or "",
            latency_ms=_ms(outcome.latencies_s.get("models")), counter_reset=bool(derived and derived.counter_reset),
            outcome=outcome.to_dict(), **values,
        )  # fmt: skip
        count_poll(deployment.pk, now.date(), busy=bool(values["requests_running"]))
        changed = deployment.last_status != str(outcome.status)
        Deployment.objects.filter(pk=deployment.pk).update(
            last_status=str(outcome.status),
            last_status_changed=now if changed else F("last_status_changed"),
            last_polled=now,
            last_metrics={k: v for k, v in values.items() if v is not None},
            poll_lease_until=None,
        )
    return poll


def count_poll(deployment_id: int, day: date, busy: bool) -> None:
    """Add one poll to the deployment's daily counters (call inside the poll's transaction)."""
    increments = {"polls": F("polls") + 1, "busy_polls": F("busy_polls") + (1 if busy else 0)}
    if DailyPollCount.objects.filter(deployment_id=deployment_id, day=day).update(**increments):
        return
    try:
        with transaction.atomic():
            DailyPollCount.objects.create(deployment_id=deployment_id, day=day, polls=1, busy_polls=int(busy))
    except IntegrityError:  # another worker created today's row first: add to it
        DailyPollCount.objects.filter(deployment_id=deployment_id, day=day).update(**increments)


def poll_deployment(deployment: Deployment, now: datetime | None = None) -> EndpointPoll | None:
    """Poll one deployment now; None when another worker is already polling it."""
    now = now or timezone.now()
    if not deployment.base_url or not acquire_lease(deployment.pk, now):
        return None
    try:
        last = deployment.polls.order_by("-polled_at").values_list("outcome", flat=True).first()
        previous = MetricsSnapshot.from_dict(last.get("snapshot")) if last else None
        outcome = poll_endpoint(
            deployment.base_url,
            deployment.engine,
            deployment.served_model_id,
            deployment.api_key() or None,
            timeout_s=settings.POLL_TIMEOUT_S,
            max_bytes=settings.POLL_MAX_BYTES,
            allowed_networks=settings.POLL_ALLOWED_NETWORKS,
            prev_snapshot=previous,
            verify=settings.POLL_VERIFY_TLS,
        )
        return record(deployment, outcome, timezone.now())
    except Exception:
        Deployment.objects.filter(pk=deployment.pk).update(poll_lease_until=None)
        raise


def due_deployments(now: datetime) -> list[Deployment]:
    """Enabled deployments with an endpoint whose interval has passed since their last poll."""
    candidates = (
        Deployment.objects.filter(enabled=True)
        .exclude(base_url="")
        .filter(Q(poll_lease_until__isnull=True) | Q(poll_lease_until__lt=now))
        .select_related("cluster__sku", "model")
    )
    due = [d for d in candidates if d.last_polled is None or (now - d.last_polled).total_seconds() >= d.poll_interval_s]
    # Deployments last seen down first: they are the likeliest to hang, and a hang that starts early
    # ends early instead of waiting behind the other polls' CPU work (measured 2-4 s off a
    # 500-endpoint cycle, docs/benchmarks.md).
    return sorted(due, key=lambda d: (d.last_status != "down", d.slug))


@dataclass
class CycleReport:
    due: int
    polled: int
    skipped: int
    failed: int
    seconds: float


def _poll_one(deployment: Deployment) -> str:
    try:
        poll = poll_deployment(deployment)
        return "skipped" if poll is None else "polled"
    except Exception:  # one broken deployment must not stop the cycle; logged without secrets
        log.exception("poll of deployment %s failed", deployment.slug)
        return "failed"


def _drain(todo: queue.SimpleQueue) -> list[str]:
    """One worker thread: poll deployments from the shared queue until it is empty."""
    results = []
    try:
        while True:
            try:
                deployment = todo.get_nowait()
            except queue.Empty:
                return results
            results.append(_poll_one(deployment))
    finally:
        # Each thread has its own database connection, opened once and closed here; left open,
        # it would outlive the cycle.
        connections.close_all()


def run_poll_cycle(deployments: Iterable[Deployment] | None = None, concurrency: int | None = None) -> CycleReport:
    """Poll every due deployment, ``concurrency`` at a time (default ``POLL_CONCURRENCY``)."""
    started = timezone.now()
    due = list(due_deployments(started) if deployments is None else deployments)
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for deployment in due:
        todo.put(deployment)
    workers = max(1, min(concurrency or settings.POLL_CONCURRENCY, len(due) or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="poll") as pool:
        futures = [pool.submit(_drain, todo) for _ in range(workers)]
        results = [r for f in futures for r in f.result()]
    seconds = (timezone.now() - started).total_seconds()
    return CycleReport(len(due), results.count("polled"), results.count("skipped"), results.count("failed"), seconds)


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
