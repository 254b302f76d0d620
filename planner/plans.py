"""Plan service: check a search request (``PlanRequest``), price the SKUs with the quotes in
force, run the search with progress and cancellation, and store the result in one transaction.

``create_plan`` is called by the API, the plans page and ``manage.py plan``; ``execute_plan`` by
the Celery task and the command. Errors are ``fleet.errors.InputError`` with field names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from fleet.errors import InputError
from fleet.models import GpuQuote, HardwareSku, ModelSpec, Workload
from fleet.models.base import find_by_slug
from planner.engine import MODES, EngineInputError, SearchCancelled, SkuOffer, search
from planner.engine import Workload as SearchWorkload
from planner.models import Plan

log = logging.getLogger(__name__)

#: Store progress in the database at most this often (percentage points).
PROGRESS_STEP = 5
MAX_PROGRESS_LOG = 40


#: KV cache dtypes and serving modes a plan may search.
PLAN_KV_CACHE_DTYPES: tuple[str, ...] = ("bf16", "fp8")
#: Nodes per SKU a plan may search up to (the search's cost grows with it; docs/layouts.md).
MAX_NODES_LIMIT = 32


@dataclass(frozen=True)
class PlanRequest:
    """A layout search to run: records by slug; ``skus`` empty means every SKU with an on-demand
    quote in force on ``on`` (default: today)."""

    model: str
    workload: str
    skus: tuple[str, ...] = ()
    max_nodes: int = 8
    kv_cache_dtypes: tuple[str, ...] = PLAN_KV_CACHE_DTYPES
    modes: tuple[str, ...] = MODES
    on: date | None = None

    def errors(self) -> dict[str, list[str]]:
        """Problems with the values themselves (records are checked by ``create_plan``)."""
        errors: dict[str, list[str]] = {}
        if not isinstance(self.max_nodes, int) or not 1 <= self.max_nodes <= MAX_NODES_LIMIT:
            errors["max_nodes"] = [f"Give a whole number of nodes from 1 to {MAX_NODES_LIMIT}."]
        for name, allowed in (("kv_cache_dtypes", PLAN_KV_CACHE_DTYPES), ("modes", MODES)):
            values = getattr(self, name)
            if not values:
                errors[name] = [f"Pick at least one of {', '.join(allowed)}."]
            elif unknown := [v for v in values if v not in allowed]:
                errors[name] = [f"Unknown {', '.join(map(str, unknown))}; use {', '.join(allowed)}."]
        return errors


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


def create_plan(request: PlanRequest, user: Any) -> Plan:
    """Record a queued plan with its priced SKUs (InputError with field names when it cannot run);
    the caller enqueues it (``enqueue``)."""
    errors = request.errors()
    model = find_by_slug(ModelSpec.objects, request.model, "model", errors)
    workload = find_by_slug(Workload.objects, request.workload, "workload", errors)
    skus = list(HardwareSku.objects.filter(slug__in=request.skus)) if request.skus else list(HardwareSku.objects.all())
    if unknown := sorted(set(request.skus) - {s.slug for s in skus}):
        errors["skus"] = [f"No SKU {', '.join(unknown)}."]
    if errors:
        raise InputError(errors)
    on = request.on or timezone.now().date()
    priced, prices, missing = price_offers(skus, on)
    if request.skus and missing:
        raise InputError.single("skus", f"No on-demand quote in force on {on.isoformat()} for: {', '.join(missing)}.")
    if not priced:
        raise InputError.single("skus", "No candidate SKU has an on-demand quote in force.")
    options = {
        "max_nodes": request.max_nodes,
        "kv_cache_dtypes": list(request.kv_cache_dtypes),
        "modes": list(request.modes),
        "on": on.isoformat(),
        "prices": prices,
        "skipped_without_quote": missing,
    }
    plan = Plan.objects.create(
        model=model,
        workload=workload,
        options=options,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )
    plan.skus.set(priced)
    return plan


def enqueue(plan: Plan) -> None:
    """Send the plan to a worker once the transaction that created it commits (task id = plan id)."""
    from planner.tasks import run_plan

    transaction.on_commit(lambda: run_plan.apply_async(args=[str(plan.pk)], task_id=str(plan.pk)))


def _workload(w: Workload) -> SearchWorkload:
    return SearchWorkload(
        requests_per_day=w.requests_per_day,
        mean_prompt_tokens=w.mean_prompt_tokens,
        mean_output_tokens=w.mean_output_tokens,
        p95_context_tokens=w.p95_context_tokens,
        prefix_cache_hit_rate=w.prefix_cache_hit_rate,
        peak_concurrency=w.peak_concurrency,
        ttft_slo_ms=w.ttft_slo_ms,
        tpot_slo_ms=w.tpot_slo_ms,
    )


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
            plan.model.to_engine(),
            _workload(plan.workload),
            offers,
            max_nodes=options["max_nodes"],
            kv_cache_dtypes=options["kv_cache_dtypes"],
            modes=options["modes"],
            progress=progress,
        )
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
