"""planner's records: rent-versus-API decisions, layout-search plans, calibrations from startup logs."""

from .calibrations import Calibration
from .decisions import Decision, ImmutableRecordError
from .plans import Plan

__all__ = ["Calibration", "Decision", "ImmutableRecordError", "Plan"]
