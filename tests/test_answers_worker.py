"""Issue 17's acceptance, with a real Celery worker process: change a GPU quote, and the affected
deployments' capacity snapshots and workloads' breakevens are recomputed, and a decision that no longer
holds is flagged, with nothing but the change itself done by the test (the receivers record the task in
the outbox, it is published after the commit, the worker runs ``planner.refresh_answers``).

Uses whatever the settings are configured with: Redis + PostgreSQL in CI (`.ci/run`), the filesystem
broker + the SQLite test file otherwise; its own queue, so parallel test processes never take each
other's messages.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from celery_workers import start_worker, stop_worker, wait_for
from django.core.management import call_command
from django.utils import timezone
from priced import acme_quoting_the_seeds_rate

from fleet.models import (
    ApiPrice,
    CapacitySnapshot,
    Cluster,
    Deployment,
    GpuQuote,
    HardwareSku,
    ModelSpec,
    Workload,
)
from planner.breakeven import BreakevenRequest
from planner.decisions import record_decision
from planner.models import DecisionReview, WorkloadBreakeven

CHAT = {
    "slug": "chat", "name": "Chat", "team": "web", "requests_per_day": 100_000, "mean_prompt_tokens": 1_000,
    "mean_output_tokens": 500, "p95_context_tokens": 4_000, "prefix_cache_hit_rate": 0.5, "peak_concurrency": 64,
    "ttft_slo_ms": 2000, "tpot_slo_ms": 50,
}  # fmt: skip


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_changed_quote_recomputes_snapshots_and_breakevens_and_flags_the_decision(monkeypatch):
    from fleet.project.celery import app

    queue = f"answers-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    call_command("load_catalog", stdout=StringIO())
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    ApiPrice.objects.filter(model=model).delete()  # the catalogue's: acme's below is Llama's only API price
    workload = Workload.objects.create(**CHAT)
    acme = acme_quoting_the_seeds_rate(sku)
    cluster = Cluster.objects.create(slug="c", name="C", sku=sku, nodes=1, provider=acme, team="t")
    deployment = Deployment.objects.create(
        slug="llama", cluster=cluster, model=model, tp=4, replicas=2, kv_cache_dtype="fp8", workload=workload
    )
    ApiPrice.objects.create(
        slug="llama-api", provider="acme", model_name="llama-70b", model=model, input_cache_hit_usd_per_mtok="1",
        input_cache_miss_usd_per_mtok="5", output_usd_per_mtok="20",
        quoted_on=timezone.now().date() - timedelta(days=10),
    )  # fmt: skip
    # Renting is cheaper at acme's quote of the seeds' 2.50 USD/GPU-hour: 8 GPUs x 2.50 x 720 h = 14,400 USD a month.
    decision = record_decision(
        workload="chat", tier=1, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )
    assert decision.figures["cheaper"] == "rent" and decision.figures["monthly_rent_usd"] == "14400.00"

    worker = start_worker(queue)
    try:
        # The records' own saves sent their recomputations: the worker computes the first answers.
        first = wait_for(
            lambda: (
                CapacitySnapshot.objects.filter(pk=deployment.pk, computed_at__isnull=False).first()
                and WorkloadBreakeven.objects.filter(pk=workload.pk, computed_at__isnull=False).first()
            ),
            worker,
            timeout_s=90,
        )
        assert first, "no snapshot or breakeven computed"
        snap = CapacitySnapshot.objects.get(pk=deployment.pk)
        assert Decimal(snap.figures["usd_per_hour"]) == Decimal("20")  # 8 GPUs x 2.50
        before = WorkloadBreakeven.objects.get(pk=workload.pk)
        assert before.figures["declared"]["cheaper"] == "rent"

        # The change: a dearer quote from today, 8.00 USD/GPU-hour (46,080 USD a month: the API, 39,000, wins).
        changed_at = timezone.now()
        GpuQuote.objects.create(
            sku=sku,
            provider=acme,
            usd_per_gpu_hour=Decimal("8.00"),
            quoted_on=changed_at.date(),
        )
        assert CapacitySnapshot.objects.get(pk=deployment.pk).state() == "stale"  # at once, before the worker ran

        def recomputed():
            s = CapacitySnapshot.objects.get(pk=deployment.pk)
            b = WorkloadBreakeven.objects.get(pk=workload.pk)
            r = DecisionReview.objects.filter(decision=decision).first()
            done = s.computed_at > changed_at and b.computed_at > changed_at and r and r.checked_at > changed_at
            return (s, b, r) if done and s.state() == "current" else None

        found = wait_for(recomputed, worker, timeout_s=90)
    finally:
        log = stop_worker(worker)
    assert found, f"not recomputed after the quote changed; the worker's log:\n{log}"
    snap, breakeven, review = found
    assert Decimal(snap.figures["usd_per_hour"]) == Decimal("64")  # 8 GPUs x 8.00
    assert snap.figures["quote"]["usd_per_gpu_hour"].startswith("8.0")
    assert breakeven.figures["declared"]["cheaper"] == "api"
    assert breakeven.figures["declared"]["monthly_rent_usd"] == "46080.00"
    assert review.still_holds is False and review.reason.startswith("API is now cheaper")
    from planner.reviews import flipped_decisions

    assert list(flipped_decisions()) == [decision]


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_new_cheaper_api_price_flips_the_review_within_one_cycle_naming_it(monkeypatch):
    """Issue 24: a real worker, one review cycle after a provider publishes a cheaper API price for the
    same model, says the recorded decision no longer holds and names the price that moved."""
    from fleet.project.celery import app

    queue = f"answers-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    call_command("load_catalog", stdout=StringIO())
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    ApiPrice.objects.filter(model=model).delete()  # the catalogue's: acme's below is Llama's only API price
    workload = Workload.objects.create(**CHAT)
    cluster = Cluster.objects.create(
        slug="c", name="C", sku=sku, nodes=1, provider=acme_quoting_the_seeds_rate(sku), team="t"
    )
    Deployment.objects.create(
        slug="llama", cluster=cluster, model=model, tp=4, replicas=2, kv_cache_dtype="fp8", workload=workload
    )
    ApiPrice.objects.create(
        slug="llama-api", provider="acme", model_name="llama-70b", model=model, input_cache_hit_usd_per_mtok="1",
        input_cache_miss_usd_per_mtok="5", output_usd_per_mtok="15",
        quoted_on=timezone.now().date() - timedelta(days=10),
    )  # fmt: skip
    decision = record_decision(
        workload="chat", tier=1, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )
    assert decision.figures["cheaper"] == "rent"
    worker = start_worker(queue)
    try:
        first = wait_for(lambda: DecisionReview.objects.filter(decision=decision).first(), worker, timeout_s=90)
        assert first and first.still_holds is True, first and first.reason
        changed_at = timezone.now()
        ApiPrice.objects.create(
            slug="cheap-llama", provider="cheapco", model_name="llama-3.1-70b", model=model,
            input_cache_hit_usd_per_mtok="0.10", input_cache_miss_usd_per_mtok="0.50", output_usd_per_mtok="2.50",
            quoted_on=changed_at.date(),
        )  # fmt: skip

        def reviewed():
            r = DecisionReview.objects.filter(decision=decision).first()
            return r if r is not None and r.checked_at > changed_at and r.state() == "current" else None

        review = wait_for(reviewed, worker, timeout_s=90)
    finally:
        log = stop_worker(worker)
    assert review, f"not reviewed after the API price changed; the worker's log:\n{log}"
    assert review.still_holds is False and review.reason.startswith("API is now cheaper")
    today = changed_at.date().isoformat()
    assert f"API output price 15.00 -> 2.50 USD/M tokens (cheapco llama-3.1-70b, {today})" in review.reason
