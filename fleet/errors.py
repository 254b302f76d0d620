"""Domain errors raised by services (fleet's and planner's), independent of DRF and forms.

The API's exception handler (``fleet.api.errors``) turns them into 400 / 409 responses and
page forms put their messages beside the fields (``fleet.forms.add_service_errors``). The
engine's ``EngineInputError`` has the same shape (``errors``: field -> messages).
"""

from __future__ import annotations

from planner.engine import EngineInputError


class InputError(ValueError):
    """Bad input, reported per field: ``errors`` maps a field name (``__all__`` for the whole
    request) to a list of human-readable messages."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = {k: list(v) for k, v in errors.items()}
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.errors.items()))

    @classmethod
    def single(cls, field: str, message: str) -> InputError:
        return cls({field: [message]})


class ConflictError(Exception):
    """The request is well formed but conflicts with stored state (answered 409)."""


#: Every error that carries field names: catch these at a front door (form, command, API handler).
FIELD_ERRORS = (InputError, EngineInputError)


def describe(exc: InputError | EngineInputError) -> str:
    """One line for a shell: ``field: message; other: message``."""
    return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.errors.items())
