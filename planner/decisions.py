"""Decision service: record a rent-versus-API decision on a comparison computed now.

The API (``POST /api/v1/decisions/``) and the rent-vs-API page both call ``record_decision``;
the comparison is frozen into the decision (``Decision.inputs``) as the breakeven service made it.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models

from fleet.errors import FIELD_ERRORS, InputError
from fleet.models import ApiPrice, Deployment, HardwareSku, ModelSpec, Workload
from fleet.models.base import find_by_slug
from planner.breakeven import BreakevenRequest, compare
from planner.models import Decision

#: Longest note kept with a decision (characters).
NOTE_MAX_CHARS = 5000


def record_decision(
    *, workload: str, tier: int, comparison: BreakevenRequest, note: str = "", user: Any = None
) -> Decision:
    """Compare now and record the decision with that comparison's figures and inputs.

    The comparison is about the decision's workload unless it names one itself. Raises
    InputError: unknown workload, tier, a note too long, or the comparison's own problems as
    ``breakeven.<field>``.
    """
    errors: dict[str, list[str]] = {}
    record = find_by_slug(Workload.objects, workload, "workload", errors)
    if tier not in Decision.Tier.values:
        errors["tier"] = [f"Pick a tier: {', '.join(f'{v} ({label})' for v, label in Decision.Tier.choices)}."]
    elif tier == Decision.Tier.BUY and comparison.buy_usd_per_gpu is None:
        errors["tier"] = ["Buying was not costed: give the purchase figures (buy_usd_per_gpu and the site's) first."]
    if len(note) > NOTE_MAX_CHARS:
        errors["note"] = [f"Keep the note under {NOTE_MAX_CHARS:,} characters."]
    if errors:
        raise InputError(errors)
    if comparison.workload is None:
        comparison = replace(comparison, workload=workload)
    try:
        result = compare(comparison)
    except FIELD_ERRORS as exc:
        # Dotted paths, as everywhere: the API answers {"breakeven.gpus": [...]}.
        raise InputError({f"breakeven.{field}": messages for field, messages in exc.errors.items()}) from exc
    return Decision.record(
        workload=record, tier=tier, note=note, figures=result.figures, inputs=result.snapshot, user=user
    )


@dataclass(frozen=True)
class FrozenInput:
    """One frozen input as its table shows it: a label, the value and its key (the key names its unit:
    ``planner.templatetags.reading.figure``)."""

    label: str
    key: str
    value: Any


@dataclass(frozen=True)
class FrozenSection:
    """A group of frozen inputs (the prices, the volume, one record's figures)."""

    title: str
    rows: list[FrozenInput]


#: The records a comparison freezes (``planner.breakeven.SNAPSHOT_FIELDS``): their key and model.
FROZEN_RECORDS: tuple[tuple[str, str, type[models.Model]], ...] = (
    ("workload", "Workload", Workload),
    ("deployment", "Deployment", Deployment),
    ("model", "Model", ModelSpec),
    ("sku", "SKU", HardwareSku),
)


#: Labels of the frozen keys that are no record's field (the comparison asked for, the throughput estimate).
FROZEN_LABELS = {
    "api_price": "API price",
    "gpus": "GPUs",
    "sku": "SKU",
    "gpu_quote": "GPU quote",
    "usd_per_gpu_hour": "GPU price",
    "tpot_ms": "TPOT",
    "tokens_per_s_replica": "Output rate",
    "batch": "Concurrent sequences per replica",
}


def _label(model: type[models.Model] | None, key: str) -> str:
    """A key's label: its field's verbose name without the unit in brackets (the value says it)."""
    label = FROZEN_LABELS.get(key, key.replace("_", " "))
    if model is not None:
        with contextlib.suppress(FieldDoesNotExist):
            label = str(model._meta.get_field(key).verbose_name)
    label = re.sub(r"\s*\([^)]*\)$", "", label)
    return label[:1].upper() + label[1:]


def _rows(values: dict[str, Any] | None, model: type[models.Model] | None = None) -> list[FrozenInput]:
    """A flat dict's figures as rows; nested values (layer groups, weight parts) stay in the JSON."""
    return [
        FrozenInput(_label(model, key), key, value)
        for key, value in (values or {}).items()
        if not isinstance(value, dict | list) and key != "slug"
    ]


def frozen_inputs(inputs: dict[str, Any]) -> list[FrozenSection]:
    """A decision's frozen inputs (``Decision.inputs``, the comparison's snapshot) as labelled sections
    for the decision log; what is nested deeper (layer groups, the sensitivity band) is in its JSON."""
    inputs = inputs or {}
    prices = [FrozenInput("GPU price", "usd_per_gpu_hour", inputs.get("usd_per_gpu_hour"))]
    for quote in inputs.get("quotes_used") or []:
        prices.append(
            FrozenInput(
                f"Quote of {quote.get('provider')} for {quote.get('sku')} ({quote.get('basis', 'quote')})",
                "usd_per_gpu_hour",
                quote.get("usd_per_gpu_hour"),
            )
        )
        prices.append(FrozenInput("Quoted on", "quoted_on", quote.get("quoted_on")))
    api = inputs.get("api_price") or {}
    if api:
        name = " ".join(str(part) for part in (api.get("provider"), api.get("model_name")) if part)
        prices.append(FrozenInput("API price", "api_price", name))
        prices.append(FrozenInput("API price quoted on", "quoted_on", api.get("quoted_on") or "inline"))
        prices += [
            FrozenInput(_label(ApiPrice, key), key, api.get(key))
            for key in ("input_cache_hit_usd_per_mtok", "input_cache_miss_usd_per_mtok", "output_usd_per_mtok")
        ]
    sections = [
        FrozenSection("Prices", prices),
        FrozenSection(
            "Volume",
            [
                FrozenInput("Computed on", "computed_on", inputs.get("computed_on")),
                FrozenInput("Input tokens a month", "monthly_input_tokens", inputs.get("monthly_input_tokens")),
                FrozenInput("Output tokens a month", "monthly_output_tokens", inputs.get("monthly_output_tokens")),
                FrozenInput("Prefix cache hit rate", "cache_hit_rate", inputs.get("cache_hit_rate")),
            ],
        ),
        FrozenSection("Comparison asked for", _rows(inputs.get("request"))),
    ]
    for key, title, model in FROZEN_RECORDS:
        record = inputs.get(key)
        if record:
            sections.append(FrozenSection(f"{title} {record.get('slug', '')}".strip(), _rows(record, model)))
    throughput = inputs.get("throughput")
    if throughput:
        rows = _rows(throughput)
        layout = throughput.get("layout") or {}
        if layout:
            rows.append(FrozenInput("Layout", "layout", " x ".join(f"{k} {v}" for k, v in layout.items())))
        sections.append(FrozenSection("Throughput estimate", rows))
    return [s for s in sections if s.rows]
