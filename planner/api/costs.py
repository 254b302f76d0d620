"""Rent versus API over HTTP: breakeven, recorded decisions, and monthly GPU spend."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.permissions import require
from fleet.models import Workload
from planner.breakeven import BreakevenRequestSerializer, run_breakeven
from planner.models import Decision
from planner.spend import parse_month, spend_csv, spend_for_month


class BreakevenView(APIView):
    """Monthly rent of a cluster against the hosted API's bill for the same tokens."""

    # A computation (POST for its body): whoever may read the prices may compare them.
    permission_classes = [IsAuthenticated, require("fleet.view_gpuquote", "fleet.view_apiprice")]

    @extend_schema(request=BreakevenRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        serializer = BreakevenRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(run_breakeven(serializer.validated_data).response())


class DecisionSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:decision-detail")
    workload = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    tier_label = serializers.CharField(source="get_tier_display", read_only=True)
    supersedes = serializers.PrimaryKeyRelatedField(read_only=True)
    is_current = serializers.BooleanField(read_only=True)

    class Meta:
        model = Decision
        fields = (
            "url",
            "id",
            "workload",
            "tier",
            "tier_label",
            "figures",
            "inputs",
            "note",
            "decided_by_name",
            "decided_at",
            "supersedes",
            "is_current",
        )
        read_only_fields = fields


class DecisionCreateSerializer(serializers.Serializer):
    workload = serializers.SlugRelatedField(slug_field="slug", queryset=Workload.objects.all())
    tier = serializers.ChoiceField(choices=Decision.Tier.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    breakeven = BreakevenRequestSerializer(
        help_text="The comparison the decision is made on (same fields as POST /api/v1/breakeven/; "
        "the workload is filled in)."
    )

    def to_internal_value(self, data: Any) -> Any:
        # The nested comparison is about the decision's workload unless it names one itself.
        if isinstance(data, dict) and isinstance(data.get("breakeven"), dict) and data.get("workload"):
            data = {**data, "breakeven": {"workload": data["workload"], **data["breakeven"]}}
        return super().to_internal_value(data)


class DecisionViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Append-only: create, list, read. Updating or deleting a decision is refused (405)."""

    queryset = Decision.objects.select_related("workload", "superseded_by")
    serializer_class = DecisionSerializer
    filterset_fields = ["tier"]
    ordering_fields = ["decided_at"]

    def get_queryset(self):
        qs = super().get_queryset()
        workload = self.request.query_params.get("workload")
        return qs.filter(workload__slug=workload) if workload else qs

    @extend_schema(request=DecisionCreateSerializer, responses={201: DecisionSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incoming = DecisionCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        result = run_breakeven(data["breakeven"])
        decision = Decision.record(
            workload=data["workload"], tier=data["tier"], note=data.get("note", ""), figures=result.figures,
            inputs=result.snapshot, user=request.user,
        )  # fmt: skip
        body = DecisionSerializer(decision, context=self.get_serializer_context()).data
        return Response(body, status=201, headers={"Location": body["url"]})


class SpendCsvRenderer(BaseRenderer):
    """``?format=csv``: the spend service's CSV (``planner.spend.spend_csv``)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return spend_csv(data).encode()


class SpendView(APIView):
    """GPU spend for a calendar month from the dated cluster history, with the rate in force each day."""

    permission_classes = [IsAuthenticated, require("fleet.view_clusterstate", "fleet.view_gpuquote")]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, SpendCsvRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter("month", str, description="YYYY-MM (default: this month)"),
            OpenApiParameter("format", str, enum=["json", "csv"]),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        raw = request.query_params.get("month") or timezone.now().strftime("%Y-%m")
        month = parse_month(raw)
        if month is None:
            raise ValidationError({"month": ["Give a month as YYYY-MM, e.g. 2026-07."]})
        result = spend_for_month(*month)
        response = Response(result.to_dict())
        if request.accepted_renderer.format == "csv":
            response["Content-Disposition"] = f'attachment; filename="gpu-spend-{raw}.csv"'
        return response
