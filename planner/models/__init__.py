"""planner's records: model specifications and workloads."""

from .specs import ModelSpec
from .workloads import Workload

__all__ = ["ModelSpec", "Workload"]
