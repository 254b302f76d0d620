"""Poll history kept small and summed up: raw polls rolled into hourly rows and pruned, the
requests running per deployment (for spend's utilisation) and the untrusted polls left out of it, from
the daily counters the poller keeps, and a deployment's poll history over a range."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Avg, Count, Max, Q, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from fleet.models import DailyPollCount, EndpointPoll, EndpointPollHourly


def _max(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _hourly() -> dict[str, Any]:
    """How raw polls sum into one hour: the same for the rollups pruning writes and for the hourly points
    of a range whose raw polls are not pruned yet (so a range reads the same before and after pruning)."""
    return {
        "polls": Count("id"),
        "up_polls": Count("id", filter=Q(status="up")),
        "busy_polls": Count("id", filter=Q(requests_running__gt=0)),
        "running_avg": Avg("requests_running"),
        "running_max": Max("requests_running"),
        "kv_avg": Avg("kv_cache_usage"),
        "gen_avg": Avg("generation_tokens_per_s"),
        "prompt_avg": Avg("prompt_tokens_per_s"),
        "ttft_max": Max("ttft_p95_ms"),
        "itl_max": Max("itl_p95_ms"),
    }


def prune_polls(now: datetime | None = None) -> tuple[int, int]:
    """Roll raw polls older than the retention into hourly rows, delete them, and delete rollups
    older than theirs. Idempotent: an hour already rolled up is merged, never duplicated."""
    now = now or timezone.now()
    cutoff = (now - timedelta(days=settings.POLL_RETENTION_DAYS)).replace(minute=0, second=0, microsecond=0)
    old = EndpointPoll.objects.filter(polled_at__lt=cutoff)
    groups = old.annotate(hour=TruncHour("polled_at")).values("deployment_id", "hour").annotate(**_hourly())
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
            row.prompt_tokens_per_s_avg = merge(row.prompt_tokens_per_s_avg, g["prompt_avg"])
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


#: A range up to this long is drawn poll by poll; a longer one hour by hour.
RAW_POLL_SPAN = timedelta(hours=2)
#: The most polls a poll-by-poll range reads (2 h of polls every 5 s).
MAX_RAW_POINTS = 1440


@dataclass(frozen=True)
class PollPoint:
    """One point of a deployment's poll history: one poll, or one hour of polls summed up (raw polls
    of the hour and its rollup alike, so a range reads the same across the pruning cutoff)."""

    at: datetime
    polls: int
    up_polls: int
    busy_polls: int
    running_avg: float | None
    running_max: float | None
    kv_avg: float | None
    gen_avg: float | None
    ttft_p95_max: float | None
    tpot_p95_max: float | None

    @classmethod
    def empty(cls, at: datetime) -> PollPoint:
        """A point without polls (an hour the range has no polls for)."""
        return cls(at, 0, 0, 0, None, None, None, None, None, None)

    @property
    def up_fraction(self) -> float | None:
        return self.up_polls / self.polls if self.polls else None


@dataclass(frozen=True)
class PollHistory:
    """A deployment's polls over [start, end): ``resolution`` is ``poll`` or ``hour``."""

    start: datetime
    end: datetime
    resolution: str
    points: list[PollPoint]

    @property
    def polls(self) -> int:
        return sum(p.polls for p in self.points)


def poll_history(deployment_id: int, start: datetime, end: datetime) -> PollHistory:
    """The polls of a deployment over [start, end): poll by poll for a short range, else one point an
    hour from the hourly rollups (pruned hours) and the raw polls of the hours not yet pruned, summed
    the way ``prune_polls`` sums them. Two queries at most."""
    raw = EndpointPoll.objects.filter(deployment_id=deployment_id, polled_at__gte=start, polled_at__lt=end)
    if end - start <= RAW_POLL_SPAN:
        rows = raw.order_by("-polled_at").values(
            "polled_at", "status", "requests_running", "kv_cache_usage", "generation_tokens_per_s",
            "ttft_p95_ms", "itl_p95_ms",
        )[:MAX_RAW_POINTS]  # fmt: skip
        points = [
            PollPoint(
                at=r["polled_at"],
                polls=1,
                up_polls=int(r["status"] == "up"),
                busy_polls=int((r["requests_running"] or 0) > 0),
                running_avg=r["requests_running"],
                running_max=r["requests_running"],
                kv_avg=r["kv_cache_usage"],
                gen_avg=r["generation_tokens_per_s"],
                ttft_p95_max=r["ttft_p95_ms"],
                tpot_p95_max=r["itl_p95_ms"],
            )
            for r in rows
        ]
        return PollHistory(start, end, "poll", points[::-1])
    hours: dict[datetime, PollPoint] = {}
    rollups = EndpointPollHourly.objects.filter(deployment_id=deployment_id, hour__gte=start, hour__lt=end)
    for r in rollups.order_by("hour"):
        hours[r.hour] = PollPoint(
            at=r.hour,
            polls=r.polls,
            up_polls=r.up_polls,
            busy_polls=r.busy_polls,
            running_avg=r.requests_running_avg,
            running_max=r.requests_running_max,
            kv_avg=r.kv_cache_usage_avg,
            gen_avg=r.generation_tokens_per_s_avg,
            ttft_p95_max=r.ttft_p95_ms_max,
            tpot_p95_max=r.itl_p95_ms_max,
        )
    groups = raw.annotate(hour=TruncHour("polled_at")).values("hour").annotate(**_hourly()).order_by("hour")
    for g in groups:
        point = PollPoint(
            at=g["hour"],
            polls=g["polls"],
            up_polls=g["up_polls"],
            busy_polls=g["busy_polls"],
            running_avg=g["running_avg"],
            running_max=g["running_max"],
            kv_avg=g["kv_avg"],
            gen_avg=g["gen_avg"],
            ttft_p95_max=g["ttft_max"],
            tpot_p95_max=g["itl_max"],
        )
        hours[point.at] = _merged(hours[point.at], point) if point.at in hours else point
    return PollHistory(start, end, "hour", [hours[h] for h in sorted(hours)])


def _merged(a: PollPoint, b: PollPoint) -> PollPoint:
    """Two summaries of one hour as one (an hour partly rolled up and partly still raw)."""
    n = a.polls + b.polls

    def avg(x: float | None, y: float | None) -> float | None:
        if x is None or y is None:
            return y if x is None else x
        return (x * a.polls + y * b.polls) / n

    return PollPoint(
        at=a.at,
        polls=n,
        up_polls=a.up_polls + b.up_polls,
        busy_polls=a.busy_polls + b.busy_polls,
        running_avg=avg(a.running_avg, b.running_avg),
        running_max=_max(a.running_max, b.running_max),
        kv_avg=avg(a.kv_avg, b.kv_avg),
        gen_avg=avg(a.gen_avg, b.gen_avg),
        ttft_p95_max=_max(a.ttft_p95_max, b.ttft_p95_max),
        tpot_p95_max=_max(a.tpot_p95_max, b.tpot_p95_max),
    )


def running_totals(start: date, end: date) -> dict[int, tuple[float, int]]:
    """Per deployment id, over days [start, end): ``(requests running summed, polls)`` over the polls
    that read a running-requests figure or found the endpoint not up (0 running), from the daily
    counters the poller keeps (``DailyPollCount``: a few rows a deployment a month, never the raw
    polls). Deployments without such a poll are absent (their utilisation is unknown)."""
    rows = (
        DailyPollCount.objects.filter(day__gte=start, day__lt=end)
        .values("deployment_id")
        .annotate(n=Sum("running_polls"), running=Sum("running_sum"))
    )
    return {r["deployment_id"]: (r["running"] or 0.0, r["n"]) for r in rows if r["n"]}


def left_out_totals(start: date, end: date, deployment_ids: list[int] | None = None) -> dict[int, dict[str, int]]:
    """Per deployment id, over days [start, end): the polls left out of utilisation and token volumes
    (``fleet.models.polls.poll_distrust``), per reason (``DailyPollCount.LEFT_OUT_COLUMNS``), from the
    daily counters. Deployments with none left out are absent."""
    columns = DailyPollCount.LEFT_OUT_COLUMNS
    rows = DailyPollCount.objects.filter(day__gte=start, day__lt=end)
    if deployment_ids is not None:
        rows = rows.filter(deployment_id__in=list(deployment_ids))
    sums = rows.values("deployment_id").annotate(**{reason: Sum(column) for reason, column in columns.items()})
    found = {}
    for r in sums:
        counts = {reason: r[reason] for reason in columns if r[reason]}
        if counts:
            found[r["deployment_id"]] = counts
    return found
