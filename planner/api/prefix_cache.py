"""``POST /api/v1/prefix-cache/``: prefix-cache granularity, checkpoint memory and trace reuse.

JSON, or multipart with the request trace as a CSV file (``trace``). The serializer only types the
body; the service (``planner.prefix_cache``) resolves the records, reads the trace and calls the
engine; its domain errors become 400s with field names (a bad CSV row names its row and column).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api import parsers
from fleet.api.fields import SlugReference
from fleet.api.permissions import require
from fleet.limits import MAX_BLOCK_TOKENS, MAX_DEGREE, MAX_GIB_PER_GPU, MAX_TOKENS
from planner.engine import (
    CACHE_MODES,
    DEFAULT_ENGINE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    DEFAULT_STATE_POOL_RATIO,
    KV_CACHE_DTYPES,
    MAX_TRACE_BYTES,
    MAX_TRACE_ROWS,
    NEWEST_SGLANG,
    NEWEST_VLLM,
    RETENTIONS,
    TRACE_COLUMNS,
    WEIGHT_FORMATS,
    Names,
    prefix_cache_engines,
)
from planner.prefix_cache import PrefixCacheRequest, analyse, trace_text

ALL_MODES = tuple(dict.fromkeys(m for modes in CACHE_MODES.values() for m in modes))
#: Concurrency the engine accepts (``planner/engine/limits.py`` ``MAX_BATCH``).
MAX_CONCURRENCY = 1_000_000


class PrefixCacheRequestSerializer(serializers.Serializer):
    """``POST /api/v1/prefix-cache/`` body (defaults are ``PrefixCacheRequest``'s)."""

    model = SlugReference(help_text="Model slug, e.g. qwen3-next-80b-a3b.")
    sku = SlugReference(help_text="SKU slug, e.g. h200-141gb.")
    engine = serializers.ChoiceField(
        choices=Names(prefix_cache_engines), required=False, help_text=f"Default {DEFAULT_ENGINE}."
    )
    engine_version = serializers.CharField(
        required=False,
        max_length=20,
        help_text=f"Release whose rules apply (default the newest read: vLLM {NEWEST_VLLM}, SGLang {NEWEST_SGLANG}).",
    )
    cache_mode = serializers.ChoiceField(
        choices=ALL_MODES,
        required=False,
        help_text="vLLM mamba_cache_mode none/align/all (all: 0.15-0.32, Mamba-family models); SGLang none (radix "
        "cache off)/no_buffer/extra_buffer. Default: what the engine picks with prefix caching on.",
    )
    retention = serializers.ChoiceField(
        choices=RETENTIONS,
        required=False,
        help_text="vLLM 0.29+ prefix_cache_retention_interval, mode align: semantic (0, default), interval (k), "
        "dense (None).",
    )
    checkpoint_interval_tokens = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_TOKENS,
        help_text="With retention interval: k, a multiple of the block.",
    )
    tp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    pp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    dp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    ep = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    kv_cache_dtype = serializers.ChoiceField(
        choices=KV_CACHE_DTYPES, required=False, help_text=f"Default {DEFAULT_KV_CACHE_DTYPE}."
    )
    weight_format = serializers.ChoiceField(choices=WEIGHT_FORMATS, required=False, help_text="Override.")
    context_tokens = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_TOKENS,
        help_text="Where checkpoint memory and concurrency are quoted (default 32,768, at most the model's maximum).",
    )
    gpu_memory_utilization = serializers.FloatField(
        required=False, min_value=0.01, max_value=1.0, help_text=f"Default {DEFAULT_GPU_MEMORY_UTILIZATION:g}."
    )
    runtime_reserve_gib = serializers.FloatField(
        required=False, min_value=0, max_value=MAX_GIB_PER_GPU, help_text="Override, GiB per GPU."
    )
    available_kv_cache_gib = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=MAX_GIB_PER_GPU,
        help_text="KV cache memory per GPU as the engine logs it (GiB); replaces the computed budget.",
    )
    block_size_tokens = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_BLOCK_TOKENS,
        help_text="--block-size / --page-size (default: the engine's).",
    )
    concurrency = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_CONCURRENCY,
        help_text="Running requests SGLang's mamba_full_memory_ratio is fitted to.",
    )
    state_pool_ratio = serializers.FloatField(
        required=False,
        min_value=0.001,
        max_value=1000,
        help_text=f"SGLang mamba_full_memory_ratio (default {DEFAULT_STATE_POOL_RATIO:g}).",
    )
    mamba_chunk_size_tokens = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_BLOCK_TOKENS,
        help_text="The model's SSD/FLA chunk (default: vLLM 256 for 'all', SGLang 64).",
    )
    granularities = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_TOKENS),
        required=False,
        min_length=1,
        max_length=16,
        help_text="Block sizes (tokens) to replay the trace at; the engine's own is always added.",
    )
    trace = serializers.FileField(
        required=False,
        help_text=f"Multipart only: a CSV of requests, header {','.join(TRACE_COLUMNS)} (at most "
        f"{MAX_TRACE_ROWS:,} rows, {MAX_TRACE_BYTES // (1024 * 1024)} MiB).",
    )

    def to_request(self) -> PrefixCacheRequest:
        data = dict(self.validated_data)
        upload = data.pop("trace", None)
        if upload is not None:
            data["trace_csv"] = trace_text(upload.read(MAX_TRACE_BYTES + 1))
        if "granularities" in data:
            data["granularities"] = tuple(data["granularities"])
        return PrefixCacheRequest(**data)


class CheckpointSerializer(serializers.Serializer):
    mode = serializers.CharField()
    retention = serializers.CharField()
    checkpoint_interval_tokens = serializers.IntegerField()
    attention_block_size_tokens = serializers.IntegerField()
    hit_granularity_tokens = serializers.IntegerField(help_text="Hits land on multiples of this (0: none).")
    running_state_copies = serializers.IntegerField(help_text="State copies a running request holds beyond its own.")
    retained_checkpoints_per_sequence = serializers.IntegerField()
    checkpoint_bytes_per_sequence_per_gpu = serializers.IntegerField()
    sequences_per_replica = serializers.IntegerField(help_text="At context_tokens, checkpoints kept resident.")
    sequences_reserved_per_replica = serializers.IntegerField(help_text="With the running copies only.")
    sequences_lost = serializers.IntegerField(help_text="Against mode none.")
    sequences_lost_reserved = serializers.IntegerField()


class CopyOnWriteSerializer(serializers.Serializer):
    bytes_per_hit_per_gpu = serializers.IntegerField()
    hbm_traffic_bytes_per_hit = serializers.IntegerField(help_text="Read and written: 2 x bytes.")
    hbm_bandwidth_tbps = serializers.FloatField()
    seconds_per_hit = serializers.FloatField(allow_null=True)


class RatioSerializer(serializers.Serializer):
    current_ratio = serializers.FloatField()
    best_ratio = serializers.FloatField()
    context_tokens = serializers.IntegerField()
    concurrency = serializers.IntegerField(allow_null=True)
    state_bytes_per_request = serializers.IntegerField()
    kv_bytes_per_request = serializers.IntegerField()
    sequences_at_current = serializers.IntegerField()
    sequences_at_best = serializers.IntegerField()
    feasible_ratio_range = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    fits = serializers.BooleanField(allow_null=True)
    reasoning = serializers.ListField(child=serializers.CharField())


class GranularitySerializer(serializers.Serializer):
    granularity_tokens = serializers.IntegerField()
    reused_tokens = serializers.IntegerField()
    reusable_token_fraction = serializers.FloatField()
    fraction_of_ideal = serializers.FloatField(allow_null=True)
    hits = serializers.IntegerField()
    checkpoints_retained = serializers.IntegerField()
    checkpoint_bytes_per_gpu = serializers.IntegerField()
    checkpoint_bytes_per_sequence_per_gpu = serializers.IntegerField()
    padding_fraction = serializers.FloatField(allow_null=True, help_text="vLLM state-page padding at this block.")
    prefill_s_saved = serializers.FloatField()
    engine_choice = serializers.BooleanField()


class TraceSummarySerializer(serializers.Serializer):
    requests = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    ideal_reused_tokens = serializers.IntegerField()
    ideal_reusable_token_fraction = serializers.FloatField(allow_null=True)
    ideal_prefill_s_saved = serializers.FloatField()
    cold_prefill_s = serializers.FloatField()


class PrefixCacheResponseSerializer(serializers.Serializer):
    """The documented response (bytes are integers, per GPU; tokens; seconds)."""

    model = serializers.CharField()
    accelerator = serializers.CharField()
    layout = serializers.DictField(child=serializers.IntegerField())
    engine = serializers.CharField()
    engine_version = serializers.CharField()
    cache_mode = serializers.CharField()
    retention = serializers.CharField()
    checkpoint_interval_tokens = serializers.IntegerField()
    context_tokens = serializers.IntegerField()
    attention_block_size_tokens = serializers.IntegerField()
    hit_granularity_tokens = serializers.IntegerField()
    state_page_bytes = serializers.IntegerField(allow_null=True, help_text="One linear layer's state, unpadded.")
    padded_state_page_bytes = serializers.IntegerField(allow_null=True)
    padding_fraction = serializers.FloatField()
    state_bytes_per_sequence_per_gpu = serializers.IntegerField()
    checkpoint_state_bytes_per_gpu = serializers.IntegerField(help_text="One checkpoint of one sequence.")
    checkpoint_bytes = serializers.IntegerField(help_text="The chosen mode's state copies per sequence per GPU.")
    checkpoint = CheckpointSerializer()
    modes = CheckpointSerializer(many=True)
    copy_on_write = CopyOnWriteSerializer(allow_null=True)
    state_pool_ratio = RatioSerializer(allow_null=True)
    reusable_token_fraction = serializers.DictField(child=serializers.FloatField())
    granularities = GranularitySerializer(many=True)
    trace = TraceSummarySerializer()
    assumptions = serializers.ListField(child=serializers.CharField())


class PrefixCacheView(APIView):
    """Prefix-cache granularity of a model under an engine release. A computation (POST for its body
    and trace): whoever may read models and SKUs may run it."""

    permission_classes = [IsAuthenticated, require("fleet.view_modelspec", "fleet.view_hardwaresku")]
    parser_classes = [parsers.JSONParser, parsers.MultiPartParser]
    #: A request with a trace counts against the user's prefix-cache limit (fleet.rate_limits; with the page's).
    throttle_scope = "prefix_cache"

    def limited(self, request: Request) -> bool:
        return "trace" in request.FILES

    @extend_schema(
        request={
            "application/json": PrefixCacheRequestSerializer,
            "multipart/form-data": PrefixCacheRequestSerializer,
        },
        responses={200: PrefixCacheResponseSerializer},
    )
    def post(self, request: Request) -> Response:
        serializer = PrefixCacheRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(analyse(serializer.to_request()).result.to_dict())
