"""The model catalogue: list, detail (weights by format, floors per SKU), create, edit, and import
from a config.json."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from fleet import registration
from fleet.errors import ConflictError, InputError
from fleet.filters import ModelSpecFilter
from fleet.forms import ModelImportForm, ModelSpecForm
from fleet.models import HardwareSku, ModelSpec
from fleet.tables import csv_response, table_context
from fleet.views.access import (
    HtmxHttpRequest,
    add_or_change_required,
    is_partial,
    over_limit,
    perms_required,
    record_form_page,
    refused,
)
from fleet.views.history import history_section
from planner import tables
from planner.engine import (
    WEIGHT_FORMATS,
    kv_bytes_per_token,
    min_gpus_for_weights,
    single_gpu_fit,
    state_bytes_per_sequence,
    weight_table,
    weights_bytes,
)
from planner.forms import ModelTableForm


def _models(request: HttpRequest, form: ModelTableForm):
    """The models the list's filters (``ModelSpecFilter``), search and sort select."""
    return form.apply(form.filtered(ModelSpecFilter(request.GET, queryset=tables.models())))


@perms_required("fleet.view_modelspec")
@vary_on_headers("HX-Request")
def model_list(request: HtmxHttpRequest) -> HttpResponse:
    """The model catalogue, searched and sorted (``ModelTableForm``); the table alone for HTMX."""
    form = ModelTableForm(request.GET)
    page = form.paginate(_models(request, form))
    context = table_context(form, page, tables.model_rows(page.object_list))
    if is_partial(request):
        return render(request, "planner/_models_table.html", context)
    return render(request, "planner/models.html", context)


@perms_required("fleet.view_modelspec")
def model_list_csv(request: HttpRequest) -> HttpResponse:
    """Every model the list selects, in its order, as CSV (a refused input: 400)."""
    form = ModelTableForm(request.GET)
    models = _models(request, form)
    if not form.is_valid():
        return HttpResponseBadRequest(form.errors.as_text(), content_type="text/plain")
    rows = tables.model_csv_rows(tables.model_rows(models))
    return csv_response("models", tables.MODEL_CSV, rows, timezone.now().date())


@perms_required("fleet.view_modelspec", "fleet.view_hardwaresku")
def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    model = get_object_or_404(ModelSpec, slug=slug)
    arch = model.to_engine()
    by_format = [
        {"format": fmt, "raw_bytes": weights_bytes(arch, fmt, False), "scaled_bytes": weights_bytes(arch, fmt)}
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
    fewest = min(floors, key=lambda f: (f["min_gpus"], -f["sku"].memory_bytes), default=None)
    context = {
        "m": model,
        "what_if": fewest["what_if"] if fewest else urlencode({"model": model.slug}),
        "by_format": by_format,
        "shipped_bytes": shipped,
        "by_part": weight_table(arch),
        "low_bit": low_bit,
        "raw_bytes": raw,
        "scaled_bytes": scaled,
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
    """Import a model from its config.json: errors beside each input (400), or the new model's page;
    past the user's import limit (``fleet.rate_limits``) 429 with the form as sent and the limit."""
    form = ModelImportForm(request.POST or None, request.FILES or None)
    refusal = over_limit(request, "model_import", form) if request.method == "POST" else None
    if request.method == "POST" and refusal is None and form.is_valid():
        try:
            model = registration.import_model(form.to_request())
        except (InputError, ConflictError) as exc:
            form.add_import_errors(exc)
        else:
            messages.success(request, f"Model {model.name} imported from its config.json.")
            return redirect(reverse("model", args=[model.slug]))
    status = 400 if request.method == "POST" else 200
    return refused(render(request, "planner/model_import.html", {"form": form}, status=status), refusal)
