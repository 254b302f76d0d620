"""Errors raised by the engine for input it cannot work with."""

from __future__ import annotations


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
