"""Plans: start a layout search, follow its progress (HTMX), read the frontier and the ranking,
list and search them, compare two, and download a list or a ranking as CSV."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from fleet.errors import FIELD_ERRORS, ConflictError, InputError, describe
from fleet.forms import add_service_errors
from fleet.tables import csv_response, table_context
from fleet.views.access import HtmxHttpRequest, is_partial, over_limit, perms_required, refused
from planner import tables
from planner.deploy import DeployRequest, clusters_for, deploy_from_plan, ranked
from planner.engine import DEFAULT_ENGINE
from planner.forms import PlanCompareForm, PlanDeployForm, PlanForm, PlanTableForm
from planner.models import Plan
from planner.plans import (
    cancel,
    compare_plans,
    labelled_result,
    may_cancel,
    plan_chart,
    plan_counts,
    plan_prices,
    plan_ranking,
    plan_skipped,
    ranking_csv_rows,
    submit_plan,
)

#: Finished plans offered to compare with on a plan's page.
COMPARE_CHOICES = 20


@perms_required("planner.view_plan")
@vary_on_headers("HX-Request")
def plan_list(request: HtmxHttpRequest, form: PlanForm | None = None, status: int = 200) -> HttpResponse:
    """Recent plans, searched and sorted (``PlanTableForm``), with two boxes to tick to compare;
    the table alone for HTMX."""
    table = PlanTableForm(request.GET)
    page = table.paginate(table.apply(tables.plans()))
    context = table_context(table, page, tables.with_best_sku_names(page.object_list))
    if is_partial(request) and form is None:
        return render(request, "planner/_plans_table.html", context)
    context["form"] = form or PlanForm()
    return render(request, "planner/plans.html", context, status=status)


@perms_required("planner.view_plan")
def plan_list_csv(request: HttpRequest) -> HttpResponse:
    """Every plan the list's search selects, in its order, as CSV (a refused input: 400)."""
    form = PlanTableForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest(form.errors.as_text(), content_type="text/plain")
    rows = tables.plan_csv_rows(form.apply(tables.plans()))
    return csv_response("plans", tables.PLAN_CSV, rows, timezone.now().date())


@perms_required("planner.add_plan")
def plan_start(request: HttpRequest) -> HttpResponse:
    """Start a search; a problem comes back beside its input on the plans page (400); past the user's
    plan limit (``fleet.rate_limits``) 429, the form as sent and the limit above it."""
    if request.method != "POST":
        return redirect("plans")
    form = PlanForm(request.POST)
    refusal = over_limit(request, "plan", form)
    if refusal is None and form.is_valid():
        try:
            submission = submit_plan(form.to_request(), request.user)
        except InputError as exc:
            add_service_errors(form, exc)
        else:
            if not submission.sent:
                messages.warning(request, submission.detail)
            return redirect("plan", pk=submission.plan.pk)
    return refused(plan_list(request, form=form, status=400), refusal)


def _rows(plan: Plan) -> dict:
    """Chart and table data from a finished plan's result, every outcome in words and every SKU by name
    (``planner.plans``: ``labelled_result``, ``plan_chart``, ``plan_ranking``, ``plan_counts``)."""
    result = labelled_result(plan.result, {s.slug: s.name for s in plan.skus.all()}) or {}
    considered, rejected = plan_counts(result)
    return {
        "chart": plan_chart(result),
        "result": result,
        "ranking": plan_ranking(plan),
        "considered": considered,
        "rejected_count": rejected,
    }


def _plan(pk: object) -> Plan:
    return get_object_or_404(Plan.objects.select_related("model", "workload").prefetch_related("skus"), pk=pk)


@perms_required("planner.view_plan")
def plan_detail(request: HtmxHttpRequest, pk: str) -> HttpResponse:
    plan = _plan(pk)
    can_cancel = request.user.has_perm("planner.change_plan") and may_cancel(plan, request.user)
    context = {"plan": plan, "can_cancel": can_cancel, **_rows(plan)}
    if is_partial(request):
        return render(request, "planner/_plan_status.html", context)
    context["prices"], context["skipped"] = plan_prices(plan), plan_skipped(plan)
    others = Plan.objects.listed().filter(status=Plan.Status.DONE).exclude(pk=plan.pk)
    context["compare_with"] = others.select_related("model", "workload")[:COMPARE_CHOICES]
    return render(request, "planner/plan.html", context)


@perms_required("planner.view_plan")
def plan_ranking_csv(request: HttpRequest, pk: str) -> HttpResponse:
    """A plan's ranking as CSV (empty but for the header until it is done)."""
    plan = _plan(pk)
    header, rows = ranking_csv_rows(plan)
    return csv_response(f"plan-{plan.pk}-ranking", header, rows, timezone.now().date())


@perms_required("planner.view_plan")
def plan_compare(request: HttpRequest) -> HttpResponse:
    """Two plans side by side (``?a=&b=``); two ticked boxes of the plans list redirect here. A
    missing or malformed id is said on the page (400), an unknown one is a 404."""
    form = PlanCompareForm(request.GET)
    if not form.is_valid():
        return render(request, "planner/plan_compare.html", {"compare_form": form}, status=400)
    a, b = form.cleaned_data["a"], form.cleaned_data["b"]
    if "plan" in request.GET:
        return redirect(f"{reverse('plan-compare')}?{urlencode({'a': a, 'b': b})}")
    context = {"a": _plan(a), "b": _plan(b), "compare_form": form}
    return render(request, "planner/plan_compare.html", context | compare_plans(context["a"], context["b"]))


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


@perms_required("planner.view_plan", "fleet.add_deployment")
def plan_deploy(request: HttpRequest, pk: str) -> HttpResponse:
    """Register ranked configuration ``?rank=`` of a done plan as a deployment (GET: the form, prefilled;
    POST: create it and go to its page, which shows its launch command). Problems beside their inputs (400)."""
    plan = _plan(pk)
    source = request.POST if request.method == "POST" else request.GET
    try:
        ranked(plan, 1)
    except InputError as exc:
        messages.error(request, describe(exc))
        return redirect("plan", pk=pk)
    try:
        rank = int(source.get("rank") or 1)
        row = ranked(plan, rank)
    except (ValueError, InputError):  # the form says what is wrong with the rank; the best one is shown
        rank, row = 1, ranked(plan, 1)
    clusters = clusters_for(row)
    initial = {
        "rank": rank,
        "slug": f"{plan.model.slug}-{row['sku']}-{rank}"[:64],
        "cluster": clusters[0].slug if clusters else "",
        "engine": DEFAULT_ENGINE,
    }
    form = PlanDeployForm(request.POST if request.method == "POST" else None, initial=initial, clusters=clusters)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                deployment = deploy_from_plan(DeployRequest(plan=str(plan.pk), **data), request.user)
            except FIELD_ERRORS as exc:
                add_service_errors(form, exc)
            except ConflictError as exc:
                form.add_error("slug", str(exc))
            else:
                messages.success(request, f"Deployment {deployment.slug} registered with layout #{rank} of the plan.")
                return redirect("deployment", slug=deployment.slug)
    context = {"plan": plan, "row": row, "rank": rank, "form": form, "clusters": clusters}
    return render(request, "planner/plan_deploy.html", context, status=status)
