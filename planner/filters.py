"""FilterSets for the planner's records (the API's lists; invalid values are 400s)."""

import django_filters as filters

from fleet.filters import BoundedFilterSet
from planner.models import Budget, Calibration, Decision, Plan


class DecisionFilter(BoundedFilterSet):
    workload = filters.CharFilter(field_name="workload__slug", help_text="Workload slug.")

    class Meta:
        model = Decision
        fields = ["workload", "tier"]


class PlanFilter(BoundedFilterSet):
    model = filters.CharFilter(field_name="model__slug", help_text="Model slug.")
    workload = filters.CharFilter(field_name="workload__slug", help_text="Workload slug.")

    class Meta:
        model = Plan
        fields = ["status", "model", "workload"]


class BudgetFilter(BoundedFilterSet):
    team = filters.CharFilter(lookup_expr="iexact")
    cluster = filters.CharFilter(field_name="cluster__slug", help_text="Cluster slug.")

    class Meta:
        model = Budget
        fields = ["team", "cluster"]


class CalibrationFilter(BoundedFilterSet):
    deployment = filters.CharFilter(field_name="deployment__slug", help_text="Only this deployment's (slug).")

    class Meta:
        model = Calibration
        fields = ["deployment"]
