"""``POST /api/v1/sizing/``: memory envelopes and admission capacity for one layout.

The serializer only types the body; the sizing service (``planner.sizing``) resolves the records
and validates the combination, and its domain errors become 400s with field names
(``fleet.api.errors.exception_handler``).
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.permissions import require
from planner.engine import KV_CACHE_DTYPES, WEIGHT_FORMATS
from planner.sizing import POOLS, SizingRequest, size_layout


class SizingRequestSerializer(serializers.Serializer):
    """``POST /api/v1/sizing/`` request body (defaults are ``SizingRequest``'s)."""

    model = serializers.CharField(help_text="Model slug, e.g. kimi-k3.")
    sku = serializers.CharField(help_text="SKU slug, e.g. h200-141gb.")
    gpus = serializers.IntegerField(required=False, min_value=1, help_text="Default: one replica of the layout.")
    tp = serializers.IntegerField(required=False, min_value=1, help_text="Default: tp = gpus.")
    pp = serializers.IntegerField(required=False, min_value=1)
    dp = serializers.IntegerField(required=False, min_value=1)
    ep = serializers.IntegerField(required=False, min_value=1)
    weight_format = serializers.ChoiceField(
        choices=WEIGHT_FORMATS, required=False, help_text="Override: one format for every component."
    )
    include_scale_overhead = serializers.BooleanField(required=False)
    kv_cache_dtype = serializers.ChoiceField(choices=KV_CACHE_DTYPES, required=False, help_text="Default bf16.")
    context_tokens = serializers.IntegerField(required=False, min_value=1, help_text="Default: the model's maximum.")
    gpu_memory_utilization = serializers.FloatField(
        required=False, min_value=0.01, max_value=1.0, help_text="Default 0.9."
    )
    runtime_reserve_gib = serializers.FloatField(required=False, min_value=0, help_text="Override, GiB per GPU.")
    pool = serializers.ChoiceField(choices=POOLS, required=False, help_text="Default unified.")
    state_pool_ratio = serializers.FloatField(
        required=False, min_value=0.001, help_text="Split pool: state budget = rest x r / (1 + r). Default 0.9."
    )

    def to_request(self) -> SizingRequest:
        return SizingRequest(**self.validated_data)


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


class SizingView(APIView):
    """Size a model on a cluster of one SKU. A computation (POST for its body): whoever may read
    models and SKUs may size them."""

    permission_classes = [IsAuthenticated, require("fleet.view_modelspec", "fleet.view_hardwaresku")]

    @extend_schema(request=SizingRequestSerializer, responses={200: SizingResponseSerializer})
    def post(self, request: Request) -> Response:
        serializer = SizingRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(size_layout(serializer.to_request()).result.to_dict())
