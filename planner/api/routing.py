"""``POST /api/v1/route/``: rank every destination for a request class; ``GET /api/v1/route/litellm/``:
the fleet as a LiteLLM router ``model_list``.

The serializer only types the body; the routing service (``planner.routing``) reads the fleet and the
engine (``planner.engine.rank``) ranks it; domain errors become 400s with field names
(``fleet.api.errors.exception_handler``). Reading access, like sizing: whoever may read deployments
and API prices may ask where a request would go.
"""

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.permissions import require
from fleet.limits import MAX_SLO_MS, MAX_TOKENS
from planner.engine import KINDS, MODALITIES, RequestClass
from planner.routing import litellm_model_list, route

READ = require("fleet.view_deployment", "fleet.view_apiprice")


class RouteRequestSerializer(serializers.Serializer):
    """``POST /api/v1/route/`` request body: one request class."""

    context_tokens = serializers.IntegerField(
        min_value=1, max_value=MAX_TOKENS, help_text="Longest sequence the class needs (tokens, >= prompt + output)."
    )
    prompt_tokens = serializers.IntegerField(min_value=1, max_value=MAX_TOKENS, help_text="Prompt tokens.")
    output_tokens = serializers.IntegerField(min_value=1, max_value=MAX_TOKENS, help_text="Output tokens.")
    prefix_reuse_fraction = serializers.FloatField(
        required=False,
        default=0.0,
        min_value=0.0,
        max_value=1.0,
        help_text="Share of the prompt that repeats a prefix already sent (0-1, default 0: cold).",
    )
    ttft_slo_ms = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0.001,
        max_value=MAX_SLO_MS,
        help_text="Time to first token the contract allows (ms); omitted: no TTFT contract.",
    )
    tpot_slo_ms = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0.001,
        max_value=MAX_SLO_MS,
        help_text="Time per output token the contract allows (ms); omitted: no TPOT contract.",
    )
    model = serializers.CharField(
        required=False, allow_null=True, max_length=100, help_text="Model slug; omitted: any model."
    )
    modality = serializers.ChoiceField(
        choices=MODALITIES, required=False, allow_null=True, help_text="Input modality (default text)."
    )

    def to_request(self) -> RequestClass:
        return RequestClass(**self.validated_data)


class DestinationSerializer(serializers.Serializer):
    rank = serializers.IntegerField(help_text="1 = best.")
    # A string, not an enum: spend lines have a "kind" of their own, and two enums of one field name
    # collide in the schema's component names.
    kind = serializers.CharField(help_text=f"One of {', '.join(KINDS)}.")
    slug = serializers.CharField(help_text="The deployment's or the API price's slug.")
    model = serializers.CharField(allow_null=True, help_text="Model slug it serves (null: an API price not linked).")
    eligible = serializers.BooleanField()
    meets_slo = serializers.BooleanField(allow_null=True, help_text="Null: latency not known (hosted APIs).")
    reasons = serializers.ListField(
        child=serializers.CharField(), help_text="Why it is ineligible, or why it ranks where it does."
    )
    cache_state = serializers.ChoiceField(choices=["warm", "cold"])
    reusable_prefix_tokens = serializers.IntegerField(help_text="floor(prefix / block) x block.")
    granularity_tokens = serializers.IntegerField(
        allow_null=True, help_text="Prefix-cache block (tokens): the engine profile's block size, an API's cache unit."
    )
    headroom_sequences = serializers.IntegerField(allow_null=True, help_text="Sequences it can still admit.")
    ttft_ms = serializers.FloatField(allow_null=True)
    tpot_ms = serializers.FloatField(allow_null=True)
    usd_per_request = serializers.FloatField(allow_null=True, help_text="One request of this class (USD).")
    calibrated = serializers.BooleanField(help_text="A live speed correction was applied.")


class RouteResponseSerializer(serializers.Serializer):
    best = serializers.CharField(allow_null=True, help_text="Slug of the first destination when it is eligible.")
    destinations = DestinationSerializer(many=True, help_text="Best first.")
    assumptions = serializers.ListField(child=serializers.CharField())
    at = serializers.DateTimeField(help_text="When the fleet was read.")


EXAMPLE = {
    "context_tokens": 8192,
    "prompt_tokens": 4000,
    "output_tokens": 300,
    "prefix_reuse_fraction": 0.8,
    "ttft_slo_ms": 2000,
    "tpot_slo_ms": 50,
    "model": "llama-3.1-70b",
}


class RouteView(APIView):
    """Rank every enabled deployment and hosted API price for a request class (docs/routing.md)."""

    permission_classes = [IsAuthenticated, READ]

    @extend_schema(
        request=RouteRequestSerializer,
        responses={200: RouteResponseSerializer},
        examples=[OpenApiExample("agent traffic", value=EXAMPLE, request_only=True)],
    )
    def post(self, request: Request) -> Response:
        serializer = RouteRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(route(serializer.to_request()).to_dict())


class LiteLLMParamsSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="openai/<served model id> (OpenAI-compatible).")
    api_base = serializers.CharField(required=False, help_text="Deployments: base URL + /v1. APIs: add your own.")
    rpm = serializers.IntegerField(required=False, help_text="Requests/min from capacity.")
    tpm = serializers.IntegerField(required=False, help_text="rpm x (prompt + output tokens).")
    input_cost_per_token = serializers.FloatField(required=False, help_text="USD.")
    output_cost_per_token = serializers.FloatField(required=False, help_text="USD.")
    cache_read_input_token_cost = serializers.FloatField(required=False, help_text="USD (APIs' cache hit).")


class LiteLLMEntrySerializer(serializers.Serializer):
    model_name = serializers.CharField(help_text="The model group (our model slug).")
    litellm_params = LiteLLMParamsSerializer()
    model_info = serializers.DictField(help_text="id, max_input_tokens and fleetcap_* notes.")


class LiteLLMResponseSerializer(serializers.Serializer):
    model_list = LiteLLMEntrySerializer(many=True)


class LiteLLMView(APIView):
    """The fleet as a LiteLLM router ``model_list`` (JSON is YAML: save it as the proxy's config).
    Never carries an API key."""

    permission_classes = [IsAuthenticated, READ]

    @extend_schema(responses={200: LiteLLMResponseSerializer})
    def get(self, request: Request) -> Response:
        return Response(litellm_model_list())
