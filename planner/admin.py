"""Admin pages for decisions and plans (both read-only: written by their services)."""

from django.contrib import admin

from fleet.admin import ReadOnlyAdmin
from planner.models import Decision, Plan


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
