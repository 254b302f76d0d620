"""planner's records: rent-versus-API decisions, layout-search plans, calibrations from startup logs,
speed corrections from polls; stored breakevens per workload and reviews of decisions; monthly budgets
and their alerts; stored monthly spend reports."""

from .breakevens import DecisionReview, WorkloadBreakeven
from .budgets import Budget, BudgetAlert
from .calibrations import Calibration
from .corrections import SpeedCorrection
from .decisions import Decision, ImmutableRecordError
from .plans import Plan
from .spend import SpendSnapshot, SpendSnapshotLine

__all__ = [
    "Budget",
    "BudgetAlert",
    "Calibration",
    "Decision",
    "DecisionReview",
    "ImmutableRecordError",
    "Plan",
    "SpeedCorrection",
    "SpendSnapshot",
    "SpendSnapshotLine",
    "WorkloadBreakeven",
]
