"""Prefix caching: pick a model, SKU, layout and engine release, paste or upload a request trace, and see
where a hit can land, what the state checkpoints cost, and how much of the trace each block size reuses
(chart and table, the engine's choice marked). A POST (the trace can be a file); HTMX swaps the result."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from fleet.errors import FIELD_ERRORS
from fleet.forms import add_service_errors
from fleet.models import Deployment
from fleet.views.access import HtmxHttpRequest, is_partial, over_limit, perms_required, refused
from planner.engine import GIB, PrefixCacheResult
from planner.forms import PrefixCacheForm
from planner.prefix_cache import EXAMPLE_TRACE, analyse

#: Service error keys shown beside another input of the page.
FIELD_OF = {"trace": "trace_text", "layout": "tp"}


def chart_data(result: PrefixCacheResult) -> dict[str, Any]:
    """The chart's series: reuse (% of the trace's prompt tokens) and retained checkpoint memory (GiB per
    GPU) per block size, the ideal token-level reuse, and the index of the engine's own block."""
    grans = result.granularities
    return {
        "labels": [g.granularity_tokens for g in grans],
        "reuse_percent": [round(g.reusable_token_fraction * 100, 2) for g in grans],
        "memory_gib": [round(g.checkpoint_bytes_per_gpu / GIB, 4) for g in grans],
        "ideal_percent": round((result.ideal_reusable_token_fraction or 0) * 100, 2),
        "choice": next((i for i, g in enumerate(grans) if g.engine_choice), None),
        "choice_label": f"{result.engine} {result.engine_version} ({result.cache_mode}): "
        f"{result.hit_granularity_tokens} tokens",
    }


def compute(form: PrefixCacheForm) -> dict[str, Any]:
    """Analyse a bound form's request; a problem goes beside its input, never out as an exception."""
    if not form.is_bound or not form.is_valid():
        return {}
    try:
        analysis = analyse(form.to_request())
    except FIELD_ERRORS as exc:
        exc.errors = {FIELD_OF.get(k.split(".")[0], k): v for k, v in exc.errors.items()}
        add_service_errors(form, exc)
        return {}
    result = analysis.result
    return {"result": result, "chart": chart_data(result)}


@perms_required("fleet.view_modelspec", "fleet.view_hardwaresku")
@vary_on_headers("HX-Request")
def prefix_cache_page(request: HtmxHttpRequest) -> HttpResponse:
    """The form and its analysis (GET: the example trace, or a deployment's settings; POST: the user's
    inputs). A POST carrying the user's own trace counts against their prefix-cache limit
    (``fleet.rate_limits``): past it 429, the form as sent and the limit in the result's place."""
    refusal = None
    if request.method == "POST":
        form = PrefixCacheForm(request.POST, request.FILES)
        if request.POST.get("trace_text", "").strip() or request.FILES.get("trace_file"):
            refusal = over_limit(request, "prefix_cache", form)
    else:
        asked = {k: v for k, v in request.GET.items() if v != "" and k != "deployment"}
        # ?deployment=<slug>: start from what that deployment serves (for users who may read deployments).
        slug = request.GET.get("deployment", "") if request.user.has_perm("fleet.view_deployment") else ""
        served = Deployment.objects.select_related("cluster__sku", "model").filter(slug=slug).first() if slug else None
        start = PrefixCacheForm.of_deployment(served) if served is not None else PrefixCacheForm.EXAMPLE
        form = PrefixCacheForm({**start, **asked})
        if form.data["model"] not in dict(form.fields["model"].choices):
            form = PrefixCacheForm()
    context = {"form": form, "example_trace": EXAMPLE_TRACE, **compute(form)}
    status = 400 if form.is_bound and form.errors and not is_partial(request) and request.method == "POST" else 200
    if is_partial(request):
        return refused(render(request, "planner/_prefix_cache_result.html", context), refusal)
    return refused(render(request, "planner/prefix_cache.html", context, status=status), refusal)
