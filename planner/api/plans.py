"""``/api/v1/plans/``: start a layout search (202), follow its progress, read the result, cancel; the
list carries each plan's summary, the result only the plan itself."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from fleet import outbox
from fleet.api.fields import SlugReference
from fleet.api.permissions import require
from fleet.api.serializers import DeploymentSerializer, LaunchCommandSerializer
from fleet.errors import ConflictError
from planner.deploy import DeployRequest, deploy_from_plan
from planner.engine import (
    DEFAULT_ENGINE,
    MAX_CONTEXT_TOKENS,
    MODES,
    EngineInputError,
    Names,
    engine_names,
)
from planner.filters import PlanFilter
from planner.models import Plan
from planner.plans import (
    MAX_NODES_LIMIT,
    PLAN_KV_CACHE_DTYPES,
    PRICE_BASES,
    PlanRequest,
    cancel,
    labelled_result,
    may_cancel,
    plan_ranking,
    submit_plan,
)

#: The most candidate SKUs one plan may name (the catalogue has a dozen).
MAX_PLAN_SKUS = 100


class PlanRequestSerializer(serializers.Serializer):
    """``POST /api/v1/plans/`` request body (defaults are ``PlanRequest``'s)."""

    model = SlugReference(help_text="Model slug.")
    workload = SlugReference(help_text="Workload slug.")
    skus = serializers.ListField(
        child=SlugReference(),
        max_length=MAX_PLAN_SKUS,
        required=False,
        help_text="Candidate SKU slugs (default: every SKU with an on-demand quote in force).",
    )
    max_nodes = serializers.IntegerField(required=False, min_value=1, max_value=MAX_NODES_LIMIT, help_text="Default 8.")
    kv_cache_dtypes = serializers.ListField(
        child=serializers.ChoiceField(choices=PLAN_KV_CACHE_DTYPES),
        max_length=len(PLAN_KV_CACHE_DTYPES),
        required=False,
        allow_empty=False,
    )
    modes = serializers.ListField(
        child=serializers.ChoiceField(choices=MODES), max_length=len(MODES), required=False, allow_empty=False
    )
    on = serializers.DateField(required=False, help_text="Date of the GPU quotes used (default: today).")
    price_basis = serializers.ChoiceField(
        choices=list(PRICE_BASES),
        required=False,
        help_text="Rank by the fleet's own quotes (`fleet`, default) or the cheapest public list price in force "
        "per SKU (`list`); SKUs without such a price are skipped and named.",
    )

    def to_request(self) -> PlanRequest:
        data = dict(self.validated_data)
        for name in ("skus", "kv_cache_dtypes", "modes"):
            if name in data:
                data[name] = tuple(data[name])
        return PlanRequest(**data)


class PlanSearchSerializer(serializers.Serializer):
    """What a plan searched beyond its model, workload and SKUs (from its ``options``)."""

    max_nodes = serializers.IntegerField(source="options.max_nodes", read_only=True)
    kv_cache_dtypes = serializers.ListField(
        child=serializers.ChoiceField(choices=PLAN_KV_CACHE_DTYPES), source="options.kv_cache_dtypes", read_only=True
    )
    modes = serializers.ListField(child=serializers.ChoiceField(choices=MODES), source="options.modes", read_only=True)
    on = serializers.DateField(source="options.on", read_only=True, help_text="Date of the GPU prices used.")
    price_basis = serializers.ChoiceField(choices=list(PRICE_BASES), read_only=True)


class BestConfigurationSerializer(serializers.Serializer):
    """The best configuration's headline figures (``result.best`` on the plan has them all)."""

    sku = serializers.CharField(read_only=True, help_text="SKU slug.")
    mode = serializers.ChoiceField(choices=MODES, read_only=True)
    kv_cache_dtype = serializers.ChoiceField(choices=PLAN_KV_CACHE_DTYPES, read_only=True)
    gpus = serializers.IntegerField(read_only=True)
    nodes = serializers.IntegerField(read_only=True)
    layout = serializers.CharField(
        read_only=True, help_text="Replicas x parallel sizes, e.g. `2 x tp 4 · dp 2`; `decode ...; prefill ...`."
    )
    usd_per_gpu_hour = serializers.CharField(read_only=True, help_text="The SKU's price used (decimal string).")
    usd_per_hour = serializers.FloatField(read_only=True)
    usd_per_mtok = serializers.FloatField(read_only=True, help_text="USD per million output tokens.")
    tpot_ms = serializers.FloatField(read_only=True)
    ttft_ms = serializers.FloatField(read_only=True)
    tokens_per_s_per_gpu = serializers.FloatField(read_only=True, help_text="Output tokens per second per GPU.")
    why = serializers.CharField(read_only=True, help_text="The configuration in one line: outcome, cost, speed.")
    price_basis = serializers.CharField(
        read_only=True, allow_null=True, help_text="What its SKU's price is: own (a quote to the fleet) or list."
    )


class PlanSummarySerializer(serializers.Serializer):
    """A done plan's result in brief (``planner.plans.plan_summary``, stored with the result)."""

    feasible = serializers.IntegerField(read_only=True, help_text="Configurations that fit and meet both SLOs.")
    best = BestConfigurationSerializer(
        read_only=True, allow_null=True, help_text="The cheapest that meets the SLOs; null when none does."
    )


class PlanBriefSerializer(serializers.ModelSerializer):
    """A plan as ``GET /api/v1/plans/`` lists it: what it searched, how far it got and its summary;
    the result (tens of KB) is on the plan itself (``url``)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:plan-detail")
    model = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    workload = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    skus = serializers.SlugRelatedField(slug_field="slug", read_only=True, many=True)
    request = PlanSearchSerializer(source="*", read_only=True)
    summary = PlanSummarySerializer(read_only=True, allow_null=True, help_text="Null until the plan is done.")
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Plan
        fields = (
            "url",
            "id",
            "model",
            "workload",
            "skus",
            "request",
            "status",
            "progress",
            "candidates_evaluated",
            "cancel_requested",
            "summary",
            "error",
            "requested_by",
            "created",
            "started",
            "finished",
        )
        read_only_fields = fields


class RankingRowSerializer(serializers.Serializer):
    """One ranked configuration in brief (``planner.plans.plan_ranking``): what to deploy and why it ranks there."""

    rank = serializers.IntegerField(read_only=True, help_text="1 = the best; POST deploy/ takes it.")
    sku = serializers.CharField(read_only=True)
    mode = serializers.ChoiceField(choices=MODES, read_only=True)
    layout = serializers.CharField(read_only=True)
    gpus = serializers.IntegerField(read_only=True)
    kv_cache_dtype = serializers.CharField(read_only=True)
    usd_per_mtok = serializers.FloatField(read_only=True)
    tpot_ms = serializers.FloatField(read_only=True)
    ttft_ms = serializers.FloatField(read_only=True)
    outcome = serializers.CharField(read_only=True, help_text="`best`, or why it is not: `costs_more`, `same_cost`.")
    label = serializers.CharField(read_only=True, help_text="The outcome in words (docs/api.md, Plans).")
    why = serializers.CharField(read_only=True, help_text="One line: outcome, cost and speed, rounded.")


class PlanSerializer(PlanBriefSerializer):
    """A plan with everything: the list's fields, its options (with each SKU's price used), its
    progress log, the ranking in brief (each row with ``why``) and, when done, its result (every
    outcome code with its ``label`` beside it: ``planner.plans.labelled_result``)."""

    ranking = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField(
        help_text="The search's result when done, else null; each outcome code (`reason`, `status`, a `rejected` "
        "key) has its sentence beside it (`label`, `status_label`)."
    )

    class Meta(PlanBriefSerializer.Meta):
        fields = (*PlanBriefSerializer.Meta.fields, "options", "progress_log", "ranking", "result")
        read_only_fields = fields

    @extend_schema_field(RankingRowSerializer(many=True))
    def get_ranking(self, plan: Plan) -> list[dict[str, Any]]:
        keys = ("sku", "mode", "layout", "gpus", "kv_cache_dtype", "usd_per_mtok", "tpot_ms", "ttft_ms")
        keys = (*keys, "outcome", "label", "why")
        return [{"rank": n, **{k: row.get(k) for k in keys}} for n, row in enumerate(plan_ranking(plan), start=1)]

    @extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
    def get_result(self, plan: Plan) -> dict[str, Any] | None:
        return labelled_result(plan.result)


class PlanSubmittedSerializer(PlanSerializer):
    """The answer to ``POST /api/v1/plans/``: the plan, and whether its task reached the broker."""

    dispatch = serializers.ChoiceField(
        choices=outbox.DISPATCH,
        read_only=True,
        help_text="broker_unreachable: the plan is stored and sent to a worker when the broker is back.",
    )
    detail = serializers.CharField(read_only=True)

    class Meta(PlanSerializer.Meta):
        fields = (*PlanSerializer.Meta.fields, "dispatch", "detail")
        read_only_fields = fields


class PlanDeploySerializer(serializers.Serializer):
    """``POST /api/v1/plans/{id}/deploy/``: which ranked configuration, on which cluster, under which slug."""

    rank = serializers.IntegerField(min_value=1, max_value=1000, help_text="1 = the best configuration.")
    cluster = SlugReference(help_text="A cluster of the configuration's SKU with room for its GPUs.")
    slug = SlugReference(help_text="The new deployment's slug.")
    engine = serializers.ChoiceField(
        choices=Names(engine_names), required=False, help_text=f"Default {DEFAULT_ENGINE}."
    )
    max_model_len = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_CONTEXT_TOKENS, help_text="Default: the workload's p95 context."
    )


class PlanDeployedSerializer(serializers.Serializer):
    deployment = DeploymentSerializer(read_only=True)
    launch = LaunchCommandSerializer(read_only=True, allow_null=True, help_text="Null: no launch command for it.")


class PlanViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Searches run on Celery workers; the list shows each plan's progress and, when done, its
    summary (never reading the result), the detail its result."""

    queryset = Plan.objects.select_related("model", "workload", "requested_by").prefetch_related("skus")
    serializer_class = PlanSerializer
    filterset_class = PlanFilter
    ordering_fields = ["created"]
    #: Starting a plan counts against the user's plan limit (fleet.rate_limits; with the page form's).
    throttle_scope = "plan"

    def limited(self, request: Request) -> bool:
        return self.action == "create"

    def get_queryset(self) -> QuerySet[Plan]:
        queryset = super().get_queryset()
        return queryset.listed() if self.action == "list" else queryset

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return PlanBriefSerializer if self.action == "list" else PlanSerializer

    @extend_schema(request=PlanRequestSerializer, responses={202: PlanSubmittedSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Record the plan and its task together (202 whether or not the broker is up: ``dispatch``
        says which; an unsent task is sent by the outbox sweeper, so nothing is lost)."""
        incoming = PlanRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        submission = submit_plan(incoming.to_request(), request.user)
        plan = submission.plan
        plan.dispatch, plan.detail = submission.dispatch, submission.detail
        body = PlanSubmittedSerializer(plan, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": str(body["url"])})

    @extend_schema(request=None, responses={200: PlanSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, require("planner.change_plan")])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a queued plan, or ask a running one to stop; a finished plan is left as it is (409).
        Only the plan's requester, or a holder of ``planner.cancel_any_plan`` (admin), may (403)."""
        plan = self.get_object()
        if not may_cancel(plan, request.user):
            raise PermissionDenied("Only the person who started this plan, or an admin, may cancel it.")
        if plan.is_finished:
            raise ConflictError(f"The plan is already {plan.status}.")
        plan = cancel(plan)
        return Response(PlanSerializer(plan, context=self.get_serializer_context()).data)

    @extend_schema(
        request=PlanDeploySerializer,
        responses={201: PlanDeployedSerializer},
        description="Register ranked configuration `rank` (1 = best) of a done plan as a deployment on a cluster "
        "of its SKU, with its layout, replicas and KV cache dtype, the plan's model and workload, the engine and "
        "max_model_len given; the answer has the deployment and its launch command.",
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, require("fleet.add_deployment")])
    def deploy(self, request: Request, pk: str | None = None) -> Response:
        plan = self.get_object()
        incoming = PlanDeploySerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        deployment = deploy_from_plan(DeployRequest(plan=str(plan.pk), **incoming.validated_data), request.user)
        body = {
            "deployment": DeploymentSerializer(deployment, context=self.get_serializer_context()).data,
            "launch": _launch_or_none(deployment),
        }
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": str(body["deployment"]["url"])})


def _launch_or_none(deployment: Any) -> dict[str, Any] | None:
    """The deployment's launch command (None when its engine has none or its model no Hugging Face id)."""
    try:
        return deployment.launch_command().to_dict()
    except EngineInputError:
        return None
