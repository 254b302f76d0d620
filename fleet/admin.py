"""Admin pages for the inventory and prices. The endpoint API key is write-only here too.

The admin checks Django's model permissions natively, the same ones the API and the pages check
(the role groups hold them: fleet/permissions.py); staff users see what their role may.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models

from fleet.forms import BoundedJSONField, DeploymentForm
from fleet.models import (
    ApiPrice,
    Cluster,
    ClusterPurchase,
    ClusterState,
    Deployment,
    ElectricityPrice,
    EndpointPoll,
    ExchangeRate,
    GpuQuote,
    HardwareSku,
    ModelSpec,
    OutboxMessage,
    OwnedCosts,
    Provider,
    WorkerHeartbeat,
    Workload,
)


@admin.register(HardwareSku)
class HardwareSkuAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "vendor", "hbm_gb", "hbm_bandwidth_tbps", "bf16_tflops", "gpus_per_node")
    list_filter = ("vendor",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("name", "kind")
    list_filter = ("kind",)
    search_fields = ("name",)


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "slug",
        "sku",
        "nodes",
        "gpus_per_node",
        "team",
        "provider",
        "hours_per_day",
        "status",
    )
    list_filter = ("status", "team", "provider", "sku")
    list_select_related = ("sku", "provider")
    search_fields = ("name", "slug", "team", "provider__name")
    prepopulated_fields = {"slug": ("name",)}


class DeploymentAdminForm(DeploymentForm):
    """The page form, so the admin keeps the key write-only and runs the registration checks
    (``fleet.registration``: endpoint guard, sizing) the same way."""


@admin.register(Deployment)
class DeploymentAdmin(admin.ModelAdmin):
    form = DeploymentAdminForm
    list_display = ("slug", "cluster", "model", "engine", "replicas", "tp", "pp", "dp", "ep", "enabled")
    list_filter = ("engine", "enabled", "cluster__team")
    list_select_related = ("cluster", "model")
    search_fields = ("slug", "served_model_id")

    # The stored key is shown to nobody: everyone sees whether one is set; only a user who may change
    # the deployment gets the write-only replace and remove fields. A read-only admin page renders
    # every field through ``lookup_field``, which would call a model method of the field's name, so
    # the key fields never reach a page that cannot change the row (and the decrypting method is not
    # named ``api_key``).
    KEY_FIELDS = ("api_key", "clear_api_key")
    readonly_fields = ("api_key_status",)

    @admin.display(description="API key")
    def api_key_status(self, obj: Deployment | None) -> str:
        return "set" if obj is not None and obj.has_api_key else "not set"

    def get_fields(self, request: Any, obj: Deployment | None = None) -> list[str]:
        fields = [f for f in super().get_fields(request, obj) if f not in (*self.KEY_FIELDS, "api_key_status")]
        may_change = self.has_change_permission(request, obj) if obj is not None else self.has_add_permission(request)
        # The remove box only where there is a key to remove (``DeploymentForm`` drops it elsewhere).
        keys = self.KEY_FIELDS if obj is not None and obj.has_api_key else self.KEY_FIELDS[:1]
        return [*fields, "api_key_status", *(keys if may_change else ())]


@admin.register(GpuQuote)
class GpuQuoteAdmin(admin.ModelAdmin):
    list_display = ("sku", "provider", "usd_per_gpu_hour", "pricing_kind", "quoted_on", "valid_until")
    list_filter = ("pricing_kind", "provider", "sku")
    list_select_related = ("sku", "provider")
    date_hierarchy = "quoted_on"


@admin.register(ExchangeRate)
class ExchangeRateAdmin(admin.ModelAdmin):
    """USD per unit of a currency on a date: what a cloud bill in that currency needs (finance)."""

    list_display = ("currency", "on", "usd_per_unit", "source")
    list_filter = ("currency",)
    date_hierarchy = "on"


@admin.register(OwnedCosts)
class OwnedCostsAdmin(admin.ModelAdmin):
    """An owned cluster's running costs (platform and finance)."""

    list_display = (
        "cluster",
        "site",
        "pue",
        "racks",
        "usd_per_rack_month",
        "support_share_per_year",
        "staff_usd_per_month",
    )
    list_select_related = ("cluster",)
    search_fields = ("cluster__name", "cluster__slug", "site")


@admin.register(ClusterPurchase)
class ClusterPurchaseAdmin(admin.ModelAdmin):
    """Nodes of an owned cluster bought on a day (platform and finance)."""

    list_display = ("cluster", "bought_on", "nodes", "price", "price_per", "currency", "useful_life_months")
    list_filter = ("currency", "cluster")
    list_select_related = ("cluster",)
    date_hierarchy = "bought_on"


@admin.register(ElectricityPrice)
class ElectricityPriceAdmin(admin.ModelAdmin):
    """A site's electricity price from a day (platform and finance)."""

    list_display = ("site", "valid_from", "usd_per_kwh", "source")
    list_filter = ("site",)
    date_hierarchy = "valid_from"


@admin.register(ApiPrice)
class ApiPriceAdmin(admin.ModelAdmin):
    list_display = (
        "slug",
        "provider",
        "model_name",
        "model",
        *ApiPrice.PRICES,
        "quoted_on",
    )
    list_filter = ("provider",)
    list_select_related = ("model",)
    prepopulated_fields = {"slug": ("provider", "model_name")}


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by the system (history, polls, heartbeats, plans, decisions): visible with
    ``view_<model>``, never added or changed by hand, whatever permissions the user holds."""

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ("worker", "last_seen", "beats")


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdmin):
    """Celery tasks recorded with their work (fleet/outbox.py): an unsent one waits for the broker."""

    list_display = ("task", "task_id", "created", "sent_at", "attempts", "last_error")
    list_filter = ("task",)
    search_fields = ("task_id",)


@admin.register(ClusterState)
class ClusterStateAdmin(ReadOnlyAdmin):
    list_display = ("cluster", "effective_from", "sku", "nodes", "gpus_per_node", "hours_per_day", "status", "team")
    list_filter = ("status", "team")
    list_select_related = ("cluster", "sku")


@admin.register(EndpointPoll)
class EndpointPollAdmin(ReadOnlyAdmin):
    list_display = ("deployment", "polled_at", "status", "latency_ms", "requests_running", "kv_cache_usage")
    list_filter = ("status",)
    list_select_related = ("deployment",)
    date_hierarchy = "polled_at"


@admin.register(ModelSpec)
class ModelSpecAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "total_params", "active_params", "n_routed_experts", "weight_format")
    # Layer groups as JSON: deep nesting is a field error, not a RecursionError (fleet.inputs).
    formfield_overrides = {models.JSONField: {"form_class": BoundedJSONField}}
    list_filter = ("weight_format",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "slug",
        "team",
        "requests_per_day",
        "peak_concurrency",
        "ttft_slo_ms",
        "tpot_slo_ms",
    )
    list_filter = ("team",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
