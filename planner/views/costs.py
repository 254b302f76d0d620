"""Rent versus API (with the decision button), monthly spend, and the decision log."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlencode

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from fleet.errors import FIELD_ERRORS, describe
from fleet.forms import add_service_errors
from fleet.models import Workload
from fleet.tables import csv_response, table_context
from fleet.views.access import HtmxHttpRequest, is_partial, perms_required
from fleet.views.history import history_page
from planner import tables
from planner.breakeven import compare, cost_curve
from planner.decisions import record_decision as record_decision_service
from planner.forms import DecisionForm, DecisionTableForm, RecomputeForm, RentVsApiForm, SpendForm, SupersedeForm
from planner.models import Decision, WorkloadBreakeven
from planner.reviews import supersede_after_review
from planner.snapshots import request_refresh
from planner.spend import spend_page


def _compare(form: RentVsApiForm) -> dict:
    """Compare a bound form's inputs; problems go beside the inputs, never out as an exception."""
    if not form.is_valid():
        return {}
    try:
        result = compare(form.to_request())
    except FIELD_ERRORS as exc:
        add_service_errors(form, exc)
        return {}
    return {"figures": result.figures, "snapshot": result.snapshot, "chart": cost_curve(result)}


def _stored(workload_slug: str | None) -> dict:
    """The chosen workload's stored breakeven (``planner.reviews``) for the page: the workload, the row
    (None: never computed) and its state."""
    workload = Workload.objects.filter(slug=workload_slug).first() if workload_slug else None
    if workload is None:
        return {}
    stored = WorkloadBreakeven.objects.filter(workload=workload).first()
    return {"stored_workload": workload, "stored": stored, "stored_state": stored.state() if stored else "pending"}


def _rent_page(
    request: HttpRequest,
    source,
    decision_form: DecisionForm | None = None,
    status: int = 200,
    recompute_errors: dict | None = None,
):
    inputs = RentVsApiForm.starting_inputs(source)
    form = RentVsApiForm(inputs)
    context = {"form": form, "inputs": inputs, "decision_form": decision_form or DecisionForm(), **_compare(form)}
    context.update(_stored(inputs.get("workload")), recompute_errors=recompute_errors)
    return render(request, "planner/rent_vs_api.html", context, status=status)


@perms_required("fleet.view_gpuquote", "fleet.view_apiprice")
def rent_vs_api(request: HttpRequest) -> HttpResponse:
    return _rent_page(request, request.GET)


@perms_required("planner.add_decision")
def record_decision(request: HttpRequest) -> HttpResponse:
    """Record a decision from the rent-vs-API page (POST only; finance and admin). A problem is
    shown on the page beside its input (400), with the comparison as it was."""
    if request.method != "POST":
        return redirect("rent-vs-api")
    inputs = RentVsApiForm.starting_inputs(request.POST)
    form, decision_form = RentVsApiForm(inputs), DecisionForm(request.POST)
    if form.is_valid() and decision_form.is_valid():
        try:
            decision = record_decision_service(
                workload=form.cleaned_data["workload"],
                tier=decision_form.cleaned_data["tier"],
                note=decision_form.cleaned_data["note"],
                comparison=form.to_request(),
                user=request.user,
            )
        except FIELD_ERRORS as exc:
            add_service_errors(decision_form if set(exc.errors) <= {"tier", "note"} else form, exc, "breakeven.")
        else:
            messages.success(request, f"Decision recorded: {decision.get_tier_display()} for {decision.workload.name}.")
            return redirect("decisions")
    return _rent_page(request, request.POST, decision_form=decision_form, status=400)


#: Why a recomputation was asked for from the rent-vs-API page (the outbox message's reason).
RECOMPUTE_REASON = "recompute requested on the rent-vs-API page"


# Queues work and changes no record: whoever may view the page (and its prices) may ask for it.
@perms_required("fleet.view_gpuquote", "fleet.view_apiprice")
def recompute_breakeven(request: HtmxHttpRequest) -> HttpResponse:
    """Queue the recomputation of a workload's stored breakeven (POST; ``planner.snapshots.request_refresh``
    through the outbox). HTMX gets the stored-breakeven partial saying it is queued; without script, the
    page again (same inputs) with the message. An unknown workload: 400."""
    if request.method != "POST":
        return redirect("rent-vs-api")
    form = RecomputeForm(request.POST)
    if not form.is_valid():
        if is_partial(request):
            return render(request, "planner/_stored_breakeven.html", {"recompute_errors": form.errors}, status=400)
        return _rent_page(request, request.POST, status=400, recompute_errors=form.errors)
    workload = form.cleaned_data["workload"]
    with transaction.atomic():
        request_refresh(workloads=[workload.pk], reason=RECOMPUTE_REASON)
    queued = f"Recomputation of {workload.name}'s breakeven queued: a worker stores it shortly."
    if is_partial(request):
        context = {**_stored(workload.slug), "queued": queued, "inputs": RentVsApiForm.starting_inputs(request.POST)}
        return render(request, "planner/_stored_breakeven.html", context)
    messages.success(request, queued)
    inputs = RentVsApiForm.starting_inputs(request.POST)
    return redirect(f"{reverse('rent-vs-api')}?{urlencode(inputs)}")


def _trend_chart(trend: list[dict]) -> dict:
    """The trend chart's data (``static/js/charts.js``, ``spendTrend``): USD per month, actual and
    projected as two stacked series; months with unpriced GPU-hours are named."""
    return {
        "labels": [t["month"] for t in trend],
        "actual": [float(t["actual_cost_usd"]) for t in trend],
        "projected": [float(t["projected_cost_usd"]) for t in trend],
        "incomplete": [t["month"] for t in trend if t["unpriced_gpu_hours"] != "0.00"],
    }


@perms_required("fleet.view_clusterstate", "fleet.view_gpuquote")
def spend(request: HttpRequest) -> HttpResponse:
    """A month's GPU spend, actual and projected apart, with its breakdowns, warnings and 12-month
    trend; a bad month is reported beside its input (400)."""
    month = request.GET.get("month") or timezone.now().strftime("%Y-%m")
    form = SpendForm({"month": month})
    context: dict = {"month": month, "form": form}
    if form.is_valid():
        try:
            data = spend_page(month, timezone.now().date())
        except FIELD_ERRORS as exc:
            add_service_errors(form, exc)
        else:
            context.update(spend=data, trend_chart=_trend_chart(data["trend"]))
    return render(request, "planner/spend.html", context, status=400 if form.errors else 200)


@perms_required("planner.view_decision")
@vary_on_headers("HX-Request")
def decisions(request: HtmxHttpRequest) -> HttpResponse:
    """The decision log, searched and sorted (``DecisionTableForm``); the table alone for HTMX."""
    return _decisions_page(request)


def _decisions_page(request: HtmxHttpRequest, status: int = 200, whole: bool = False) -> HttpResponse:
    """The decision log; the table alone for an HTMX fragment request unless ``whole`` (a refusal: its
    message is above the table)."""
    form = DecisionTableForm(request.GET)
    page = form.paginate(form.apply(tables.decisions()))
    context = table_context(form, page, page.object_list) | {"zero": Decimal(0)}
    if is_partial(request) and not whole:
        return render(request, "planner/_decisions_table.html", context, status=status)
    return render(request, "planner/decisions.html", context, status=status)


@perms_required("planner.add_decision")
def supersede_decision(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Supersede a decision its review found no longer holds, in one click (POST; finance and admin): a new
    decision for the workload with the tier the recomputed comparison favours (``planner.reviews``).
    Refused (400, the log with the reason) when the review no longer says so."""
    if request.method != "POST":
        return redirect("decisions")
    decision = get_object_or_404(Decision, pk=pk)
    form = SupersedeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Supersede from the decision log's button.")
        return _decisions_page(request, status=400, whole=True)
    try:
        new = supersede_after_review(decision.pk, user=request.user, favours=form.cleaned_data["favours"])
    except FIELD_ERRORS as exc:
        messages.error(request, f"Decision {decision.pk} not superseded: {describe(exc)}")
        return _decisions_page(request, status=400, whole=True)
    messages.success(request, f"Decision {decision.pk} superseded: {new.get_tier_display()} for {new.workload.name}.")
    return redirect("decisions")


@perms_required("planner.view_decision")
def decisions_csv(request: HttpRequest) -> HttpResponse:
    """Every decision the log's search selects, in its order, as CSV (a refused input: 400)."""
    form = DecisionTableForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest(form.errors.as_text(), content_type="text/plain")
    rows = tables.decision_csv_rows(form.apply(tables.decisions()))
    return csv_response("decisions", tables.DECISION_CSV, rows, timezone.now().date())


@perms_required("planner.view_decision")
@vary_on_headers("HX-Request")
def decision_inputs(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A decision's quotes and frozen inputs: the fragment its row of the log loads when opened (HTMX), a page of
    their own otherwise (the row's link without JavaScript)."""
    context = tables.decision_inputs(get_object_or_404(tables.decisions(), pk=pk))
    if is_partial(request):
        return render(request, "planner/_decision_inputs.html", context)
    return render(request, "planner/decision_inputs.html", context)


@perms_required("planner.view_decision")
def decision_history(request: HttpRequest, pk: int) -> HttpResponse:
    """A decision's audit trail: it is append-only, so its creation (who recorded it, when)."""
    return history_page(request, get_object_or_404(Decision, pk=pk), back=reverse("decisions"))
