"""Plans: start a layout search, follow its progress (HTMX), read the frontier and the ranking."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from rest_framework.exceptions import ValidationError

from fleet.models import HardwareSku, ModelSpec, Workload
from fleet.views.access import HtmxHttpRequest, is_partial, perms_required
from planner.models import Plan
from planner.plans import PlanRequestSerializer, cancel, create_plan, enqueue


@perms_required("planner.view_plan")
def plan_list(request: HttpRequest) -> HttpResponse:
    context = {
        "plans": Plan.objects.select_related("model", "workload")[:50],
        "models": ModelSpec.objects.values_list("slug", "name"),
        "workloads": Workload.objects.values_list("slug", "name"),
        "skus": HardwareSku.objects.values_list("slug", "name"),
    }
    return render(request, "planner/plans.html", context)


@perms_required("planner.add_plan")
def plan_start(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return redirect("plans")
    data = {
        "model": request.POST.get("model"), "workload": request.POST.get("workload"),
        "max_nodes": request.POST.get("max_nodes") or 8,
        "modes": request.POST.getlist("modes") or ["aggregated", "disaggregated"],
        "kv_cache_dtypes": request.POST.getlist("kv_cache_dtypes") or ["bf16", "fp8"],
    }  # fmt: skip
    if request.POST.getlist("skus"):
        data["skus"] = request.POST.getlist("skus")
    incoming = PlanRequestSerializer(data=data)
    try:
        incoming.is_valid(raise_exception=True)
        plan = create_plan(incoming.validated_data, request.user)
    except ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"plan": exc.detail}
        for field, problems in detail.items():
            messages.error(request, f"{field}: {' '.join(str(p) for p in problems)}")
        return redirect("plans")
    enqueue(plan)
    return redirect("plan", pk=plan.pk)


def _rows(plan: Plan) -> dict:
    """Chart and table data from a finished plan's result."""
    result = plan.result or {}
    frontier = [{"x": c["tpot_ms"], "y": c["usd_per_mtok"]} for c in result.get("frontier", [])]
    points = [{"x": c["tpot_ms"], "y": c["usd_per_mtok"]} for c in result.get("top", [])]
    return {"chart": {"frontier": frontier, "points": points}, "result": result}


@perms_required("planner.view_plan")
def plan_detail(request: HtmxHttpRequest, pk: str) -> HttpResponse:
    plan = get_object_or_404(Plan.objects.select_related("model", "workload").prefetch_related("skus"), pk=pk)
    context = {"plan": plan, **_rows(plan)}
    if is_partial(request):
        return render(request, "planner/_plan_status.html", context)
    return render(request, "planner/plan.html", context)


@perms_required("planner.change_plan")
def plan_cancel(request: HttpRequest, pk: str) -> HttpResponse:
    plan = get_object_or_404(Plan, pk=pk)
    if request.method == "POST" and not plan.is_finished:
        cancel(plan)
        messages.info(request, "Cancellation requested.")
    return redirect("plan", pk=pk)
