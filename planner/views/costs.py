"""Rent versus API (with the decision button), monthly spend, and the decision log."""

from __future__ import annotations

import json
from decimal import Decimal

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from fleet.models import ApiPrice, Deployment, HardwareSku, Workload
from fleet.views.access import perms_required
from planner.breakeven import BreakevenRequestSerializer, run_breakeven
from planner.engine import EngineInputError
from planner.models import Decision
from planner.spend import parse_month, spend_for_month

RENT_FIELDS = ("workload", "deployment", "gpus", "sku", "api_price", "hours_per_day", "on",
               "capacity_output_tokens_per_month")  # fmt: skip


def _rent_inputs(source) -> dict[str, str]:
    inputs = {name: source[name] for name in RENT_FIELDS if source.get(name, "") != ""}
    if not any(name in inputs for name in ("workload", "deployment", "gpus", "sku")):
        # Nothing chosen yet: start from the first workload, the deployment serving it (or 8 H100s)
        # and the newest API price, keeping whatever else was given (a date, say).
        workload = Workload.objects.order_by("name").first()
        api = ApiPrice.objects.order_by("-quoted_on").first()
        serving = Deployment.objects.filter(workload=workload).first() if workload else None
        if workload and api and serving:
            inputs = {"workload": workload.slug, "deployment": serving.slug, "api_price": api.slug, **inputs}
        elif workload and api and HardwareSku.objects.filter(slug="h100-sxm-80gb").exists():
            inputs = {"workload": workload.slug, "gpus": "8", "sku": "h100-sxm-80gb", "api_price": api.slug, **inputs}
    if inputs.get("deployment"):
        # The deployment gives the GPUs and the SKU (its quote in force) and, with the throughput
        # model, the capacity; GPUs or a SKU picked beside it would contradict it.
        inputs.pop("gpus", None)
        inputs.pop("sku", None)
    return inputs


def _compare(inputs: dict[str, str]) -> dict:
    serializer = BreakevenRequestSerializer(data=inputs)
    if not serializer.is_valid():
        return {"errors": {k: [str(m) for m in v] for k, v in serializer.errors.items()}}
    try:
        result = run_breakeven(serializer.validated_data)
    except EngineInputError as exc:
        return {"errors": exc.errors}
    return {"figures": result.figures, "snapshot": result.snapshot, "chart": _chart(result.figures, result.snapshot)}


def _chart(figures: dict, snapshot: dict) -> dict:
    """Monthly cost of each option against output volume (millions of tokens a month)."""
    rent = float(figures["monthly_rent_usd"])
    output_m = (snapshot["monthly_output_tokens"] or 0) / 1e6
    input_m = (snapshot["monthly_input_tokens"] or 0) / 1e6
    prices = snapshot["api_price"]
    hit = float(snapshot["cache_hit_rate"] or 0)
    blended = hit * float(prices["input_cache_hit_usd_per_mtok"]) + (1 - hit) * float(
        prices["input_cache_miss_usd_per_mtok"]
    )
    ratio = input_m / output_m if output_m else 0.0
    per_output_m = float(prices["output_usd_per_mtok"]) + ratio * blended
    breakeven_m = (
        figures["breakeven_output_tokens_per_month_mix"] or figures["breakeven_output_tokens_per_month"]
    ) / 1e6
    capacity_m = (figures["capacity_output_tokens_per_month"] or 0) / 1e6
    top = max(breakeven_m * 2, output_m * 1.5, capacity_m * 1.1, 1.0)
    steps = 40
    points = [
        {"volume": top * i / steps, "rent": rent, "api": top * i / steps * per_output_m} for i in range(steps + 1)
    ]
    return {
        "points": points,
        "current": {"volume": output_m, "api": output_m * per_output_m} if output_m else None,
        "breakeven": {"volume": breakeven_m, "usd": rent},
        "capacity": capacity_m or None,
        "ymax": max(rent, top * per_output_m),
    }


@perms_required("fleet.view_gpuquote", "fleet.view_apiprice")
def rent_vs_api(request: HttpRequest) -> HttpResponse:
    inputs = _rent_inputs(request.GET)
    context = {
        "inputs": inputs,
        "workloads": Workload.objects.values_list("slug", "name"),
        "deployments": Deployment.objects.values_list("slug", flat=True),
        "skus": HardwareSku.objects.values_list("slug", "name"),
        "api_prices": ApiPrice.objects.values_list("slug", "provider", "model_name", "quoted_on"),
        "tiers": Decision.Tier.choices,
        **(_compare(inputs) if inputs else {}),
    }
    return render(request, "planner/rent_vs_api.html", context)


@perms_required("planner.add_decision")
def record_decision(request: HttpRequest) -> HttpResponse:
    """Record a decision from the rent-vs-API page (POST only; finance and admin)."""
    if request.method != "POST":
        return redirect("rent-vs-api")
    inputs = _rent_inputs(request.POST)
    outcome = _compare(inputs)
    workload = Workload.objects.filter(slug=inputs.get("workload")).first()
    tier = request.POST.get("tier", "")
    if "errors" in outcome or workload is None or tier not in {str(v) for v, _ in Decision.Tier.choices}:
        messages.error(request, "The decision was not recorded: pick a workload, a tier and valid inputs.")
        return redirect(f"{request.build_absolute_uri('/rent-vs-api/')}?{request.POST.urlencode()}")
    decision = Decision.record(
        workload=workload,
        tier=int(tier),
        note=request.POST.get("note", "")[:5000],
        figures=outcome["figures"],
        inputs=outcome["snapshot"],
        user=request.user,
    )
    messages.success(request, f"Decision recorded: {decision.get_tier_display()} for {workload.name}.")
    return redirect("decisions")


@perms_required("fleet.view_clusterstate", "fleet.view_gpuquote")
def spend(request: HttpRequest) -> HttpResponse:
    month = request.GET.get("month") or timezone.now().strftime("%Y-%m")
    context: dict = {"month": month}
    parsed = parse_month(month)
    if parsed is None:
        context["errors"] = {"month": ["Give a month as YYYY-MM."]}
    else:
        try:
            context["spend"] = spend_for_month(*parsed).to_dict()
        except EngineInputError as exc:
            context["errors"] = exc.errors
    return render(request, "planner/spend.html", context)


@perms_required("planner.view_decision")
def decisions(request: HttpRequest) -> HttpResponse:
    rows = Decision.objects.select_related("workload", "superseded_by")[:200]
    items = [{"d": d, "inputs": json.dumps(d.inputs, indent=1, default=str)} for d in rows]
    return render(request, "planner/decisions.html", {"items": items, "zero": Decimal(0)})
