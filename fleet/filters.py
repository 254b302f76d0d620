"""One FilterSet per record, shared by the API viewsets and the HTML list pages; every one a
``BoundedFilterSet``, so no filter value is unbounded."""

from typing import Any

import django_filters as filters

from fleet.forms import BoundedDecimalField
from fleet.limits import record_bound
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
    Workload,
)
from fleet.models.specs import WEIGHT_FORMAT_CHOICES

#: The longest value a text filter takes (a slug, a name, a team): no name here has more than 200
#: characters, and SQLite refuses a LIKE pattern of more than 50,000 (``iexact``: an OperationalError).
MAX_FILTER_CHARS = 200


class BoundedFilterSet(filters.FilterSet):
    """A FilterSet whose text filters take at most ``MAX_FILTER_CHARS`` characters and whose number
    filters read their value as a ``fleet.forms.BoundedDecimalField`` within the filtered record field's
    bound (``fleet.limits.record_bound``): a 5,000-digit or 1e999 ``min_total_params`` is a refused
    filter (a 400 on the API, a message on a page), never a query."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for found in self.filters.values():  # copies of the class's filters, made before any form
            if isinstance(found, filters.NumberFilter):
                found.field_class = BoundedDecimalField
                high = record_bound(found.field_name)
                found.extra.setdefault("max_value", high)
                found.extra.setdefault("min_value", -high)
            elif isinstance(found, filters.CharFilter):
                found.extra.setdefault("max_length", MAX_FILTER_CHARS)


class HardwareSkuFilter(BoundedFilterSet):
    vendor = filters.CharFilter(lookup_expr="iexact")
    min_hbm_gb = filters.NumberFilter(field_name="hbm_gb", lookup_expr="gte")
    max_hbm_gb = filters.NumberFilter(field_name="hbm_gb", lookup_expr="lte")

    class Meta:
        model = HardwareSku
        fields = ["vendor", "gpus_per_node"]


class ClusterFilter(BoundedFilterSet):
    sku = filters.CharFilter(field_name="sku__slug")
    team = filters.CharFilter(lookup_expr="iexact")
    provider = filters.CharFilter(field_name="provider__name", lookup_expr="iexact", help_text="The provider's name.")
    region = filters.CharFilter(lookup_expr="iexact")

    class Meta:
        model = Cluster
        fields = ["sku", "team", "provider", "region", "status", "ownership"]


class DeploymentFilter(BoundedFilterSet):
    cluster = filters.CharFilter(field_name="cluster__slug")
    model = filters.CharFilter(field_name="model__slug")
    team = filters.CharFilter(field_name="cluster__team", lookup_expr="iexact")
    provider = filters.CharFilter(field_name="cluster__provider__name", lookup_expr="iexact")
    sku = filters.CharFilter(field_name="cluster__sku__slug")
    workload = filters.CharFilter(field_name="workload__slug", help_text="Workload slug.")

    class Meta:
        model = Deployment
        fields = ["cluster", "model", "workload", "engine", "enabled", "team", "provider", "sku"]


class GpuQuoteFilter(BoundedFilterSet):
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


class ApiPriceFilter(BoundedFilterSet):
    provider = filters.CharFilter(lookup_expr="iexact")
    model_name = filters.CharFilter(lookup_expr="iexact")
    model = filters.CharFilter(field_name="model__slug", help_text="Slug of the model spec priced.")

    class Meta:
        model = ApiPrice
        fields = ["provider", "model_name", "model"]


class EndpointPollFilter(BoundedFilterSet):
    since = filters.IsoDateTimeFilter(field_name="polled_at", lookup_expr="gte")
    until = filters.IsoDateTimeFilter(field_name="polled_at", lookup_expr="lt")

    class Meta:
        model = EndpointPoll
        fields = ["status", "since", "until"]


class ModelSpecFilter(BoundedFilterSet):
    is_moe = filters.BooleanFilter(method="filter_is_moe", label="Mixture of experts")
    weight_format = filters.ChoiceFilter(choices=WEIGHT_FORMAT_CHOICES)
    min_total_params = filters.NumberFilter(field_name="total_params", lookup_expr="gte")
    max_total_params = filters.NumberFilter(field_name="total_params", lookup_expr="lte")

    class Meta:
        model = ModelSpec
        fields = ["is_moe", "weight_format", "min_total_params", "max_total_params"]

    def filter_is_moe(self, queryset, name, value):
        return queryset.filter(n_routed_experts__gt=0) if value else queryset.filter(n_routed_experts=0)


class WorkloadFilter(BoundedFilterSet):
    team = filters.CharFilter(lookup_expr="iexact")

    class Meta:
        model = Workload
        fields = ["team"]


class ClusterPurchaseFilter(BoundedFilterSet):
    cluster = filters.CharFilter(field_name="cluster__slug", help_text="The cluster's slug.")
    currency = filters.CharFilter(lookup_expr="iexact")

    class Meta:
        model = ClusterPurchase
        fields = ["cluster", "currency"]


class OwnedCostsFilter(BoundedFilterSet):
    cluster = filters.CharFilter(field_name="cluster__slug", help_text="The cluster's slug.")
    site = filters.CharFilter()

    class Meta:
        model = OwnedCosts
        fields = ["cluster", "site"]


class ElectricityPriceFilter(BoundedFilterSet):
    site = filters.CharFilter()
    valid_on = filters.DateFilter(field_name="valid_from", lookup_expr="lte", help_text="Dated on or before this day.")

    class Meta:
        model = ElectricityPrice
        fields = ["site", "valid_on"]
