"""Issue 24, "one stored-answer base and one store loop": capacity snapshots, workload breakevens and
decision reviews are each a ``StoredAnswer`` and are written by its one ``store`` loop, which keeps a stale
mark made after a batch started, clears an older one, and on a failure keeps the previous figures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.models import CapacitySnapshot, Workload
from fleet.models.snapshots import StoredAnswer
from planner.models import DecisionReview, WorkloadBreakeven

pytestmark = pytest.mark.django_db


def test_every_stored_answer_is_one_base():
    for model in (CapacitySnapshot, WorkloadBreakeven, DecisionReview):
        assert issubclass(model, StoredAnswer), model
        names = {f.name for f in model._meta.get_fields()}
        assert {"figures", "error", "stale_since", "stale_reason"} <= names, model


@dataclass
class Result:
    deployment_id: int
    figures: dict | None
    error: str = ""


def _fill(row, result, now):
    if result.error:
        row.error = result.error
    else:
        row.figures, row.error, row.computed_at = result.figures, "", now


def test_store_settles_stale_marks_and_keeps_figures_on_failure(deployment):
    now = timezone.now()
    started = now - timedelta(seconds=10)
    fields = ["figures", "error", "computed_at"]
    CapacitySnapshot.store([Result(deployment.pk, {"n": 1})], _fill, fields, started=started, now=now)
    snap = CapacitySnapshot.objects.get()
    assert snap.figures == {"n": 1} and snap.stale_since is None and snap.answer_state(now) == "current"

    # A change marked after the batch started keeps its mark: its own recomputation is on its way.
    CapacitySnapshot.mark_stale(CapacitySnapshot.objects.all(), "cluster resized", now + timedelta(seconds=1))
    CapacitySnapshot.store([Result(deployment.pk, {"n": 2})], _fill, fields, started=now, now=now)
    snap.refresh_from_db()
    assert snap.figures == {"n": 2} and snap.stale_reason == "cluster resized"
    # One marked before the batch started is settled by it.
    later = now + timedelta(seconds=5)
    CapacitySnapshot.store([Result(deployment.pk, {"n": 3})], _fill, fields, started=later, now=later)
    snap.refresh_from_db()
    assert snap.figures == {"n": 3} and snap.stale_since is None and snap.stale_reason == ""
    # A failure keeps the previous figures, with its error: stale, not lost.
    CapacitySnapshot.store([Result(deployment.pk, None, "boom")], _fill, fields, started=later, now=later)
    snap.refresh_from_db()
    assert snap.figures == {"n": 3} and snap.error == "boom" and snap.answer_state(later) == "stale"


def test_mark_stale_keeps_at_most_the_reason_column(db):
    w = Workload.objects.create(
        slug="w", name="W", team="t", requests_per_day=10, mean_prompt_tokens=100, mean_output_tokens=10,
        p95_context_tokens=200, peak_concurrency=4, ttft_slo_ms=1000, tpot_slo_ms=50,
    )  # fmt: skip
    WorkloadBreakeven.objects.create(workload=w)
    marked = WorkloadBreakeven.mark_stale(WorkloadBreakeven.objects.all(), "x" * 500, timezone.now())
    assert marked == 1 and len(WorkloadBreakeven.objects.get().stale_reason) == 200
