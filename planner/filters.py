"""FilterSets for planner records, shared by the API and the pages."""

import django_filters as filters

from planner.models import ModelSpec, Workload
from planner.models.specs import WEIGHT_FORMAT_CHOICES


class ModelSpecFilter(filters.FilterSet):
    is_moe = filters.BooleanFilter(method="filter_is_moe", label="Mixture of experts")
    weight_format = filters.ChoiceFilter(choices=WEIGHT_FORMAT_CHOICES)
    min_total_params = filters.NumberFilter(field_name="total_params", lookup_expr="gte")
    max_total_params = filters.NumberFilter(field_name="total_params", lookup_expr="lte")

    class Meta:
        model = ModelSpec
        fields = ["is_moe", "weight_format", "min_total_params", "max_total_params"]

    def filter_is_moe(self, queryset, name, value):
        return queryset.filter(n_routed_experts__gt=0) if value else queryset.filter(n_routed_experts=0)


class WorkloadFilter(filters.FilterSet):
    team = filters.CharFilter(lookup_expr="iexact")

    class Meta:
        model = Workload
        fields = ["team"]
