"""What-if: pick a model, SKU, GPUs, layout, KV dtype, context and pool; every change re-renders
the result in place (HTMX), and the URL carries the inputs so it can be shared."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from fleet.models import GpuQuote, HardwareSku, ModelSpec
from fleet.views.access import HtmxHttpRequest, is_partial, perms_required
from planner.engine import CACHE_DTYPES, EngineInputError
from planner.headroom import envelope
from planner.sizing import SizingRequestSerializer, run_sizing, run_speed

DEFAULTS = {"model": "kimi-k3", "sku": "h200-141gb", "gpus": "16", "tp": "8", "dp": "2", "ep": "16",
            "kv_cache_dtype": "fp8", "context_tokens": "131072", "pool": "unified"}  # fmt: skip
FIELDS = ("model", "sku", "gpus", "tp", "pp", "dp", "ep", "kv_cache_dtype", "context_tokens", "pool",
          "gpu_memory_utilization")  # fmt: skip


def _inputs(request: HtmxHttpRequest) -> dict[str, str]:
    if not any(name in request.GET for name in FIELDS):
        first = ModelSpec.objects.filter(slug=DEFAULTS["model"]).exists()
        return dict(DEFAULTS) if first else {}
    return {name: request.GET[name] for name in FIELDS if request.GET.get(name, "") != ""}


def compute(inputs: dict[str, str]) -> dict:
    """Validate and size; errors come back per field, never as an exception."""
    serializer = SizingRequestSerializer(data=inputs)
    if not serializer.is_valid():
        return {"errors": {k: [str(m) for m in v] for k, v in serializer.errors.items()}}
    data = serializer.validated_data
    try:
        result = run_sizing(data)
    except EngineInputError as exc:
        return {"errors": exc.errors}
    context = {"result": result, "envelope": envelope(result)}
    if result.fits:
        quote = GpuQuote.in_force(data["sku"], timezone.now().date())
        try:
            speed = run_speed(data, result, quote.usd_per_gpu_hour if quote else None)
        except EngineInputError:
            speed = None
        if speed is not None:
            context["speed"] = {
                "tpot_ms": speed.tpot_s * 1000, "ttft_ms": speed.ttft_s * 1000, "batch": speed.batch,
                "tokens_per_s_per_gpu": speed.tokens_per_s_per_gpu, "usd_per_mtok": speed.usd_per_mtok,
                "quote": quote,
            }  # fmt: skip
    return context


@perms_required("fleet.view_modelspec", "fleet.view_hardwaresku")
@vary_on_headers("HX-Request")
def what_if(request: HtmxHttpRequest) -> HttpResponse:
    inputs = _inputs(request)
    context = {"inputs": inputs, **(compute(inputs) if inputs else {})}
    if is_partial(request):
        return render(request, "planner/_whatif_result.html", context)
    context |= {
        "models": ModelSpec.objects.values_list("slug", "name"),
        "skus": HardwareSku.objects.values_list("slug", "name"),
        "kv_dtypes": [d for d in CACHE_DTYPES if d != "fp32"],
    }
    return render(request, "planner/whatif.html", context)
