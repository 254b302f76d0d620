"""API viewsets for model specs and workloads."""

from rest_framework import viewsets

from fleet.api.urls_common import SLUG_IN_URL
from planner import filters
from planner.models import ModelSpec, Workload

from . import serializers


class ModelSpecViewSet(viewsets.ModelViewSet):
    queryset = ModelSpec.objects.all()
    serializer_class = serializers.ModelSpecSerializer
    filterset_class = filters.ModelSpecFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    write_area = "inventory"
    ordering_fields = ["name", "total_params", "active_params"]


class WorkloadViewSet(viewsets.ModelViewSet):
    queryset = Workload.objects.all()
    serializer_class = serializers.WorkloadSerializer
    filterset_class = filters.WorkloadFilter
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_URL
    write_area = "inventory"
    ordering_fields = ["name", "requests_per_day"]
