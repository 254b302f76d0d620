"""Plan runs: validate a search request, price the SKUs with the quotes in force, run the search
with progress and cancellation, and store the result in one transaction.

``execute_plan`` is what the Celery task and ``manage.py plan`` both call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework import serializers

from fleet.models import GpuQuote, HardwareSku, ModelSpec, Workload
from planner.engine import MODES, EngineInputError, SearchCancelled, SkuOffer, search
from planner.engine import Workload as SearchWorkload
from planner.models import Plan

log = logging.getLogger(__name__)

#: Store progress in the database at most this often (percentage points).
PROGRESS_STEP = 5
MAX_PROGRESS_LOG = 40


class PlanRequestSerializer(serializers.Serializer):
    """``POST /api/v1/plans/`` request body."""

    model = serializers.SlugRelatedField(slug_field="slug", queryset=ModelSpec.objects.all())
    workload = serializers.SlugRelatedField(slug_field="slug", queryset=Workload.objects.all())
    skus = serializers.SlugRelatedField(
        slug_field="slug", queryset=HardwareSku.objects.all(), many=True, required=False,
        help_text="Candidate SKUs (default: every SKU with an on-demand quote in force).",
    )  # fmt: skip
    max_nodes = serializers.IntegerField(default=8, min_value=1, max_value=32)
    kv_cache_dtypes = serializers.ListField(
        child=serializers.ChoiceField(choices=["bf16", "fp8"]), default=["bf16", "fp8"], allow_empty=False
    )
    modes = serializers.ListField(
        child=serializers.ChoiceField(choices=list(MODES)), default=list(MODES), allow_empty=False
    )
    on = serializers.DateField(required=False, help_text="Date of the GPU quotes used (default: today).")


def price_offers(skus: list[HardwareSku], on: date) -> tuple[list[HardwareSku], dict[str, dict[str, Any]], list[str]]:
    """The on-demand quote in force for each SKU on ``on``; SKUs without one are returned apart."""
    priced, prices, missing = [], {}, []
    for sku in skus:
        quote = GpuQuote.objects.in_force(sku, on).cheapest()
        if quote is None:
            missing.append(sku.slug)
            continue
        priced.append(sku)
        prices[sku.slug] = quote.to_dict()
    return priced, prices, missing


def create_plan(data: dict[str, Any], user: Any) -> Plan:
    """Record a queued plan with its priced SKUs; the caller enqueues it (``enqueue``)."""
    on = data.get("on") or timezone.now().date()
    skus = data.get("skus") or list(HardwareSku.objects.all())
    priced, prices, missing = price_offers(skus, on)
    if data.get("skus") and missing:
        raise serializers.ValidationError(
            {"skus": [f"No on-demand quote in force on {on.isoformat()} for: {', '.join(missing)}."]}
        )
    if not priced:
        raise serializers.ValidationError({"skus": ["No candidate SKU has an on-demand quote in force."]})
    options = {
        "max_nodes": data["max_nodes"], "kv_cache_dtypes": data["kv_cache_dtypes"], "modes": data["modes"],
        "on": on.isoformat(), "prices": prices, "skipped_without_quote": missing,
    }  # fmt: skip
    plan = Plan.objects.create(
        model=data["model"], workload=data["workload"], options=options,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )  # fmt: skip
    plan.skus.set(priced)
    return plan


def enqueue(plan: Plan) -> None:
    """Send the plan to a worker once the transaction that created it commits (task id = plan id)."""
    from planner.tasks import run_plan

    transaction.on_commit(lambda: run_plan.apply_async(args=[str(plan.pk)], task_id=str(plan.pk)))


def _workload(w: Workload) -> SearchWorkload:
    return SearchWorkload(
        requests_per_day=w.requests_per_day, mean_prompt_tokens=w.mean_prompt_tokens,
        mean_output_tokens=w.mean_output_tokens, p95_context_tokens=w.p95_context_tokens,
        prefix_cache_hit_rate=w.prefix_cache_hit_rate, peak_concurrency=w.peak_concurrency,
        ttft_slo_ms=w.ttft_slo_ms, tpot_slo_ms=w.tpot_slo_ms,
    )  # fmt: skip


#: A plan "running" for longer than this lost its worker (the task's hard time limit is 11 minutes).
STALE_AFTER = timedelta(minutes=15)


def claim(plan_id: str) -> bool:
    """Move a queued plan (or one whose worker died) to running; False when it already ran, runs
    elsewhere, or was cancelled."""
    now = timezone.now()
    claimable = Q(status=Plan.Status.QUEUED) | Q(status=Plan.Status.RUNNING, started__lt=now - STALE_AFTER)
    return Plan.objects.filter(claimable, pk=plan_id).update(status=Plan.Status.RUNNING, started=now) == 1


def execute_plan(plan_id: str, on_progress: Callable[[int, int], None] | None = None) -> Plan:
    """Run a queued plan to completion (idempotent: a plan not queued is returned untouched)."""
    if not claim(plan_id):
        return Plan.objects.get(pk=plan_id)
    plan = Plan.objects.select_related("model", "workload").get(pk=plan_id)
    options = plan.options
    offers = [
        SkuOffer(sku.to_engine(), options["prices"][sku.slug]["usd_per_gpu_hour"], name=sku.slug)
        for sku in plan.skus.all()
    ]
    state = {"stored": 0, "log": []}

    def progress(done: int, total: int) -> bool:
        pct = min(99, int(done * 100 / total)) if total else 0
        if on_progress:
            on_progress(done, total)
        if pct - state["stored"] >= PROGRESS_STEP:
            state["stored"] = pct
            state["log"] = [*state["log"], {"at": timezone.now().isoformat(), "progress": pct}][-MAX_PROGRESS_LOG:]
            Plan.objects.filter(pk=plan_id).update(progress=pct, candidates_evaluated=done, progress_log=state["log"])
            if Plan.objects.filter(pk=plan_id, cancel_requested=True).exists():
                return False
        return True

    try:
        result = search(
            plan.model.to_engine(), _workload(plan.workload), offers, max_nodes=options["max_nodes"],
            kv_cache_dtypes=options["kv_cache_dtypes"], modes=options["modes"], progress=progress,
        )  # fmt: skip
    except SearchCancelled:
        _finish(plan_id, Plan.Status.CANCELLED, state["log"], error="Cancelled on request.")
    except EngineInputError as exc:
        _finish(plan_id, Plan.Status.FAILED, state["log"], error=f"The search could not run: {exc}")
    except Exception as exc:  # stored for the person who asked; the traceback goes to the worker log
        log.exception("plan %s failed", plan_id)
        _finish(plan_id, Plan.Status.FAILED, state["log"], error=f"Unexpected error: {type(exc).__name__}: {exc}")
    else:
        body = result.to_dict()
        _finish(plan_id, Plan.Status.DONE, state["log"], result=body, evaluated=body.get("candidates_evaluated", 0))
    return Plan.objects.get(pk=plan_id)


def _finish(plan_id: str, status: str, progress_log: list, *, result=None, error: str = "", evaluated=None) -> None:
    values: dict[str, Any] = {"status": status, "finished": timezone.now(), "error": error, "result": result}
    if status == Plan.Status.DONE:
        values |= {
            "progress": 100,
            "progress_log": [*progress_log, {"at": timezone.now().isoformat(), "progress": 100}],
        }
    if evaluated is not None:
        values["candidates_evaluated"] = evaluated
    with transaction.atomic():
        Plan.objects.filter(pk=plan_id).update(**values)


def cancel(plan: Plan) -> Plan:
    """Cancel a queued plan at once, or ask a running one to stop at its next progress report."""
    if plan.status == Plan.Status.QUEUED:
        Plan.objects.filter(pk=plan.pk, status=Plan.Status.QUEUED).update(
            status=Plan.Status.CANCELLED, cancel_requested=True, finished=timezone.now(), error="Cancelled on request."
        )
    elif plan.status == Plan.Status.RUNNING:
        Plan.objects.filter(pk=plan.pk).update(cancel_requested=True)
    return Plan.objects.get(pk=plan.pk)
