"""Serializers for model specs and workloads."""

from rest_framework import serializers

from fleet.api.cleaning import ModelCleanMixin
from planner.models import ModelSpec, Workload

TIMESTAMPS = ("created", "updated")


class ModelSpecSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:modelspec-detail", lookup_field="slug")
    is_moe = serializers.BooleanField(read_only=True)

    class Meta:
        model = ModelSpec
        fields = (
            "url", "slug", "name", "total_params", "active_params", "expert_params", "n_routed_experts",
            "n_active_experts", "n_shared_experts", "is_moe", "hidden_size", "vocab_size", "max_context_tokens",
            "attention_heads", "weight_format", "expert_weight_format", "layer_groups", "source", "assumptions",
            *TIMESTAMPS,
        )  # fmt: skip


class WorkloadSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:workload-detail", lookup_field="slug")

    class Meta:
        model = Workload
        fields = (
            "url", "slug", "name", "team", "requests_per_day", "mean_prompt_tokens", "mean_output_tokens",
            "p95_context_tokens", "prefix_cache_hit_rate", "peak_concurrency", "ttft_slo_ms", "tpot_slo_ms",
            *TIMESTAMPS,
        )  # fmt: skip
