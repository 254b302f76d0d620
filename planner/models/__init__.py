"""planner's records: rent-versus-API decisions, layout-search plans, calibrations from startup logs,
speed corrections from polls; stored breakevens per workload and reviews of decisions."""

from .breakevens import DecisionReview, WorkloadBreakeven
from .calibrations import Calibration
from .corrections import SpeedCorrection
from .decisions import Decision, ImmutableRecordError
from .plans import Plan

__all__ = [
    "Calibration",
    "Decision",
    "DecisionReview",
    "ImmutableRecordError",
    "Plan",
    "SpeedCorrection",
    "WorkloadBreakeven",
]
