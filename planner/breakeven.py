"""Rent versus API: validate a request once, resolve prices and records, call the cost engine.

Used by ``POST /api/v1/breakeven/``, by recorded decisions (which freeze ``snapshot``), and by
the rent-vs-API page. Prices come either inline or from records: the GPU quote in force for a
SKU on a date, and an ``ApiPrice`` by slug; either way the response says which prices, with
their dates, it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from fleet.models import ApiPrice, Deployment, GpuQuote, HardwareSku, ModelSpec, Workload
from planner.engine import (
    PRICING_KINDS,
    EngineInputError,
    Layout,
    Quote,
    breakeven,
    estimate,
    unit_economics,
    weights_bytes,
    weights_storage,
)

PRICE_FIELDS = ("input_cache_hit_usd_per_mtok", "input_cache_miss_usd_per_mtok", "output_usd_per_mtok")


def _money(**kwargs: Any) -> serializers.DecimalField:
    return serializers.DecimalField(max_digits=14, decimal_places=4, min_value=Decimal(0), required=False, **kwargs)


class BreakevenRequestSerializer(serializers.Serializer):
    """``POST /api/v1/breakeven/`` request body."""

    gpus = serializers.IntegerField(required=False, min_value=1, help_text="Default: the deployment's GPUs.")
    usd_per_gpu_hour = _money(help_text="Inline rate; or give `sku` to use the quote in force.")
    sku = serializers.SlugRelatedField(slug_field="slug", queryset=HardwareSku.objects.all(), required=False)
    on = serializers.DateField(required=False, help_text="Date for the quote in force (default: today).")
    pricing_kind = serializers.ChoiceField(choices=PRICING_KINDS, default="on-demand")
    hours_per_day = serializers.DecimalField(
        max_digits=4, decimal_places=2, default=Decimal(24), min_value=Decimal("0.01"), max_value=Decimal(24)
    )
    days_per_month = serializers.IntegerField(default=30, min_value=1, max_value=31)
    api_price = serializers.SlugRelatedField(slug_field="slug", queryset=ApiPrice.objects.all(), required=False)
    input_cache_hit_usd_per_mtok = _money()
    input_cache_miss_usd_per_mtok = _money()
    output_usd_per_mtok = _money()
    workload = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Workload.objects.all(),
        required=False,
        help_text="Fills the monthly tokens (requests/day x mean tokens x days) and the cache hit rate.",
    )
    deployment = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Deployment.objects.select_related("cluster__sku", "model"),
        required=False,
        help_text="Fills gpus, sku, the model (weights) and, from the throughput model, the capacity.",
    )
    model = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=ModelSpec.objects.all(),
        required=False,
        help_text="Fills weights_bytes (one copy, with block scales) for the download cost.",
    )
    monthly_input_tokens = serializers.IntegerField(required=False, min_value=0)
    monthly_output_tokens = serializers.IntegerField(required=False, min_value=0)
    cache_hit_rate = serializers.FloatField(required=False, min_value=0, max_value=1)
    capacity_output_tokens_per_month = serializers.IntegerField(required=False, min_value=0)
    utilisation = serializers.FloatField(required=False, min_value=0, max_value=1)
    weights_bytes = serializers.IntegerField(required=False, min_value=0)
    download_gbytes_per_s = serializers.FloatField(required=False, min_value=0.001)
    storage_usd_per_gb_month = serializers.DecimalField(
        max_digits=10, decimal_places=4, min_value=Decimal(0), required=False,
        help_text="Keep the weights on a persistent volume at this price (decimal GB).",
    )  # fmt: skip
    tp = serializers.IntegerField(required=False, min_value=1, help_text="With model and sku: capacity of this layout.")
    pp = serializers.IntegerField(required=False, min_value=1)
    dp = serializers.IntegerField(required=False, min_value=1)
    ep = serializers.IntegerField(required=False, min_value=1)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        deployment: Deployment | None = attrs.get("deployment")
        if deployment is not None:
            attrs.setdefault("gpus", deployment.replicas * deployment.gpus_per_replica)
            if "usd_per_gpu_hour" not in attrs:
                attrs.setdefault("sku", deployment.cluster.sku)
            attrs.setdefault("model", deployment.model)
        if "gpus" not in attrs:
            errors["gpus"] = ["Give the number of GPUs, or a deployment."]
        if "usd_per_gpu_hour" in attrs and "sku" in attrs and deployment is None:
            errors["usd_per_gpu_hour"] = ["Give either an inline rate or a SKU (its quote in force), not both."]
        elif "usd_per_gpu_hour" not in attrs and "sku" not in attrs:
            errors["usd_per_gpu_hour"] = ["Give an inline rate or a SKU whose quote in force is used."]
        inline = [name for name in PRICE_FIELDS if name in attrs]
        if attrs.get("api_price") is not None and inline:
            errors["api_price"] = ["Give either an API price slug or inline prices, not both."]
        elif attrs.get("api_price") is None and len(inline) != len(PRICE_FIELDS):
            for name in PRICE_FIELDS:
                if name not in attrs:
                    errors[name] = ["Required unless api_price names a stored price."]
        workload: Workload | None = attrs.get("workload")
        for name in ("monthly_input_tokens", "monthly_output_tokens"):
            if name not in attrs and workload is None:
                errors[name] = ["Required unless a workload is given."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


@dataclass
class Breakeven:
    """A computed comparison: the engine's figures and the inputs it was computed from."""

    figures: dict[str, Any]
    snapshot: dict[str, Any]

    def response(self) -> dict[str, Any]:
        return {
            **self.figures,
            "quotes_used": self.snapshot["quotes_used"],
            "api_price_used": self.snapshot["api_price"],
        }


def _quote_in_force(sku: HardwareSku, on: date, kind: str) -> Quote:
    quote = GpuQuote.objects.in_force(sku, on).cheapest(kind)
    if quote is None:
        raise EngineInputError.single(
            "sku", f"No {kind} quote for {sku.slug} is in force on {on.isoformat()}; add one or give a rate."
        )
    return quote


#: The figures a decision freezes from each record it was made on.
SNAPSHOT_FIELDS: dict[str, tuple[str, ...]] = {
    "sku": ("slug", "name", "vendor", "hbm_gb", "hbm_bandwidth_tbps", "bf16_tflops", "fp8_tflops", "fp4_tflops",
            "interconnect_gbps", "gpus_per_node"),
    "model": ("slug", "name", "total_params", "active_params", "expert_params", "n_routed_experts",
              "n_active_experts", "weight_format", "expert_weight_format", "max_context_tokens", "layer_groups"),
    "workload": ("slug", "name", "team", "requests_per_day", "mean_prompt_tokens", "mean_output_tokens",
                 "p95_context_tokens", "prefix_cache_hit_rate", "peak_concurrency", "ttft_slo_ms", "tpot_slo_ms"),
    "deployment": ("slug", "replicas", "tp", "pp", "dp", "ep", "engine", "kv_cache_dtype", "max_model_len",
                   "gpu_memory_utilization"),
}  # fmt: skip


def _figures(kind: str, record: Any) -> dict[str, Any] | None:
    """A JSON-ready copy of a record's figures (None when there is no record)."""
    return None if record is None else _plain({name: getattr(record, name) for name in SNAPSHOT_FIELDS[kind]})


def _plain(value: Any) -> Any:
    """JSON-ready copy: Decimals as strings, dates as ISO strings, records as slugs."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "slug"):
        return value.slug
    return value


def run_breakeven(data: dict[str, Any]) -> Breakeven:
    """Resolve prices and volumes from validated request data and call ``costs.breakeven``."""
    on = data.get("on") or timezone.now().date()
    quotes_used: list[dict[str, Any]] = []
    if "usd_per_gpu_hour" in data:
        rate = data["usd_per_gpu_hour"]
    else:
        quote = _quote_in_force(data["sku"], on, data["pricing_kind"])
        rate = quote.usd_per_gpu_hour
        quotes_used.append(quote.to_dict())
    api: ApiPrice | None = data.get("api_price")
    prices = {name: getattr(api, name) if api else data[name] for name in PRICE_FIELDS}
    workload: Workload | None = data.get("workload")
    days = data["days_per_month"]
    monthly_input = data.get("monthly_input_tokens")
    monthly_output = data.get("monthly_output_tokens")
    if workload is not None:
        monthly_input = (
            workload.requests_per_day * workload.mean_prompt_tokens * days if monthly_input is None else monthly_input
        )
        monthly_output = (
            workload.requests_per_day * workload.mean_output_tokens * days if monthly_output is None else monthly_output
        )
    hit_rate = data.get("cache_hit_rate", workload.prefix_cache_hit_rate if workload else 0)
    model: ModelSpec | None = data.get("model")
    weights = data.get("weights_bytes")
    if (
        weights is None
        and model is not None
        and (data.get("download_gbytes_per_s") or data.get("storage_usd_per_gb_month"))
    ):
        weights = weights_bytes(model.to_engine())
    capacity = data.get("capacity_output_tokens_per_month")
    tokens_per_s = None
    deployment: Deployment | None = data.get("deployment")
    throughput_note = None
    layout = Layout(**{k: data.get(k) or 1 for k in ("tp", "pp", "dp", "ep")}) if data.get("tp") else None
    if capacity is None and deployment is None and layout is not None and model is not None and data.get("sku"):
        # A layout that is not registered yet: the throughput model on the given model and SKU.
        if data["gpus"] % layout.gpus:
            raise EngineInputError.single(
                "tp", f"{data['gpus']} GPUs are not whole replicas of tp x pp x dp = {layout.gpus}."
            )
        replicas = data["gpus"] // layout.gpus
        shape = {"prompt_tokens": workload.mean_prompt_tokens, "output_tokens": workload.mean_output_tokens,
                 "prefix_cache_hit_rate": workload.prefix_cache_hit_rate, "ttft_slo_ms": workload.ttft_slo_ms,
                 "tpot_slo_ms": workload.tpot_slo_ms} if workload else {}  # fmt: skip
        speed = estimate(model.to_engine(), data["sku"].to_engine(), layout, **shape)
        tokens_per_s = speed.tokens_per_s_replica * replicas
        throughput_note = (
            f"Capacity from the throughput model: {tokens_per_s:,.0f} output tokens/s for {replicas} replica(s) of "
            f"tp {layout.tp} x pp {layout.pp} x dp {layout.dp} (TPOT {speed.tpot_s * 1000:.1f} ms)."
        )
    if capacity is None and deployment is not None:
        # The throughput model's output rate of the whole deployment at its SLO-limited concurrency,
        # for the deployment's own workload (or this comparison's).
        if workload is not None and deployment.workload_id is None:
            deployment.workload = workload
        speed = deployment.throughput()
        tokens_per_s = speed.tokens_per_s_replica * deployment.replicas
        throughput_note = (
            f"Capacity from the throughput model: {tokens_per_s:,.0f} output tokens/s for {deployment.slug} "
            f"({deployment.replicas} replica(s), TPOT {speed.tpot_s * 1000:.1f} ms at {speed.concurrency_limit} "
            "concurrent sequences per replica)."
        )
    result = breakeven(
        gpus=data["gpus"],
        usd_per_gpu_hour=rate,
        hours_per_day=data["hours_per_day"],
        days_per_month=days,
        monthly_input_tokens=monthly_input,
        monthly_output_tokens=monthly_output,
        cache_hit_rate=hit_rate,
        capacity_output_tokens_per_month=capacity,
        output_tokens_per_s=tokens_per_s,
        utilisation=data.get("utilisation"),
        weights_bytes=weights if data.get("download_gbytes_per_s") else None,
        download_gbytes_per_s=data.get("download_gbytes_per_s") if weights is not None else None,
        **prices,
    )
    api_price = {
        "slug": api.slug if api else None,
        "provider": api.provider if api else "inline",
        "model_name": api.model_name if api else None,
        "quoted_on": api.quoted_on.isoformat() if api else None,
        **{name: str(prices[name]) for name in PRICE_FIELDS},
    }
    snapshot = {
        "computed_on": on.isoformat(),
        "request": _plain({k: v for k, v in data.items()}),
        "usd_per_gpu_hour": str(rate),
        "quotes_used": quotes_used,
        "api_price": api_price,
        "monthly_input_tokens": monthly_input,
        "monthly_output_tokens": monthly_output,
        "cache_hit_rate": hit_rate,
        "workload": _figures("workload", workload),
        "model": _figures("model", model),
        "sku": _figures("sku", data.get("sku")),
        "deployment": _figures("deployment", deployment),
    }
    figures = result.to_dict()
    if throughput_note:
        figures["assumptions"].append(throughput_note)
    figures["unit_economics"] = None
    if tokens_per_s:
        # Cost per million output tokens, tokens/s per USD-hour and idle cost of the throughput above.
        figures["unit_economics"] = unit_economics(
            data["gpus"], rate, tokens_per_s, utilisation=data.get("utilisation") or 1,
            hours_per_day=data["hours_per_day"], days_per_month=days,
        ).to_dict()  # fmt: skip
    figures["storage_usd_per_month"] = None
    if data.get("storage_usd_per_gb_month") is not None and weights is not None:
        storage = weights_storage(weights, data["storage_usd_per_gb_month"])
        figures["storage_usd_per_month"] = storage.to_dict()["usd"]
        figures["assumptions"].extend(storage.assumptions)
    return Breakeven(figures=figures, snapshot=snapshot)
