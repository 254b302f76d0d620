"""Stored answers, kept current by the workers: the base every one of them is (``StoredAnswer``: its
figures, error and stale mark, its state, and ``StoredAnswer.store``, the one loop that writes a batch of
recomputations), and the one about a deployment: its capacity snapshot (planner's breakevens and decision
reviews are the others, ``planner/models/breakevens.py``).

A ``CapacitySnapshot`` is what the sizing and throughput engines said about one deployment the last
time a worker asked them (``planner.snapshots`` computes and writes it; pages, the API and
``/metrics`` only read it). Whether it can be shown as current is decided here, from what the row
records, so every reader says the same:

* ``current``: computed, nothing it rests on changed since, and the quote it priced is still the
  one in force;
* ``stale``: an input changed after it was computed (``stale_since``, set in the same save as the
  change by planner's signal handlers, or found by ``state()`` comparing the versions of the records
  a page has already loaded), or its quote's validity ended (``valid_until``), or it is older than
  ``SNAPSHOT_MAX_AGE_S``;
* ``failed``: the last recomputation raised (``error``); the figures are the previous ones;
* ``pending``: never computed yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

#: A snapshot's states, as the pages, the API and /metrics name them.
SNAPSHOT_STATES: tuple[str, ...] = ("current", "stale", "failed", "pending")


def answer_state(
    *, computed_at: datetime | None, error: str, stale_since: datetime | None, now: datetime | None
) -> str:
    """The state of any stored answer (a capacity snapshot, planner's breakevens and reviews) from what
    every one records: ``failed`` when the only recomputation raised, ``stale`` when a later one did
    (the figures are the previous ones), when an input changed after it was computed (``stale_since``)
    or when it is older than ``SNAPSHOT_MAX_AGE_S``; ``pending`` before any; else ``current``."""
    if error:
        return "failed" if computed_at is None else "stale"
    if computed_at is None:
        return "pending"
    if stale_since is not None:
        return "stale"
    now = now or timezone.now()
    if now - computed_at > timedelta(seconds=settings.SNAPSHOT_MAX_AGE_S):
        return "stale"
    return "current"


def settle_stale_mark(row: Any, started: datetime) -> None:
    """After a recomputation that began at ``started`` is stored in ``row`` (any stored answer), clear
    its stale mark, unless the mark was made after ``started``: a newer change's own recomputation is on
    its way, and the one just stored may rest on the records as they were before that change."""
    if row.stale_since is None or row.stale_since <= started:
        row.stale_since, row.stale_reason = None, ""


class StoredAnswer(models.Model):
    """What every stored answer records and how it is written (a capacity snapshot, a workload's
    breakeven, a decision's review): the figures a worker computed, the error of the last recomputation
    that raised, and the stale mark an input change sets (``stale_since``, ``stale_reason``). One row per
    subject, its one-to-one primary key; ``ANSWERED_AT`` names the field saying when it was computed."""

    ANSWERED_AT: ClassVar[str] = "computed_at"

    figures = models.JSONField(default=dict, help_text="The computed figures.")
    error = models.TextField(blank=True, default="", help_text="Why the last recomputation failed.")
    stale_since = models.DateTimeField(
        null=True, blank=True, help_text="An input changed at this time, after the figures were computed."
    )
    stale_reason = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        abstract = True

    def answer_state(self, now: datetime | None = None) -> str:
        """``current``, ``stale``, ``failed`` or ``pending`` from what the row records (``answer_state``)."""
        return answer_state(
            computed_at=getattr(self, self.ANSWERED_AT), error=self.error, stale_since=self.stale_since, now=now
        )

    @classmethod
    def mark_stale(cls, rows: models.QuerySet, reason: str, now: datetime) -> int:
        """Mark ``rows`` (a queryset of this model) stale at ``now`` for ``reason`` (what changed, at most
        200 characters kept): one UPDATE, in the transaction of the change. Returns the rows marked."""
        return rows.update(stale_since=now, stale_reason=reason[: cls._meta.get_field("stale_reason").max_length])

    @classmethod
    def store(
        cls,
        results: Sequence[Any],
        fill: Callable[[Any, Any, datetime], None],
        fields: Sequence[str],
        *,
        started: datetime,
        now: datetime,
    ) -> None:
        """Write one batch of recomputations in one transaction: each result (whose attribute named as the
        primary key's column, ``deployment_id`` say, says whose it is) goes into its row, locked, or a new
        one; ``fill(row, result, now)`` copies what it computed (a failure: only its error, so the previous
        figures stay); the row's stale mark is then settled (``settle_stale_mark``: a mark made after the
        batch ``started`` is kept). One INSERT ... ON CONFLICT DO UPDATE of ``fields`` and the stale mark
        for the whole batch, on SQLite and PostgreSQL (a CASE per column of bulk_update took 5x as long
        for 200 rows, bench/bench_answers.py)."""
        pk = cls._meta.pk
        with transaction.atomic():
            existing = {
                getattr(row, pk.attname): row
                for row in cls.objects.select_for_update().filter(
                    **{f"{pk.attname}__in": [getattr(r, pk.attname) for r in results]}
                )
            }
            rows = []
            for result in results:
                key = getattr(result, pk.attname)
                row = existing.get(key) or cls(**{pk.attname: key})
                fill(row, result, now)
                settle_stale_mark(row, started)
                rows.append(row)
            cls.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=[pk.name],
                update_fields=[*fields, "stale_since", "stale_reason"],
            )  # fmt: skip


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


#: The records whose versions a snapshot stores (``CapacitySnapshot.versions``, in this order).
VERSION_KEYS: tuple[str, ...] = ("deployment", "cluster", "sku", "model", "workload")


def versions_key(versions: dict[str, Any]) -> str:
    """``versions`` as the one string a snapshot stores and a reader compares (``VERSION_KEYS`` order)."""
    return "|".join(versions.get(key) or "" for key in VERSION_KEYS)


def input_versions(deployment: Any) -> dict[str, str | None]:
    """The versions (last change) of the records a deployment's snapshot rests on that come loaded
    with it: the deployment, its cluster, SKU, model and workload (select_related them). A snapshot
    computed from other versions is stale."""
    d = deployment
    return {
        "deployment": _iso(d.updated),
        "cluster": _iso(d.cluster.updated),
        "sku": _iso(d.cluster.sku.updated),
        "model": _iso(d.model.updated),
        "workload": _iso(d.workload.updated) if d.workload_id else None,
    }


class CapacitySnapshot(StoredAnswer):
    """A deployment's capacity, speed and cost as the engines computed them, dated, with the versions
    of the inputs they were computed from (one row per deployment, replaced by each recomputation)."""

    deployment = models.OneToOneField(
        "fleet.Deployment", on_delete=models.CASCADE, related_name="capacity_snapshot", primary_key=True
    )
    computed_at = models.DateTimeField(null=True, blank=True, help_text="When the figures were computed.")
    inputs = models.JSONField(
        default=dict,
        help_text="Versions of what the figures rest on: the deployment, cluster, SKU, model and workload "
        "(their last change), the GPU quote in force, the speed correction and the calibration.",
    )
    figures = models.JSONField(default=dict, help_text="The computed figures (planner.snapshots).")
    # Read by every fleet page row, so kept beside the JSON (a page of 1,000 rows reads these, not ``figures``).
    capacity_sequences = models.PositiveIntegerField(
        null=True, blank=True, help_text="Predicted concurrent sequences at the planning context (figures)."
    )
    fits = models.BooleanField(null=True, blank=True, help_text="Whether the weights fit its GPUs (figures).")
    versions = models.CharField(
        max_length=250, blank=True, default="", help_text="The records' versions it was computed from (VERSION_KEYS)."
    )
    valid_until = models.DateTimeField(
        null=True, blank=True, help_text="When the quote it priced stops being the one in force (None: open)."
    )
    failed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["deployment_id"]

    def __str__(self) -> str:
        return f"capacity of deployment {self.deployment_id} @ {self.computed_at or 'never'}"

    def state(self, now: datetime | None = None, versions: dict[str, Any] | None = None) -> str:
        """``current``, ``stale``, ``failed`` or ``pending`` (module docstring). ``versions`` are the
        input versions a reader knows now (``input_versions`` of the records it
        loaded): any that differs from the stored one makes the snapshot stale."""
        now = now or timezone.now()
        state = self.answer_state(now)
        if state != "current":
            return state
        if self.valid_until is not None and now >= self.valid_until:
            return "stale"
        if versions and versions_key(versions) != self.versions:
            return "stale"
        return "current"

    def why_stale(self, now: datetime | None = None, versions: dict[str, Any] | None = None) -> str:
        """One sentence: why ``state()`` is not ``current`` (empty when it is)."""
        now = now or timezone.now()
        state = self.state(now, versions)
        if state == "current":
            return ""
        if state == "pending":
            return "Not computed yet: a worker computes it shortly."
        if self.error:
            prefix = "The last recomputation failed" + (
                f" ({self.failed_at:%Y-%m-%d %H:%M} UTC)" if self.failed_at else ""
            )
            kept = "; the figures shown are the previous ones" if self.computed_at else ""
            return f"{prefix}: {self.error}{kept}."
        if self.stale_since is not None:
            return (
                f"{self.stale_reason or 'An input changed'} at {self.stale_since:%Y-%m-%d %H:%M:%S} UTC; recomputing."
            )
        if self.valid_until is not None and now >= self.valid_until:
            return f"The GPU quote it priced stopped being in force at {self.valid_until:%Y-%m-%d %H:%M} UTC."
        if now - self.computed_at > timedelta(seconds=settings.SNAPSHOT_MAX_AGE_S):
            return f"Computed {self.computed_at:%Y-%m-%d %H:%M} UTC, longer ago than the workers refresh it."
        stored = dict(zip(VERSION_KEYS, self.versions.split("|"), strict=False))
        changed = sorted(k for k in VERSION_KEYS if (versions or {}).get(k, "") and stored.get(k) != versions[k])
        return f"Changed since it was computed: {', '.join(changed) or 'its records'}."

    def describe(self, versions: dict[str, Any] | None = None, now: datetime | None = None) -> dict[str, Any]:
        """The shape the API and pages give it: ``state``, ``reason`` (why not current; empty when it
        is), ``computed_at``, ``error`` and ``figures`` (None when never computed)."""
        now = now or timezone.now()
        return {
            "state": self.state(now, versions),
            "reason": self.why_stale(now, versions),
            "computed_at": self.computed_at,
            "error": self.error,
            "figures": self.figures or None,
        }


#: ``describe()`` of a deployment without a snapshot yet.
PENDING = {
    "state": "pending",
    "reason": "Not computed yet: a worker computes it shortly.",
    "computed_at": None,
    "error": "",
    "figures": None,
}


def snapshot_of(deployment: Any) -> CapacitySnapshot | None:
    """The deployment's stored snapshot, or None (no query when it was joined or prefetched)."""
    try:
        return deployment.capacity_snapshot
    except CapacitySnapshot.DoesNotExist:
        return None


def describe_capacity(deployment: Any, now: datetime | None = None) -> dict[str, Any]:
    """``CapacitySnapshot.describe`` of the deployment's snapshot with its records' versions, or ``PENDING``."""
    snapshot = snapshot_of(deployment) if deployment.pk is not None else None
    if snapshot is None:
        return dict(PENDING)
    return snapshot.describe(input_versions(deployment), now)
