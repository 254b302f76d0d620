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

from fleet.api.fields import SlugReference
from fleet.api.permissions import require
from fleet.limits import MAX_BLOCK_TOKENS, MAX_DEGREE, MAX_GIB_PER_GPU, MAX_GPUS, MAX_TOKENS
from planner.engine import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    DEFAULT_STATE_POOL_RATIO,
    GENERIC,
    KV_CACHE_DTYPES,
    NEWEST_SGLANG,
    NEWEST_VLLM,
    WEIGHT_FORMATS,
    Names,
    profile_names,
)
from planner.sizing import POOLS, SizingRequest, size_layout

#: The profiles ``engine`` takes, read from the serving-engine registry when a serializer is made.
PROFILES = Names(profile_names)


class SizingRequestSerializer(serializers.Serializer):
    """``POST /api/v1/sizing/`` request body (defaults are ``SizingRequest``'s)."""

    model = SlugReference(required=False, help_text="Model slug, e.g. kimi-k3 (default: the deployment's).")
    sku = SlugReference(required=False, help_text="SKU slug, e.g. h200-141gb (default: the deployment's).")
    deployment = SlugReference(
        required=False,
        help_text="Deployment slug: its model, SKU, layout, KV dtype, max_model_len, utilisation, engine, "
        "release and block size are the defaults of every field left out.",
    )
    gpus = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_GPUS, help_text="Default: one replica of the layout."
    )
    tp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default: tp = gpus.")
    pp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE)
    dp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE)
    ep = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE)
    etp = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_DEGREE,
        help_text="Expert tensor parallel size: ep x etp = tp x dp (default tp x dp / ep).",
    )
    redundant_experts = serializers.IntegerField(
        required=False, min_value=0, max_value=1 << 16, help_text="EPLB redundant expert slots (memory per GPU)."
    )
    weight_format = serializers.ChoiceField(
        choices=WEIGHT_FORMATS, required=False, help_text="Override: one format for every component."
    )
    include_scale_overhead = serializers.BooleanField(required=False)
    kv_cache_dtype = serializers.ChoiceField(
        choices=KV_CACHE_DTYPES, required=False, help_text=f"Default {DEFAULT_KV_CACHE_DTYPE}."
    )
    context_tokens = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_TOKENS, help_text="Default: the model's maximum."
    )
    gpu_memory_utilization = serializers.FloatField(
        required=False, min_value=0.01, max_value=1.0, help_text=f"Default {DEFAULT_GPU_MEMORY_UTILIZATION:g}."
    )
    runtime_reserve_gib = serializers.FloatField(
        required=False, min_value=0, max_value=MAX_GIB_PER_GPU, help_text="Override, GiB per GPU."
    )
    pool = serializers.ChoiceField(choices=POOLS, required=False, help_text="Default unified.")
    state_pool_ratio = serializers.FloatField(
        required=False,
        min_value=0.001,
        max_value=1000,
        help_text=f"Split pool: state budget = rest x r / (1 + r). Default {DEFAULT_STATE_POOL_RATIO:g}.",
    )
    engine = serializers.ChoiceField(
        choices=PROFILES,
        required=False,
        help_text=f"Whose allocator to reproduce: {GENERIC} (default, or the deployment's engine), "
        f"{', '.join(profile_names()[1:])}.",
    )
    engine_version = serializers.CharField(
        required=False,
        max_length=20,
        help_text=f"The engine release whose formulas apply (default: the newest, vLLM {NEWEST_VLLM}, SGLang "
        f"{NEWEST_SGLANG}).",
    )
    max_model_len = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_TOKENS,
        help_text="Tokens the engine's concurrency is quoted at (default: the model's maximum).",
    )
    block_size_tokens = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_BLOCK_TOKENS,
        help_text="--block-size / --page-size (default: the engine's).",
    )
    available_kv_cache_gib = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=MAX_GIB_PER_GPU,
        help_text="KV cache memory per GPU as the engine logs it (GiB); replaces the computed cache budget.",
    )
    prefix_caching = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="vLLM's --enable-prefix-caching: hybrid models then keep one more state block per request "
        "(mamba 'align' mode). Default (null): the release's default, on for hybrids from vLLM 0.28.0.",
    )

    def to_request(self) -> SizingRequest:
        return SizingRequest(**self.validated_data)


class PerGpuSerializer(serializers.Serializer):
    hbm_bytes = serializers.IntegerField(help_text="Nominal (decimal GB x 1e9).")
    hbm_bytes_reported = serializers.IntegerField(
        allow_null=True, help_text="What the driver reports to the engine; usable memory is this x utilisation."
    )
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
    engine = serializers.ChoiceField(choices=PROFILES)
    engine_version = serializers.CharField(allow_null=True)
    max_model_len = serializers.IntegerField()
    available_kv_cache_bytes = serializers.IntegerField(help_text="KV cache memory per GPU the engine allocates from.")
    engine_block_size_tokens = serializers.IntegerField(allow_null=True, help_text="Attention block size (tokens).")
    engine_num_blocks = serializers.IntegerField(allow_null=True, help_text="Blocks per GPU (vLLM num_gpu_blocks).")
    engine_kv_cache_tokens = serializers.IntegerField(
        allow_null=True, help_text="As the engine logs it: vLLM 'GPU KV cache size', SGLang max_total_num_tokens."
    )
    engine_max_concurrency = serializers.FloatField(
        allow_null=True, help_text="Requests of max_model_len tokens at once, per data-parallel rank (float)."
    )
    state_page_bytes = serializers.IntegerField(allow_null=True, help_text="One linear layer's state, unpadded.")
    page_padding_fraction = serializers.FloatField(allow_null=True, help_text="State page padding (0.0149 = 1.49%).")
    kv_cache_groups = serializers.ListField(child=serializers.DictField())
    engine_state_slots = serializers.IntegerField(allow_null=True, help_text="SGLang: state slots of the mamba pool.")
    engine_state_dtype = serializers.CharField(allow_null=True)
    engine_conv_dtype = serializers.CharField(allow_null=True)


class SizingView(APIView):
    """Size a model on a cluster of one SKU. A computation (POST for its body): whoever may read
    models and SKUs may size them."""

    permission_classes = [IsAuthenticated, require("fleet.view_modelspec", "fleet.view_hardwaresku")]

    @extend_schema(request=SizingRequestSerializer, responses={200: SizingResponseSerializer})
    def post(self, request: Request) -> Response:
        serializer = SizingRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(size_layout(serializer.to_request()).result.to_dict())
