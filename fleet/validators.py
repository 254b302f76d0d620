"""Reusable field validators with messages a person can act on."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError


def positive(value: float | int | Decimal) -> None:
    """Strictly greater than zero."""
    if value is not None and value <= 0:
        raise ValidationError("Must be greater than zero.", code="not_positive")


def non_negative(value: float | int | Decimal) -> None:
    if value is not None and value < 0:
        raise ValidationError("Must not be negative.", code="negative")


def fraction(value: float | Decimal) -> None:
    """A fraction between 0 and 1 inclusive."""
    if value is not None and not (0 <= value <= 1):
        raise ValidationError("Must be a fraction between 0 and 1.", code="not_fraction")


def utilisation(value: float) -> None:
    """A memory utilisation: greater than 0, at most 1."""
    if value is not None and not (0 < value <= 1):
        raise ValidationError("Must be greater than 0 and at most 1.", code="not_utilisation")


def hours_per_day(value: Decimal) -> None:
    if value is not None and not (0 < value <= 24):
        raise ValidationError("Hours per day must be greater than 0 and at most 24.", code="bad_hours")


#: Input modalities a model may take (``planner.engine.MODALITIES`` holds the same names).
MODALITIES = ("text", "image", "audio", "video")


def modalities(value: str) -> None:
    """A comma-separated list of input modalities, each one of ``MODALITIES``, at least one."""
    names = [part.strip() for part in (value or "").split(",")]
    unknown = [name for name in names if name not in MODALITIES]
    if not value or unknown:
        raise ValidationError(
            f"Give one or more of {', '.join(MODALITIES)}, separated by commas.", code="bad_modalities"
        )
