"""Poll history kept small and summed up: raw polls rolled into hourly rows and pruned, and the
busy fraction per cluster (for spend) from the daily counters the poller keeps."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Avg, Count, Max, Q, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from fleet.models import DailyPollCount, EndpointPoll, EndpointPollHourly


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
                deployment_id=g["deployment_id"],
                hour=g["hour"],
                defaults={"polls": 0, "up_polls": 0, "busy_polls": 0},
            )
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
