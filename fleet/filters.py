"""One FilterSet per record, shared by the API viewsets and the HTML list pages."""

import django_filters as filters

from fleet.models import ApiPrice, Cluster, Deployment, EndpointPoll, GpuQuote, HardwareSku, ModelSpec, Workload
from fleet.models.specs import WEIGHT_FORMAT_CHOICES


class HardwareSkuFilter(filters.FilterSet):
    vendor = filters.CharFilter(lookup_expr="iexact")
    min_hbm_gb = filters.NumberFilter(field_name="hbm_gb", lookup_expr="gte")
    max_hbm_gb = filters.NumberFilter(field_name="hbm_gb", lookup_expr="lte")

    class Meta:
        model = HardwareSku
        fields = ["vendor", "gpus_per_node"]


class ClusterFilter(filters.FilterSet):
    sku = filters.CharFilter(field_name="sku__slug")
    team = filters.CharFilter(lookup_expr="iexact")
    provider = filters.CharFilter(field_name="provider__name", lookup_expr="iexact", help_text="The provider's name.")
    region = filters.CharFilter(lookup_expr="iexact")

    class Meta:
        model = Cluster
        fields = ["sku", "team", "provider", "region", "status"]


class DeploymentFilter(filters.FilterSet):
    cluster = filters.CharFilter(field_name="cluster__slug")
    model = filters.CharFilter(field_name="model__slug")
    team = filters.CharFilter(field_name="cluster__team", lookup_expr="iexact")
    provider = filters.CharFilter(field_name="cluster__provider__name", lookup_expr="iexact")
    sku = filters.CharFilter(field_name="cluster__sku__slug")

    class Meta:
        model = Deployment
        fields = ["cluster", "model", "engine", "enabled", "team", "provider", "sku"]


class GpuQuoteFilter(filters.FilterSet):
    sku = filters.CharFilter(field_name="sku__slug")
    provider = filters.CharFilter(field_name="provider__name", lookup_expr="iexact", help_text="The provider's name.")
    assumption = filters.BooleanFilter(
        field_name="provider", lookup_expr="isnull", help_text="true: assumptions only (no provider issued them)."
    )
    quoted_after = filters.DateFilter(field_name="quoted_on", lookup_expr="gte")
    quoted_before = filters.DateFilter(field_name="quoted_on", lookup_expr="lte")
    valid_on = filters.DateFilter(method="filter_valid_on", label="Quotes valid on this date (quoted, not expired)")
    list_price = filters.BooleanFilter(help_text="true: public list prices only; false: the fleet's own quotes only.")

    class Meta:
        model = GpuQuote
        fields = [
            "sku",
            "provider",
            "assumption",
            "pricing_kind",
            "quoted_after",
            "quoted_before",
            "valid_on",
            "list_price",
        ]

    def filter_valid_on(self, queryset, name, value):
        return queryset.valid_on(value)


class ApiPriceFilter(filters.FilterSet):
    provider = filters.CharFilter(lookup_expr="iexact")
    model_name = filters.CharFilter(lookup_expr="iexact")
    model = filters.CharFilter(field_name="model__slug", help_text="Slug of the model spec priced.")

    class Meta:
        model = ApiPrice
        fields = ["provider", "model_name", "model"]


class EndpointPollFilter(filters.FilterSet):
    since = filters.IsoDateTimeFilter(field_name="polled_at", lookup_expr="gte")
    until = filters.IsoDateTimeFilter(field_name="polled_at", lookup_expr="lt")

    class Meta:
        model = EndpointPoll
        fields = ["status", "since", "until"]


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
