"""planner's records: model specifications, workloads and decisions."""

from .decisions import Decision, ImmutableRecordError
from .plans import Plan
from .specs import ModelSpec
from .workloads import Workload

__all__ = ["Decision", "ImmutableRecordError", "ModelSpec", "Plan", "Workload"]
