"""The model catalogue: list, detail (weights by format, floors per SKU), create, edit, and import
from a config.json."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from fleet import registration
from fleet.errors import ConflictError, InputError
from fleet.filters import ModelSpecFilter
from fleet.forms import ModelImportForm, ModelSpecForm
from fleet.models import HardwareSku, ModelSpec
from fleet.views.access import add_or_change_required, perms_required, record_form_page
from fleet.views.history import history_section
from planner.engine import (
    WEIGHT_FORMATS,
    kv_bytes_per_token,
    min_gpus_for_weights,
    single_gpu_fit,
    state_bytes_per_sequence,
    weights_bytes,
)


@perms_required("fleet.view_modelspec")
def model_list(request: HttpRequest) -> HttpResponse:
    models = ModelSpecFilter(request.GET, queryset=ModelSpec.objects.all()).qs
    rows = [{"m": m, "weights_tb": weights_bytes(m.to_engine()) / 1e12} for m in models]
    return render(request, "planner/models.html", {"rows": rows})


@perms_required("fleet.view_modelspec", "fleet.view_hardwaresku")
def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    model = get_object_or_404(ModelSpec, slug=slug)
    arch = model.to_engine()
    by_format = [
        {"format": fmt, "raw_tb": weights_bytes(arch, fmt, False) / 1e12, "scaled_tb": weights_bytes(arch, fmt) / 1e12}
        for fmt in WEIGHT_FORMATS
        if fmt != "fp16"
    ]
    shipped = weights_bytes(arch)
    # The seeds' floors: every weight in the model's low-bit format, raw (K3: 2.8T x 0.5 B = 1.4 TB),
    # then with that format's block scales, then as the checkpoint ships (bf16 parts kept).
    low_bit = arch.expert_weight_format or arch.weight_format
    raw, scaled = weights_bytes(arch, low_bit, False), weights_bytes(arch, low_bit)
    floors = []
    for sku in HardwareSku.objects.all():
        accel = sku.to_engine()
        fit = single_gpu_fit(arch, accel, context_tokens=min(8192, model.max_context_tokens))
        min_gpus = min_gpus_for_weights(shipped, accel)
        floors.append(
            {
                "sku": sku,
                "raw": min_gpus_for_weights(raw, accel),
                "scaled": min_gpus_for_weights(scaled, accel),
                "min_gpus": min_gpus,
                "single": fit,
                "what_if": what_if_query(model.slug, sku.slug, min_gpus),
            }
        )
    # The page's What-if button: the SKU that holds the weights on the fewest GPUs (it used to land
    # on "sku: This field is required").
    fewest = min(floors, key=lambda f: (f["min_gpus"], -f["sku"].hbm_gb), default=None)
    context = {
        "m": model,
        "what_if": fewest["what_if"] if fewest else urlencode({"model": model.slug}),
        "by_format": by_format,
        "shipped_tb": shipped / 1e12,
        "low_bit": low_bit,
        "raw_tb": raw / 1e12,
        "scaled_tb": scaled / 1e12,
        "floors": floors,
        "kv_bf16": kv_bytes_per_token(arch, "bf16"),
        "kv_fp8": kv_bytes_per_token(arch, "fp8"),
        "state": state_bytes_per_sequence(arch),
        **history_section(model, "model"),
    }
    return render(request, "planner/model.html", context)


def what_if_query(model: str, sku: str, min_gpus: int) -> str:
    """The what-if page's query for ``model`` on ``sku``: the weights' floor rounded up to a power of
    two GPUs (a layout tp must divide), tp up to one 8-GPU node and dp across the rest."""
    gpus = 1 << max(0, math.ceil(math.log2(max(1, min_gpus))))
    tp = min(gpus, 8)
    return urlencode({"model": model, "sku": sku, "gpus": gpus, "tp": tp, "dp": gpus // tp})


@add_or_change_required("fleet", "modelspec")
def model_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    model = get_object_or_404(ModelSpec, slug=slug) if slug else None
    return record_form_page(
        request,
        ModelSpecForm,
        model,
        title=f"Edit {model.name}" if model else "Add a model",
        saved=lambda m: (f"Model {m.name} saved.", reverse("model", args=[m.slug])),
        cancel="models",
    )


@perms_required("fleet.add_modelspec")
def model_import(request: HttpRequest) -> HttpResponse:
    """Import a model from its config.json: errors beside each input (400), or the new model's page."""
    form = ModelImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            model = registration.import_model(form.to_request())
        except (InputError, ConflictError) as exc:
            form.add_import_errors(exc)
        else:
            messages.success(request, f"Model {model.name} imported from its config.json.")
            return redirect(reverse("model", args=[model.slug]))
    status = 400 if request.method == "POST" else 200
    return render(request, "planner/model_import.html", {"form": form}, status=status)
