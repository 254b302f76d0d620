"""Sizing requests: validate the API/CLI input once, resolve the records, call the engine.

The REST endpoint (``POST /api/v1/sizing/``) and ``manage.py size`` both go through
``SizingRequestSerializer`` and ``run_sizing``, so a person at a shell gets the same answer
and the same errors as a tool over HTTP.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from fleet.models import HardwareSku, ModelSpec
from planner.engine import CACHE_DTYPES, WEIGHT_FORMATS, Layout, SizingResult, ThroughputResult, estimate, size

LAYOUT_FIELDS = ("tp", "pp", "dp", "ep")


class SizingRequestSerializer(serializers.Serializer):
    """``POST /api/v1/sizing/`` request body."""

    model = serializers.SlugRelatedField(slug_field="slug", queryset=ModelSpec.objects.all())
    sku = serializers.SlugRelatedField(slug_field="slug", queryset=HardwareSku.objects.all())
    gpus = serializers.IntegerField(required=False, min_value=1, help_text="Default: one replica of the layout.")
    tp = serializers.IntegerField(required=False, min_value=1, help_text="Default: tp = gpus.")
    pp = serializers.IntegerField(required=False, min_value=1)
    dp = serializers.IntegerField(required=False, min_value=1)
    ep = serializers.IntegerField(required=False, min_value=1)
    weight_format = serializers.ChoiceField(
        choices=WEIGHT_FORMATS, required=False, help_text="Override: one format for every component."
    )
    include_scale_overhead = serializers.BooleanField(default=True)
    kv_cache_dtype = serializers.ChoiceField(choices=[d for d in CACHE_DTYPES if d != "fp32"], default="bf16")
    context_tokens = serializers.IntegerField(required=False, min_value=1, help_text="Default: the model's maximum.")
    gpu_memory_utilization = serializers.FloatField(default=0.9, min_value=0.01, max_value=1.0)
    runtime_reserve_gib = serializers.FloatField(required=False, min_value=0, help_text="Override, GiB per GPU.")
    pool = serializers.ChoiceField(choices=["unified", "split"], default="unified")
    state_pool_ratio = serializers.FloatField(
        default=0.9, min_value=0.001, help_text="Split pool: state budget = rest x r / (1 + r)."
    )


def _layout(data: dict[str, Any]) -> Layout | None:
    if not any(data.get(name) for name in LAYOUT_FIELDS):
        return None
    layout = Layout(**{name: data.get(name) or 1 for name in LAYOUT_FIELDS})
    if not data.get("tp") and data.get("gpus"):
        # Only pp/dp/ep given: tp takes what the GPUs leave, as "tp = gpus" does by default.
        rest = layout.pp * layout.dp
        layout = Layout(tp=max(1, data["gpus"] // rest), pp=layout.pp, dp=layout.dp, ep=layout.ep)
    return layout


def run_sizing(data: dict[str, Any]) -> SizingResult:
    """Run the engine on validated request data (raises EngineInputError for bad combinations)."""
    model: ModelSpec = data["model"]
    sku: HardwareSku = data["sku"]
    return size(
        model.to_engine(),
        sku.to_engine(),
        gpus=data.get("gpus"),
        layout=_layout(data),
        weight_format=data.get("weight_format"),
        include_scale_overhead=data["include_scale_overhead"],
        kv_cache_dtype=data["kv_cache_dtype"],
        context_tokens=data.get("context_tokens"),
        gpu_memory_utilization=data["gpu_memory_utilization"],
        runtime_reserve_gib=data.get("runtime_reserve_gib"),
        pool=data["pool"],
        state_pool_ratio=data["state_pool_ratio"],
    )


class PerGpuSerializer(serializers.Serializer):
    hbm_bytes = serializers.IntegerField()
    usable_bytes = serializers.IntegerField()
    weights_bytes = serializers.IntegerField()
    runtime_bytes = serializers.IntegerField()
    cache_bytes = serializers.IntegerField()


class SizingResponseSerializer(serializers.Serializer):
    """The documented response (bytes are integers; per-GPU figures are one GPU's share)."""

    weights_bytes = serializers.IntegerField(help_text="One copy of the model.")
    weights_bytes_per_gpu = serializers.IntegerField()
    min_gpus_for_weights = serializers.IntegerField(help_text="ceil(weights / nominal HBM), decimal GB.")
    kv_bytes_per_token = serializers.IntegerField(help_text="One sequence, all layers, logical.")
    kv_bytes_per_token_per_gpu = serializers.IntegerField()
    state_bytes_per_sequence = serializers.IntegerField()
    state_bytes_per_sequence_per_gpu = serializers.IntegerField()
    kv_bytes_per_sequence = serializers.IntegerField(help_text="At context_tokens.")
    kv_bytes_per_sequence_per_gpu = serializers.IntegerField()
    per_gpu = PerGpuSerializer()
    max_concurrent_sequences = serializers.IntegerField(help_text="Whole cluster, with the chosen pool.")
    max_concurrent_sequences_unified = serializers.IntegerField()
    max_concurrent_sequences_split = serializers.IntegerField()
    max_concurrent_sequences_per_replica = serializers.IntegerField()
    stranded_bytes = serializers.IntegerField(help_text="Per GPU, split pool only.")
    fits = serializers.BooleanField()
    deficit_bytes = serializers.IntegerField(help_text="Per GPU; 0 when it fits.")
    aggregate_hbm_bytes = serializers.IntegerField()
    replicas = serializers.IntegerField()
    layout = serializers.DictField(child=serializers.IntegerField())
    weights = serializers.DictField()
    runtime = serializers.DictField()
    inputs = serializers.DictField()
    assumptions = serializers.ListField(child=serializers.CharField())


def run_speed(data: dict[str, Any], result: SizingResult, usd_per_gpu_hour: Any = None) -> ThroughputResult:
    """Speed and cost of one replica of the sized layout (2,048-token prompts, 256-token answers,
    capped at the context asked for)."""
    context = result.context_tokens
    return estimate(
        data["model"].to_engine(),
        data["sku"].to_engine(),
        result.layout,
        prompt_tokens=min(2048, max(1, context // 2)),
        output_tokens=min(256, max(1, context // 4)),
        context_tokens=context,
        usd_per_gpu_hour=usd_per_gpu_hour,
        kv_cache_dtype=data["kv_cache_dtype"],
        weight_format=data.get("weight_format"),
        include_scale_overhead=data["include_scale_overhead"],
        gpu_memory_utilization=data["gpu_memory_utilization"],
    )
