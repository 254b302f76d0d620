"""Admin pages for model specs and workloads."""

from django.contrib import admin

from fleet.admin import ReadOnlyAdmin
from planner.models import Decision, ModelSpec, Plan, Workload


@admin.register(ModelSpec)
class ModelSpecAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "total_params", "active_params", "n_routed_experts", "weight_format")
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


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    """Decisions are append-only: recorded from the rent-vs-API page or the API, never edited."""

    list_display = ("workload", "tier", "decided_by_name", "decided_at")
    list_filter = ("tier",)
    list_select_related = ("workload",)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Plan)
class PlanAdmin(ReadOnlyAdmin):
    list_display = ("id", "model", "workload", "status", "progress", "created")
    list_filter = ("status",)
    list_select_related = ("model", "workload")
