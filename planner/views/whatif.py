"""What-if: pick a model, SKU, GPUs, layout, KV dtype, context and pool, or start from a deployment
(``?deployment=SLUG``, the deployment page's "What if…" link, or the page's picker: its inputs are
loaded, and the result names each one changed from it); every change re-renders the result in place
(HTMX) with each input's error beside it, and the URL carries the inputs so it can be shared."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from fleet import prices
from fleet.errors import FIELD_ERRORS
from fleet.forms import add_service_errors
from fleet.views.access import HtmxHttpRequest, is_partial, perms_required
from planner.engine import IDLE_TTFT_DEFINITION, TTFT_DEFINITION
from planner.estimates import band_of, breakdown
from planner.forms import WhatIfForm
from planner.headroom import envelope
from planner.sizing import size_layout, speed_of


def _form(request: HtmxHttpRequest) -> WhatIfForm:
    """Bound to the URL's inputs, or to the page's example when the URL names none."""
    if any(name in request.GET for name in WhatIfForm.base_fields):
        return WhatIfForm.from_query(request.GET)
    form = WhatIfForm(WhatIfForm.EXAMPLE)
    return form if WhatIfForm.EXAMPLE["model"] in dict(form.fields["model"].choices) else WhatIfForm()


def compute(form: WhatIfForm) -> dict:
    """Size a bound form's request; a problem goes beside its input, never out as an exception."""
    if not form.is_bound or not form.is_valid():
        return {}
    try:
        sizing = size_layout(form.to_request())
    except FIELD_ERRORS as exc:
        add_service_errors(form, exc)
        return {}
    result = sizing.result
    context = {"result": result, "envelope": envelope(result), "sizing": sizing, "changes": form.changes_of(sizing)}
    if result.fits:
        quote = prices.price_of_sku(sizing.sku, timezone.now().date())
        try:
            speed = speed_of(sizing, quote.usd_per_gpu_hour if quote else None)
        except FIELD_ERRORS:
            speed = None
        if speed is not None:
            band = band_of(sizing, speed)
            context["speed"] = {
                "tpot_ms": speed.tpot_s * 1000,
                "ttft_ms": speed.ttft_s * 1000,
                "ttft_definition": TTFT_DEFINITION,
                "ttft_parts": speed.ttft_parts.to_dict(),
                "idle_ttft_ms": speed.idle_ttft_s * 1000,
                "idle_ttft_definition": IDLE_TTFT_DEFINITION,
                "batch": speed.batch,
                "prompt_tokens": speed.prompt_tokens,
                "output_tokens": speed.output_tokens,
                "workload": sizing.workload,
                "tokens_per_s_per_gpu": speed.tokens_per_s_per_gpu,
                "usd_per_mtok": speed.usd_per_mtok,
                "quote": quote,
                "bound": speed.decode.bound,
                "breakdown": breakdown(speed),
                "band": band_summary(band.to_dict()),
                "calibrated": next((a for a in speed.assumptions if a.startswith("Calibrated from live polls")), None),
            }
    return context


def factor_label(name: str) -> str:
    """``memory_bandwidth_efficiency`` -> ``memory bandwidth efficiency``; ``step_overhead_s`` -> ``step overhead``."""
    return name.removesuffix("_s").replace("_", " ")


def band_summary(band: dict) -> dict:
    """The band as the page shows it: the figures' bands and the factors, most influential first."""
    factors = sorted(band["factors"], key=lambda f: -abs(f["elasticity_tpot"] or 0))
    most = band["most_influential"]
    return {
        **band,
        "factors": [{**f, "label": factor_label(f["name"])} for f in factors],
        "most_influential_label": factor_label(most) if most else None,
        "most_influential_elasticity": next((f["elasticity_tpot"] for f in factors if f["name"] == most), None),
        "percent": round(band["spread"] * 100),
    }


@perms_required("fleet.view_modelspec", "fleet.view_hardwaresku")
@vary_on_headers("HX-Request")
def what_if(request: HtmxHttpRequest) -> HttpResponse:
    form = _form(request)
    context = {"form": form, **compute(form)}
    if not is_partial(request):
        return render(request, "planner/whatif.html", context)
    response = render(request, "planner/_whatif_result.html", {**context, "oob_errors": True})
    if form.reloaded:  # the URL to share is the inputs just loaded, not the ones the request sent
        response["HX-Push-Url"] = f"{reverse('what-if')}?{urlencode(form.data)}"
    return response
