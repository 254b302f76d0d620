"""Errors raised by the engine for input it cannot work with, and the type checks behind them."""

from __future__ import annotations

import math
from typing import Any


class EngineInputError(ValueError):
    """Bad input, reported per field so the API and forms can show field-level errors.

    ``errors`` maps a field name (or a dotted path such as ``layer_groups.2.kv_heads``) to a
    list of human-readable messages.
    """

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = {k: list(v) for k, v in errors.items()}
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.errors.items()))

    @classmethod
    def single(cls, field: str, message: str) -> EngineInputError:
        return cls({field: [message]})


def is_int(value: Any) -> bool:
    """A whole number (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite int or float (``bool`` excluded)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
