"""Declarative API viewsets for the inventory, models, workloads and prices: queryset,
serializer, filterset. Permissions are Django's model permissions (settings' default classes)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from fleet import filters
from fleet.models import ApiPrice, Cluster, Deployment, EndpointPoll, GpuQuote, HardwareSku, ModelSpec, Workload
from fleet.poller import poll_deployment

from . import serializers
from .permissions import require
from .routing import SLUG_IN_URL


class HardwareSkuViewSet(viewsets.ModelViewSet):
    queryset = HardwareSku.objects.all()
    serializer_class = serializers.HardwareSkuSerializer
    filterset_class = filters.HardwareSkuFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "hbm_gb", "hbm_bandwidth_tbps", "bf16_tflops"]


class ClusterViewSet(viewsets.ModelViewSet):
    queryset = Cluster.objects.select_related("sku")
    serializer_class = serializers.ClusterSerializer
    filterset_class = filters.ClusterFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "nodes", "team", "provider"]


class DeploymentViewSet(viewsets.ModelViewSet):
    queryset = Deployment.objects.select_related("cluster__sku", "model")
    serializer_class = serializers.DeploymentSerializer
    filterset_class = filters.DeploymentFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["slug", "replicas"]

    @extend_schema(request=None, responses={201: serializers.EndpointPollSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, require("fleet.poll_deployment")])
    def poll(self, request: Request, slug: str | None = None) -> Response:
        """Poll the endpoint now and return the new poll (409 while another poll is running)."""
        deployment = self.get_object()
        if not deployment.base_url:
            return Response({"base_url": ["This deployment has no endpoint to poll."]}, status=400)
        poll = poll_deployment(deployment)
        if poll is None and not Deployment.objects.filter(pk=deployment.pk).exists():
            return Response({"detail": "This deployment was deleted while it was being polled."}, status=404)
        if poll is None:
            return Response({"detail": "Another worker is polling this deployment right now."}, status=409)
        return Response(serializers.EndpointPollSerializer(poll).data, status=status.HTTP_201_CREATED)

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
            return Response(chosen.errors, status=400)
        page = self.paginate_queryset(chosen.qs)
        return self.get_paginated_response(serializers.EndpointPollSerializer(page, many=True).data)


class GpuQuoteViewSet(viewsets.ModelViewSet):
    queryset = GpuQuote.objects.select_related("sku")
    serializer_class = serializers.GpuQuoteSerializer
    filterset_class = filters.GpuQuoteFilter
    ordering_fields = ["quoted_on", "usd_per_gpu_hour"]


class ApiPriceViewSet(viewsets.ModelViewSet):
    queryset = ApiPrice.objects.all()
    serializer_class = serializers.ApiPriceSerializer
    filterset_class = filters.ApiPriceFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["quoted_on", "output_usd_per_mtok"]


class ModelSpecViewSet(viewsets.ModelViewSet):
    queryset = ModelSpec.objects.all()
    serializer_class = serializers.ModelSpecSerializer
    filterset_class = filters.ModelSpecFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "total_params", "active_params"]


class WorkloadViewSet(viewsets.ModelViewSet):
    queryset = Workload.objects.all()
    serializer_class = serializers.WorkloadSerializer
    filterset_class = filters.WorkloadFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    ordering_fields = ["name", "requests_per_day"]
