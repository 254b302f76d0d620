"""Declarative API viewsets for the inventory and prices: queryset, serializer, filterset."""

from rest_framework import viewsets

from fleet import filters
from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku

from . import serializers
from .urls_common import SLUG_IN_URL


class HardwareSkuViewSet(viewsets.ModelViewSet):
    queryset = HardwareSku.objects.all()
    serializer_class = serializers.HardwareSkuSerializer
    filterset_class = filters.HardwareSkuFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    write_area = "inventory"
    ordering_fields = ["name", "hbm_gb", "hbm_bandwidth_tbps", "bf16_tflops"]


class ClusterViewSet(viewsets.ModelViewSet):
    queryset = Cluster.objects.select_related("sku")
    serializer_class = serializers.ClusterSerializer
    filterset_class = filters.ClusterFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    write_area = "inventory"
    ordering_fields = ["name", "nodes", "team", "provider"]


class DeploymentViewSet(viewsets.ModelViewSet):
    queryset = Deployment.objects.select_related("cluster__sku", "model")
    serializer_class = serializers.DeploymentSerializer
    filterset_class = filters.DeploymentFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    write_area = "inventory"
    ordering_fields = ["slug", "replicas"]


class GpuQuoteViewSet(viewsets.ModelViewSet):
    queryset = GpuQuote.objects.select_related("sku")
    serializer_class = serializers.GpuQuoteSerializer
    filterset_class = filters.GpuQuoteFilter
    write_area = "pricing"
    ordering_fields = ["quoted_on", "usd_per_gpu_hour"]


class ApiPriceViewSet(viewsets.ModelViewSet):
    queryset = ApiPrice.objects.all()
    serializer_class = serializers.ApiPriceSerializer
    filterset_class = filters.ApiPriceFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    write_area = "pricing"
    ordering_fields = ["quoted_on", "output_usd_per_mtok"]
