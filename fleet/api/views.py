"""Declarative API viewsets for the inventory, models, workloads and prices: queryset,
serializer, filterset; each record's audit trail at ``<record>/history/`` (``HistoryMixin``).
Permissions are Django's model permissions (settings' default classes)."""

import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers as drf_serializers
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from fleet import filters, outbox, page_cache, registration
from fleet.models import (
    ApiPrice,
    Cluster,
    ClusterPurchase,
    Deployment,
    ElectricityPrice,
    EndpointPoll,
    GpuQuote,
    HardwareSku,
    ModelSpec,
    OwnedCosts,
    Provider,
    Workload,
)
from fleet.poll_store import lease_is_free
from planner.engine import launch_engines

from . import parsers, serializers
from .history import HistoryMixin
from .permissions import require
from .routing import SLUG_IN_URL

log = logging.getLogger(__name__)

#: The poll-now task, sent through the outbox (fleet/outbox.py) by name.
POLL_ONE_TASK = "fleet.poll_one"

POLL_QUEUED = inline_serializer(
    "PollQueued",
    {
        "status": drf_serializers.ChoiceField(
            choices=["queued", "running"], help_text="running: a poll was already in flight; it is the answer."
        ),
        "dispatch": drf_serializers.ChoiceField(
            choices=outbox.DISPATCH,
            help_text="broker_unreachable: the poll is stored and sent when the broker is back; none: nothing queued.",
        ),
        "detail": drf_serializers.CharField(),
        "requested_at": drf_serializers.DateTimeField(),
        "polls": drf_serializers.URLField(help_text="The deployment's polls since the request: the new one appears."),
    },
)


class SharedListMixin:
    """``GET`` of the list computed once per version of the records (``fleet.page_cache.shared``) and served
    to every request of the same URL and host in its window: the serialized rows are the same for every
    user allowed to read them (no field depends on who asks; absolute URLs hold the host). Permissions
    and throttles still run first, per request."""

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        parts = (request.build_absolute_uri(),)
        name = f"api-{self.basename}-list"

        def compute() -> page_cache.Expiring:
            data = super(SharedListMixin, self).list(request).data
            page = getattr(self.paginator, "page", None)
            return page_cache.Expiring(data, self.shared_until(list(page.object_list) if page else []))

        return Response(page_cache.shared(name, parts, compute))

    def shared_until(self, rows: Sequence[Any]) -> Any:
        """When the page of ``rows`` stops being good by age alone (None: the window decides)."""
        return None


class HardwareSkuViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    queryset = HardwareSku.objects.all()
    serializer_class = serializers.HardwareSkuSerializer
    filterset_class = filters.HardwareSkuFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "hbm_gb", "hbm_bandwidth_tbps", "bf16_tflops"]


class ClusterViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    queryset = Cluster.objects.select_related("sku", "provider")
    serializer_class = serializers.ClusterSerializer
    filterset_class = filters.ClusterFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "nodes", "team", "provider__name"]


class DeploymentViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    queryset = Deployment.objects.select_related("cluster__sku", "model", "workload", "capacity_snapshot")
    serializer_class = serializers.DeploymentSerializer
    filterset_class = filters.DeploymentFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["slug", "replicas"]

    def shared_until(self, rows: Sequence[Any]) -> Any:
        # ``last_status`` turns "stale" by age: the shared page is good until the first row's does.
        return page_cache.earliest(d.status_turns_stale_at() for d in rows)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "launch_engine",
                str,
                required=False,
                enum=list(launch_engines()),
                description="The engine to launch with (default: the deployment's own engine).",
            )
        ],
        responses={
            200: serializers.LaunchCommandSerializer,
            400: OpenApiResponse(description="The engine has no launch command, or the model no Hugging Face id."),
        },
    )
    @action(detail=True, methods=["get"])
    def launch(self, request: Request, slug: str | None = None) -> Response:
        """The command that starts one replica of this deployment (``vllm serve ...`` or ``python -m
        sglang.launch_server ...``) with its layout, KV cache dtype, max model length, GPU memory
        utilisation and block size, each flag with the engine release's parser it is read from, and a
        Kubernetes container fragment (args and ``nvidia.com/gpu``)."""
        deployment = self.get_object()
        engine = request.query_params.get("launch_engine") or None
        return Response(deployment.launch_command(engine).to_dict())

    @extend_schema(
        request=None,
        responses={
            202: POLL_QUEUED,
            400: OpenApiResponse(description="The deployment has no endpoint."),
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, require("fleet.poll_deployment")])
    def poll(self, request: Request, slug: str | None = None) -> Response:
        """Queue a poll of the endpoint now (202). A worker runs it (``fleet.poll_one``) within a few
        seconds (up to three poll timeouts on a hanging endpoint); the poll then appears at the
        ``polls`` URL of the answer (also its ``Location``). When a poll is already in flight nothing
        more is queued: that poll is the answer. The task goes through the outbox: when the broker
        cannot be reached the answer is still 202, with ``dispatch: broker_unreachable``, and the
        poll is sent once the broker is back."""
        deployment = self.get_object()
        if not deployment.base_url:
            raise ValidationError({"base_url": ["This deployment has no endpoint to poll."]})
        requested_at = timezone.now()
        running = not Deployment.objects.filter(pk=deployment.pk).filter(lease_is_free(requested_at)).exists()
        dispatch, detail = "none", "A poll of this deployment is already in flight; it is the answer."
        if not running:
            sent = outbox.send(outbox.record(POLL_ONE_TASK, args=[deployment.pk]))
            dispatch = "sent" if sent else "broker_unreachable"
            detail = (
                "Queued: a worker polls the endpoint within seconds."
                if sent
                else "Queued, broker unreachable: the poll is stored and sent to a worker when the broker is back."
            )
        polls = reverse("api:deployment-polls", kwargs={"slug": deployment.slug})
        url = request.build_absolute_uri(f"{polls}?{urlencode({'since': requested_at.isoformat()})}")
        body = {
            "status": "running" if running else "queued",
            "dispatch": dispatch,
            "detail": detail,
            "requested_at": requested_at,
            "polls": url,
        }
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})

    @extend_schema(
        responses={200: serializers.EndpointPollSerializer(many=True)},
        parameters=[
            OpenApiParameter("since", OpenApiTypes.DATETIME, description="Polls at or after this time."),
            OpenApiParameter("until", OpenApiTypes.DATETIME, description="Polls before this time."),
            OpenApiParameter("status", str, description="up, loading, down, unauthorized, misconfigured, error"),
        ],
    )
    @action(detail=True, methods=["get"], filter_backends=[])
    def polls(self, request: Request, slug: str | None = None) -> Response:
        """The deployment's polls, newest first; filter by ``since``, ``until`` (ISO times), ``status``."""
        deployment = self.get_object()
        chosen = filters.EndpointPollFilter(
            request.query_params, queryset=EndpointPoll.objects.filter(deployment=deployment).order_by("-polled_at")
        )
        if not chosen.is_valid():
            raise ValidationError(chosen.errors)
        page = self.paginate_queryset(chosen.qs)
        return self.get_paginated_response(serializers.EndpointPollSerializer(page, many=True).data)


class ProviderViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    """Who rents or runs GPUs: clusters and GPU quotes name one (names are unique whatever the case)."""

    queryset = Provider.objects.all()
    serializer_class = serializers.ProviderSerializer
    filterset_fields = ["kind"]
    ordering_fields = ["name"]


class GpuQuoteViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    queryset = GpuQuote.objects.select_related("sku", "provider")
    serializer_class = serializers.GpuQuoteSerializer
    filterset_class = filters.GpuQuoteFilter
    ordering_fields = ["quoted_on", "usd_per_gpu_hour"]


class ApiPriceViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    queryset = ApiPrice.objects.all()
    serializer_class = serializers.ApiPriceSerializer
    filterset_class = filters.ApiPriceFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["quoted_on", "output_usd_per_mtok"]


class ModelSpecViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    queryset = ModelSpec.objects.all()
    serializer_class = serializers.ModelSpecSerializer
    filterset_class = filters.ModelSpecFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "total_params", "active_params"]
    #: Set for ``import`` only (its ``@action``): imports count against the user's import limit
    #: (fleet.rate_limits; with the page form's).
    throttle_scope: str | None = None

    @extend_schema(
        request=serializers.ModelImportSerializer,
        responses={
            201: serializers.ModelSpecSerializer,
            400: OpenApiResponse(
                description="Field errors: the body's fields, or the config's keys as config.<key> "
                "(config alone for an architecture the engine does not model)."
            ),
            409: OpenApiResponse(description="A model with this slug already exists."),
        },
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="import",
        parser_classes=[parsers.ModelImportJSONParser, parsers.FormParser, parsers.MultiPartParser],
        permission_classes=[IsAuthenticated, require("fleet.add_modelspec")],
        throttle_scope="model_import",
        filter_backends=[],
        pagination_class=None,
    )
    def import_config(self, request: Request) -> Response:
        """Create a model from its Hugging Face config.json: layer groups, parameter counts and
        weight formats derived from it (docs/sizing.md, "Importing a model from config.json"), each
        derivation said in ``assumptions``. 201 with the model, as the detail endpoint shows it."""
        body = serializers.ModelImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        model = registration.import_model(body.to_request())
        data = serializers.ModelSpecSerializer(model, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": str(data["url"])})


class WorkloadViewSet(SharedListMixin, HistoryMixin, viewsets.ModelViewSet):
    queryset = Workload.objects.all()
    serializer_class = serializers.WorkloadSerializer
    filterset_class = filters.WorkloadFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "requests_per_day"]


class OwnedCostsViewSet(HistoryMixin, viewsets.ModelViewSet):
    """An owned cluster's running costs (platform and finance write them): what it costs besides its purchases."""

    queryset = OwnedCosts.objects.select_related("cluster").order_by("cluster__name")
    serializer_class = serializers.OwnedCostsSerializer
    filterset_class = filters.OwnedCostsFilter


class ClusterPurchaseViewSet(HistoryMixin, viewsets.ModelViewSet):
    """An owned cluster's purchases (platform and finance write them): depreciated straight-line."""

    queryset = ClusterPurchase.objects.select_related("cluster")
    serializer_class = serializers.ClusterPurchaseSerializer
    filterset_class = filters.ClusterPurchaseFilter
    ordering_fields = ["bought_on"]


class ElectricityPriceViewSet(HistoryMixin, viewsets.ModelViewSet):
    """The sites' electricity prices by date (platform and finance write them)."""

    queryset = ElectricityPrice.objects.all()
    serializer_class = serializers.ElectricityPriceSerializer
    filterset_class = filters.ElectricityPriceFilter
    ordering_fields = ["site", "valid_from"]
