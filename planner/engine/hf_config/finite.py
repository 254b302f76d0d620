"""Non-finite numbers (JSON's ``Infinity``, ``-Infinity``, ``NaN``) in a config.json or an
hf_quant_config.json: real configs carry them (Nemotron-H's ``"time_step_limit": [0.0, Infinity]``).

The rule, in one place: ``finite_config`` replaces each one by ``None`` and says where it was; the
importer then reads the replaced config, so a non-finite number at a key it does not read is
ignored, and one at a key it reads is refused by ``ConfigReader`` as ``config.<key>: Must be a
finite number (got Infinity).`` Nothing non-finite reaches a record, a message or a response.
"""

from __future__ import annotations

import math
from typing import Any

FINITE_MESSAGE = "Must be a finite number (got {value})."


def is_non_finite(value: Any) -> bool:
    """A float that is infinite or NaN."""
    return isinstance(value, float) and not math.isfinite(value)


def spelling(value: float) -> str:
    """How JSON (Python's parser) spells a non-finite number: ``Infinity``, ``-Infinity``, ``NaN``."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def finite_message(value: float) -> str:
    """The refusal of a non-finite number read where a figure is needed."""
    return FINITE_MESSAGE.format(value=spelling(value))


def finite_config(data: Any, path: str = "config") -> tuple[Any, dict[str, str]]:
    """``data`` with every non-finite number replaced by ``None`` (the same object when it holds
    none), and each replaced one's dotted path (list items by index) -> its JSON spelling."""
    found: dict[str, str] = {}
    return _replaced(data, path, found), found


def _replaced(data: Any, path: str, found: dict[str, str]) -> Any:
    if is_non_finite(data):
        found[path] = spelling(data)
        return None
    if isinstance(data, dict):
        items = {key: _replaced(value, f"{path}.{key}", found) for key, value in data.items()}
        return items if any(items[key] is not data[key] for key in data) else data
    if isinstance(data, list):
        values = [_replaced(value, f"{path}.{index}", found) for index, value in enumerate(data)]
        return values if any(new is not old for new, old in zip(values, data, strict=True)) else data
    return data
