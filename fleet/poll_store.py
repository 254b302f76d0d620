"""Storing polls from Django: leases (who may poll a deployment now), the previous snapshots, and
batched writes of finished polls with the deployments' live state and daily counters.

Why a lease and not a database lock: a poll may wait seconds on a hanging endpoint, and holding a
transaction open that long would pin a connection; a lease is a conditional UPDATE that works the
same on PostgreSQL and SQLite, and expires by itself if a worker dies mid-poll.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import JSONField, OuterRef, Q, Subquery

from fleet.models import DailyPollCount, Deployment, EndpointPoll
from fleet.models.polls import poll_distrust
from fleet.polling import MetricsSnapshot, PollOutcome, public_outcome

log = logging.getLogger(__name__)

#: Poll columns copied from the derived metrics as they are, and those converted from seconds to ms.
DERIVED_FIELDS = ("requests_running", "requests_waiting", "kv_cache_usage", "prefix_cache_hit_rate",
                  "prompt_tokens_per_s", "generation_tokens_per_s")  # fmt: skip
MILLISECOND_FIELDS = {"ttft_p50_ms": "ttft_p50_s", "ttft_p95_ms": "ttft_p95_s", "itl_p50_ms": "itl_p50_s",
                      "itl_p95_ms": "itl_p95_s"}  # fmt: skip
#: Deployment columns a stored poll writes (the live state) and the lease it releases.
LIVE_FIELDS = Deployment.LIVE_FIELDS
#: Deployments per UPDATE or SELECT of a cycle (keeps IN lists well under every database's parameter cap).
LEASE_CHUNK = 500


def lease_seconds() -> float:
    # Up to three requests in a row, each bounded by the timeout, plus a margin for the write.
    return settings.POLL_TIMEOUT_S * 3 + 10


def lease_is_free(now: datetime) -> Q:
    return Q(poll_lease_until__isnull=True) | Q(poll_lease_until__lt=now)


def take_leases(deployment_ids: Iterable[int], now: datetime) -> tuple[str, set[int]]:
    """Lease every deployment of ``deployment_ids`` that no other worker holds; returns the lease's
    owner token and the ids leased. One conditional UPDATE per 500 ids, then one SELECT."""
    owner = uuid.uuid4().hex
    until = now + timedelta(seconds=lease_seconds())
    ids = list(deployment_ids)
    for i in range(0, len(ids), LEASE_CHUNK):
        chunk = ids[i : i + LEASE_CHUNK]
        Deployment.objects.filter(pk__in=chunk).filter(lease_is_free(now)).update(
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


def predicted_cache_of(result: Any, dp: int) -> dict[str, Any]:
    """What the sizing engine predicts an endpoint publishes, from a deployment's sizing with its own
    engine's profile (``result``) and its ``dp``: ``{"tokens": cache tokens, "blocks": [num_blocks,
    block_size] | None}``. The capacity snapshot stores it (``planner.snapshots``); polls read it there.

    ``tokens`` is for one replica, times dp: vLLM's ``cache_config_info`` blocks x block size,
    SGLang's ``max_total_num_tokens``; with the generic profile, cache budget per GPU / KV bytes per
    token per GPU. ``blocks`` is the vLLM profile's per-GPU allocation (None for other engines).
    """
    alloc = result.allocation
    if alloc is not None:
        vllm = alloc.engine == "vllm"
        tokens = alloc.num_blocks * alloc.block_size_tokens if vllm else alloc.kv_cache_tokens
        blocks = [alloc.num_blocks, alloc.block_size_tokens] if vllm else None
        return {"tokens": tokens * dp or None, "blocks": blocks}
    if result.cache_bytes <= 0 or result.kv_bytes_per_token_per_gpu <= 0:
        return {"tokens": None, "blocks": None}
    return {"tokens": result.cache_bytes // result.kv_bytes_per_token_per_gpu * dp, "blocks": None}


def predicted_cache(deployment: Deployment) -> tuple[int | None, tuple[int, int] | None]:
    """``(cache_tokens, (num_blocks, block_size))`` the sizing engine predicts for ``deployment``, read
    from its stored capacity snapshot (computed by the workers; no sizing per poll): ``(None, None)``
    until one is computed, or where the deployment does not size."""
    snapshot = getattr(deployment, "capacity_snapshot", None) if deployment.pk else None
    predicted = ((snapshot.figures or {}) if snapshot is not None else {}).get("predicted_cache") or {}
    blocks = predicted.get("blocks")
    return predicted.get("tokens"), (tuple(blocks) if blocks else None)


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
    deployment, detailed = item.deployment, item.outcome
    # People (pages, API) see one sentence per status; the transport's words stay in this log.
    outcome = public_outcome(detailed)
    if detailed.reason != outcome.reason or detailed.warnings != outcome.warnings:
        log.info("poll %s: %s: %s; warnings: %s", deployment.slug, detailed.status, detailed.reason,
                 "; ".join(detailed.warnings) or "none")  # fmt: skip
    snap, derived = outcome.snapshot, outcome.derived
    observed = snap.cache_capacity_tokens if snap else None
    values: dict[str, Any] = {name: getattr(derived, name, None) for name in DERIVED_FIELDS}
    values |= {column: _ms(getattr(derived, seconds, None)) for column, seconds in MILLISECOND_FIELDS.items()}
    values["observed_cache_tokens"] = observed
    blocks = (snap.num_gpu_blocks, snap.block_size_tokens) if snap else (None, None)
    tokens, predicted = predicted_cache(deployment) if observed or blocks[0] else (None, None)
    values["predicted_cache_tokens"] = tokens if observed else None
    values["observed_num_blocks"], values["observed_block_size"] = blocks
    values["predicted_num_blocks"], values["predicted_block_size"] = (predicted if blocks[0] else None) or (None, None)
    poll = EndpointPoll(
        deployment_id=deployment.pk, polled_at=item.at, status=str(outcome.status), reason=outcome.reason or "",
        latency_ms=_ms(outcome.latencies_s.get("models")), counter_reset=bool(derived and derived.counter_reset),
        outcome=outcome.to_dict(), **values,
    )  # fmt: skip
    return poll, values


def _daily_upsert_sql() -> str:
    table = connection.ops.quote_name(DailyPollCount._meta.db_table)
    left_out = list(DailyPollCount.LEFT_OUT_COLUMNS.values())
    # Same statement on PostgreSQL and SQLite (3.24+): add to today's row, or create it. The table
    # name and columns are our own model's, quoted; the values are parameters.
    added = ["busy_polls", "running_polls", "running_sum", "output_tokens", "output_seconds", "prompt_tokens",
             "prompt_seconds", *left_out]  # fmt: skip
    columns = ", ".join(connection.ops.quote_name(c) for c in added)
    updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in map(connection.ops.quote_name, added))
    return (
        f"INSERT INTO {table} (deployment_id, day, polls, {columns}) "  # noqa: S608
        f"VALUES (%s, %s, 1, {', '.join(['%s'] * len(added))}) "
        f"ON CONFLICT (deployment_id, day) DO UPDATE SET polls = {table}.polls + 1, {updates}"
    )


def _volume(rate: float | None, interval_s: float | None) -> tuple[float, float]:
    """``(tokens, seconds)`` a rate (tokens/s) over the poll's interval adds: the counter's increase."""
    if rate is None or interval_s is None or not interval_s > 0:
        return 0.0, 0.0
    return float(rate) * float(interval_s), float(interval_s)


def _daily_params(
    deployment_id: int,
    day: date,
    running: float | None,
    up: bool,
    rates: tuple[float | None, float | None, float | None] = (None, None, None),
    left_out: str | None = None,
) -> list:
    """One poll's counts: busy (any request running); counted for utilisation when it read a
    running figure or found the endpoint not up (then 0 running: nothing was served); and the tokens
    its rates cover, ``rates`` = (generation tokens/s, prompt tokens/s, interval seconds). A poll
    ``left_out`` (a reason of ``poll_distrust``) counts only in ``polls`` and its reason's column."""
    reasons = [int(left_out == reason) for reason in DailyPollCount.LEFT_OUT_COLUMNS]
    if left_out is not None:
        return [deployment_id, connection.ops.adapt_datefield_value(day), 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, *reasons]
    counted = running is not None or not up
    output, prompt, interval = rates
    return [
        deployment_id,
        connection.ops.adapt_datefield_value(day),
        int(bool(running)),
        int(counted),
        float(running or 0.0) if counted else 0.0,
        *_volume(output, interval),
        *_volume(prompt, interval),
        *reasons,
    ]


def distrust_of(deployment: Deployment, outcome: PollOutcome) -> str | None:
    """Why a poll just made of ``deployment`` is not trusted (``fleet.models.polls.poll_distrust``)."""
    return poll_distrust(
        str(outcome.status),
        interval_s=getattr(outcome.derived, "interval_s", None),
        poll_interval_s=deployment.poll_interval_s,
        polled_model_id=outcome.served_model_id,
        registered_model_id=deployment.served_model_id,
    )


def _live_update_sql(fields: list) -> str:
    qn = connection.ops.quote_name
    assignments = ", ".join(f"{qn(f.column)} = %s" for f in fields)
    return f"UPDATE {qn(Deployment._meta.db_table)} SET {assignments} WHERE {qn(Deployment._meta.pk.column)} = %s"  # noqa: S608


def store_polls(items: list[Polled]) -> list[EndpointPoll]:
    """Store finished polls and update their deployments' live state, releasing their leases.

    One transaction for the batch. If the batch cannot be written (a deployment deleted while it
    was being polled), each poll is stored on its own so the others are not lost; the ones that
    still cannot be written are logged and left out of the returned list.
    """
    if not items:
        return []
    try:
        with transaction.atomic():
            return _store(items)
    except DatabaseError:
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
        counts = [
            _daily_params(
                it.deployment.pk,
                it.at.date(),
                v["requests_running"],
                str(it.outcome.status) == "up",
                (
                    v.get("generation_tokens_per_s"),
                    v.get("prompt_tokens_per_s"),
                    getattr(it.outcome.derived, "interval_s", None),
                ),
                distrust_of(it.deployment, it.outcome),
            )
            for it, (_p, v) in zipped
        ]
        cursor.executemany(_daily_upsert_sql(), counts)
    return polls


def count_poll(
    deployment_id: int,
    day: date,
    running: float | None,
    up: bool = True,
    rates: tuple[float | None, float | None, float | None] = (None, None, None),
    left_out: str | None = None,
) -> None:
    """Add one poll to the deployment's daily counters (one upsert): ``running``, the requests it saw
    running (``None``: no figure), whether the endpoint was ``up``, and its ``rates`` (generation and
    prompt tokens/s over ``interval_s`` seconds); ``left_out``: why it is not trusted (``poll_distrust``),
    then it counts only as left out."""
    with connection.cursor() as cursor:
        cursor.execute(_daily_upsert_sql(), _daily_params(deployment_id, day, running, up, rates, left_out))
