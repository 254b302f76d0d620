"""planner's records: rent-versus-API decisions and layout-search plans."""

from .decisions import Decision, ImmutableRecordError
from .plans import Plan

__all__ = ["Decision", "ImmutableRecordError", "Plan"]
