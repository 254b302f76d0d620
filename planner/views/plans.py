"""Plans: start a layout search, follow its progress (HTMX), read the frontier and the ranking."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from fleet.errors import InputError
from fleet.forms import add_service_errors
from fleet.views.access import HtmxHttpRequest, is_partial, perms_required
from planner.forms import PlanForm
from planner.models import Plan
from planner.plans import cancel, may_cancel, submit_plan


@perms_required("planner.view_plan")
def plan_list(request: HttpRequest, form: PlanForm | None = None, status: int = 200) -> HttpResponse:
    context = {"plans": Plan.objects.select_related("model", "workload")[:50], "form": form or PlanForm()}
    return render(request, "planner/plans.html", context, status=status)


@perms_required("planner.add_plan")
def plan_start(request: HttpRequest) -> HttpResponse:
    """Start a search; a problem comes back beside its input on the plans page (400)."""
    if request.method != "POST":
        return redirect("plans")
    form = PlanForm(request.POST)
    if form.is_valid():
        try:
            submission = submit_plan(form.to_request(), request.user)
        except InputError as exc:
            add_service_errors(form, exc)
        else:
            if not submission.sent:
                messages.warning(request, submission.detail)
            return redirect("plan", pk=submission.plan.pk)
    return plan_list(request, form=form, status=400)


def layout_text(pool: dict | None) -> str:
    """A pool's layout as the ranking shows it: ``2 x tp 4 · dp 2 · ep 8`` (replicas x sizes above 1)."""
    if not pool:
        return ""
    layout = pool.get("layout") or {}
    parts = [f"{name} {layout[name]}" for name in ("tp", "pp", "dp", "ep", "etp") if (layout.get(name) or 1) > 1]
    sizes = " · ".join(parts) or "1 GPU"
    replicas = pool.get("replicas") or 1
    return f"{replicas} x {sizes}" if replicas > 1 else sizes


def _rows(plan: Plan) -> dict:
    """Chart and table data from a finished plan's result: each ranked configuration with its SKU's
    name and its layout (decode and prefill pools apart for disaggregated serving)."""
    result = plan.result or {}
    frontier = [{"x": c["tpot_ms"], "y": c["usd_per_mtok"]} for c in result.get("frontier", [])]
    points = [{"x": c["tpot_ms"], "y": c["usd_per_mtok"]} for c in result.get("top", [])]
    names = {s.slug: s.name for s in plan.skus.all()}
    ranking = [
        {
            **c,
            "sku_name": names.get(c["sku"], c["sku"]),
            "decode_layout": layout_text(c.get("decode")),
            "prefill_layout": layout_text(c.get("prefill")),
        }
        for c in result.get("top", [])
    ]
    rejected = result.get("rejected") or {}
    losing = {r: v for r, v in rejected.items() if r not in ("costs_more", "same_cost")}
    considered = result.get("feasible", 0) + sum(v.get("count", 0) for v in losing.values())
    return {
        "chart": {"frontier": frontier, "points": points},
        "result": result,
        "ranking": ranking,
        "considered": considered,
        "rejected_count": considered - result.get("feasible", 0),
    }


@perms_required("planner.view_plan")
def plan_detail(request: HtmxHttpRequest, pk: str) -> HttpResponse:
    plan = get_object_or_404(Plan.objects.select_related("model", "workload").prefetch_related("skus"), pk=pk)
    can_cancel = request.user.has_perm("planner.change_plan") and may_cancel(plan, request.user)
    context = {"plan": plan, "can_cancel": can_cancel, **_rows(plan)}
    if is_partial(request):
        return render(request, "planner/_plan_status.html", context)
    return render(request, "planner/plan.html", context)


@perms_required("planner.change_plan")
def plan_cancel(request: HttpRequest, pk: str) -> HttpResponse:
    """Cancel a plan: its requester, or a holder of ``planner.cancel_any_plan`` (403 otherwise)."""
    plan = get_object_or_404(Plan, pk=pk)
    if not may_cancel(plan, request.user):
        raise PermissionDenied("Only the person who started this plan, or an admin, may cancel it.")
    if request.method == "POST" and not plan.is_finished:
        cancel(plan)
        messages.info(request, "Cancellation requested.")
    return redirect("plan", pk=pk)
