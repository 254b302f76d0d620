"""``POST /api/v1/estimate/``: TPOT, TTFT, tokens/s and the decode step's breakdown of one layout at
one load, with the band the efficiency factors put around it.

The serializer only types the body; the estimate service (``planner.estimates``) resolves the
records and validates the combination, and its domain errors become 400s with field names
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
from fleet.limits import MAX_DEGREE, MAX_PRICE_USD, MAX_TOKENS
from planner.engine import KV_CACHE_DTYPES, WEIGHT_FORMATS
from planner.estimates import EstimateRequest, estimate_layout

#: Upper bounds that keep a hostile body from asking for hours of arithmetic (far beyond any model).
MAX_BATCH = 1 << 20


class EstimateRequestSerializer(serializers.Serializer):
    """``POST /api/v1/estimate/`` request body (defaults are ``EstimateRequest``'s)."""

    model = SlugReference(required=False, help_text="Model slug, e.g. kimi-k3 (default: the deployment's).")
    sku = SlugReference(required=False, help_text="SKU slug, e.g. h200-141gb (default: the deployment's).")
    deployment = SlugReference(
        required=False,
        help_text="Deployment slug: its model, SKU, layout, KV dtype, memory utilisation and its workload's mean "
        "prompt and output tokens are the defaults of every field left out.",
    )
    tp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    pp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    dp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    ep = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE, help_text="Default 1.")
    etp = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_DEGREE,
        help_text="Expert tensor parallel size: ep x etp = tp x dp (default tp x dp / ep).",
    )
    redundant_experts = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=1 << 16,
        help_text="EPLB redundant expert slots, so an ep that does not divide the experts places E + r evenly.",
    )
    batch = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_BATCH,
        help_text="Concurrent sequences per replica (default: what memory admits at context_tokens).",
    )
    context_tokens = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_TOKENS,
        help_text="Memory admission context (default prompt + output).",
    )
    prompt_tokens = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_TOKENS, help_text="Default 2,048 (or the deployment's workload)."
    )
    output_tokens = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_TOKENS, help_text="Default 256 (or the deployment's workload)."
    )
    kv_cache_dtype = serializers.ChoiceField(choices=KV_CACHE_DTYPES, required=False, help_text="Default bf16.")
    weight_format = serializers.ChoiceField(
        choices=WEIGHT_FORMATS,
        required=False,
        help_text="Alone: one format for every component. With expert_weight_format: the non-expert weights.",
    )
    expert_weight_format = serializers.ChoiceField(
        choices=WEIGHT_FORMATS, required=False, help_text="The routed experts' format (default the model's own)."
    )
    usd_per_gpu_hour = serializers.DecimalField(
        required=False,
        max_digits=12,
        decimal_places=4,
        min_value=0,
        max_value=MAX_PRICE_USD,
        help_text="Adds usd_per_mtok and its band (default: no money).",
    )

    def to_request(self) -> EstimateRequest:
        return EstimateRequest(**self.validated_data)


class BreakdownSerializer(serializers.Serializer):
    memory_ms = serializers.FloatField(help_text="HBM reads and writes of one decode step.")
    compute_ms = serializers.FloatField(help_text="Tensor-core time of one decode step.")
    communication_ms = serializers.FloatField(help_text="Collectives (all-reduce, all-to-all) and pipeline hops.")
    overhead_ms = serializers.FloatField(help_text="Kernel launches + step overhead (scheduler, sampling).")
    overlap_saved_ms = serializers.FloatField(help_text="Communication hidden behind compute (two-batch overlap).")
    step_ms = serializers.FloatField(help_text="The step: memory and compute overlap per stage, the rest adds.")


class BandSerializer(serializers.Serializer):
    low = serializers.FloatField(allow_null=True)
    central = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class FactorSerializer(serializers.Serializer):
    name = serializers.CharField()
    central = serializers.FloatField()
    low_value = serializers.FloatField()
    high_value = serializers.FloatField()
    tpot_at_low_ms = serializers.FloatField()
    tpot_at_high_ms = serializers.FloatField()
    elasticity_tpot = serializers.FloatField(allow_null=True, help_text="d ln TPOT / d ln factor.")
    elasticity_ttft = serializers.FloatField(allow_null=True, help_text="d ln TTFT / d ln factor.")


class SensitivitySerializer(serializers.Serializer):
    spread = serializers.FloatField(help_text="Each factor moved x(1 - spread) and x(1 + spread).")
    tpot_ms = BandSerializer()
    ttft_ms = BandSerializer()
    tokens_per_s_per_gpu = BandSerializer()
    usd_per_mtok = BandSerializer(allow_null=True)
    factors = FactorSerializer(many=True)
    most_influential = serializers.CharField(allow_null=True, help_text="Largest |elasticity of TPOT|.")
    runs = serializers.IntegerField()
    assumptions = serializers.ListField(child=serializers.CharField())


class CalibratedSerializer(serializers.Serializer):
    factor_decode = serializers.FloatField()
    factor_prefill = serializers.FloatField()
    samples = serializers.IntegerField()
    age_s = serializers.FloatField()
    residual = serializers.FloatField()


class TtftDefinitionSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="Stable code of the definition: mean_under_load (ttft_ms) or idle_single_request (idle_ttft_ms)."
    )
    text = serializers.CharField(help_text="The definition in one sentence.")


class TtftPartsSerializer(serializers.Serializer):
    """What ttft_ms adds; the four sum to ttft_ms (docs/throughput.md, "What TTFT means here")."""

    queue_ms = serializers.FloatField(
        allow_null=True,
        help_text="M/M/1 wait on the replica's prefill work at the arrival rate the batch implies "
        "(rho / (1 - rho) x prefill busy time per request). Null when the prefill queue never drains.",
    )
    decode_sharing_ms = serializers.FloatField(
        help_text="Chunked prefill sharing the batch with decode: one decode step of the running batch per "
        "prefill chunk (aggregated serving).",
    )
    prefill_ms = serializers.FloatField(help_text="The prompt's own chunked prefill (prefill time of one prompt).")
    kv_transfer_ms = serializers.FloatField(
        help_text="KV transfer to the decode pool not hidden behind the prefill (disaggregated serving; 0 here: "
        "this estimate is aggregated).",
    )


class EstimateResponseSerializer(serializers.Serializer):
    """The documented response (times in ms, one replica)."""

    model = serializers.CharField()
    sku = serializers.CharField()
    deployment = serializers.CharField(allow_null=True)
    layout = serializers.DictField(
        child=serializers.IntegerField(), help_text="tp, pp, dp, ep, etp (and redundant_experts)."
    )
    gpus = serializers.IntegerField(help_text="GPUs of one replica: tp x pp x dp.")
    batch = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    context_tokens = serializers.IntegerField()
    kv_cache_dtype = serializers.CharField()
    tpot_ms = serializers.FloatField(help_text="Decode step / (1 - prefill share).")
    ttft_ms = serializers.FloatField(
        allow_null=True,
        help_text="Time to first token, definition mean_under_load: the MEAN time from a request reaching one "
        "replica serving `batch` sequences at the arrival rate they imply to its first token = queueing + decode "
        "sharing + prefill + KV transfer (ttft_parts). Not a percentile, no network or tokenisation; benchmarks "
        "(vllm bench serve, sglang.bench_serving) report per-request mean/median/p99 measured at the client. "
        "Null when the prefill queue never drains.",
    )
    ttft_definition = TtftDefinitionSerializer(help_text="What ttft_ms means: code mean_under_load and a sentence.")
    ttft_parts = TtftPartsSerializer(help_text="The terms ttft_ms adds, in ms; they sum to ttft_ms.")
    idle_ttft_ms = serializers.FloatField(
        help_text="Time to first token, definition idle_single_request: one request on an idle replica, the "
        "prompt's prefill alone (one data-parallel rank), no queue, no decode sharing, no KV transfer: what a "
        "benchmark at concurrency 1 measures, less its HTTP and tokenisation time.",
    )
    idle_ttft_definition = TtftDefinitionSerializer(help_text="What idle_ttft_ms means: code idle_single_request.")
    tokens_per_s_per_gpu = serializers.FloatField(help_text="Output tokens/s per GPU: batch / TPOT / gpus.")
    tokens_per_s_per_replica = serializers.FloatField(help_text="Output tokens/s of the replica: batch / TPOT.")
    bound = serializers.CharField(help_text="What limits the decode step (memory, compute, communication, ...).")
    breakdown = BreakdownSerializer()
    prefill_share = serializers.FloatField()
    memory_limit = serializers.IntegerField(help_text="Sequences per replica memory admits at context_tokens.")
    fits = serializers.BooleanField(help_text="batch <= memory_limit (the times are computed either way).")
    usd_per_gpu_hour = serializers.CharField(allow_null=True)
    usd_per_mtok = serializers.FloatField(allow_null=True)
    calibrated = CalibratedSerializer(allow_null=True, help_text="The live correction used; null: none.")
    sensitivity = SensitivitySerializer()
    assumptions = serializers.ListField(child=serializers.CharField())


class EstimateView(APIView):
    """Estimate one layout's speed. A computation (POST for its body): whoever may read models and
    SKUs may estimate them."""

    permission_classes = [IsAuthenticated, require("fleet.view_modelspec", "fleet.view_hardwaresku")]

    @extend_schema(request=EstimateRequestSerializer, responses={200: EstimateResponseSerializer})
    def post(self, request: Request) -> Response:
        serializer = EstimateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(estimate_layout(serializer.to_request()).to_dict())
