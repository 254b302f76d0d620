"""Admin pages for model specs and workloads."""

from django.contrib import admin

from planner.models import ModelSpec, Workload


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
