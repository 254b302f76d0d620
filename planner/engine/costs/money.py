"""Money helpers shared by the cost modules (formulas, breakeven, quotes, spend): exact ``Decimal``
arithmetic, field-level validation and the JSON rendering of amounts.

Conventions (docs/costs.md):

- Money is ``decimal.Decimal`` in USD. Prices per million tokens are ``*_usd_per_mtok``; GPU rental
  rates are ``usd_per_gpu_hour``.
- Token counts are ``int``. GPU-hours are ``Decimal`` (exact: hours per day may be fractional,
  e.g. ``Decimal("4.5")``).
- Functions return exact ``Decimal`` values; result dataclasses hold values rounded half-up to
  the precision given below, and ``to_dict()`` renders every ``Decimal`` as a string with that
  many decimals (the same convention as Django REST framework's ``DecimalField``), so JSON never
  carries binary-float noise: USD 2 decimals, USD per Mtok and per GPU-hour 4, GPU-hours and
  minutes 2, fractions (hit rate, utilisation) 4.
- Floats given as input (a hit rate of ``0.9`` from a ``FloatField``) are converted through
  ``str()``, so ``0.9`` becomes ``Decimal("0.9")`` and not ``0.90000000000000002220...``.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from ..errors import EngineInputError
from ..units import HOURS_PER_DAY, TOKENS_PER_MTOK

MTOK = Decimal(TOKENS_PER_MTOK)
"""Tokens in one million tokens (the unit of API prices), as a ``Decimal`` for exact money."""
DEFAULT_DAYS_PER_MONTH = 30
"""The seeds' month: 30 days = 720 hours."""
MAX_DAYS_PER_MONTH = 31
"""The longest calendar month."""

CENT = Decimal("0.01")
MILLS = Decimal("0.0001")

Number = int | float | Decimal | str


def quantize(value: Decimal | None, exp: Decimal = CENT) -> Decimal | None:
    """Round half-up to ``exp`` (``CENT`` by default); ``None`` stays ``None``."""
    if value is None:
        return None
    return value.quantize(exp, rounding=ROUND_HALF_UP)


def usd(value: Decimal | None) -> Decimal | None:
    """USD rounded to the cent."""
    return quantize(value, CENT)


def fine(value: Decimal | None) -> Decimal | None:
    """Rates (USD per Mtok, USD per GPU-hour) and fractions, rounded to 4 decimals."""
    return quantize(value, MILLS)


def dec_str(value: Decimal | None, exp: Decimal = CENT) -> str | None:
    """JSON rendering of a Decimal: a string with a fixed number of decimals, or ``None``."""
    q = quantize(value, exp)
    return None if q is None else str(q)


def round_int(value: Decimal) -> int:
    """Nearest whole number, halves away from zero (token counts)."""
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def as_day(value: date | datetime) -> date:
    """The calendar day of a date or datetime (a datetime keeps its own wall-clock date)."""
    return value.date() if isinstance(value, datetime) else value


def plain(value: Decimal | int) -> str:
    """A number without trailing zeros or exponent, for sentences: ``Decimal("720.00")`` -> ``"720"``."""
    text = format(Decimal(value).normalize(), "f")
    return text


def price_text(value: Decimal) -> str:
    """A price for sentences, at least 2 decimals: ``Decimal("0.3")`` -> ``"0.30"``, ``0.5725`` stays."""
    cents = value.quantize(CENT, rounding=ROUND_HALF_UP)
    return str(cents) if cents == value else plain(value)


def millions(tokens: int | Decimal) -> str:
    """``545454545`` -> ``"545.5M"`` (for verdict sentences)."""
    m = Decimal(tokens) / MTOK
    return f"{m:,.1f}M"


def usd_text(value: Decimal) -> str:
    """``Decimal("14400")`` -> ``"14,400.00 USD"`` (for verdict sentences)."""
    return f"{quantize(value, CENT):,.2f} USD"


class Fields:
    """Collects field-level errors, then raises one ``EngineInputError`` for all of them."""

    def __init__(self, prefix: str = "") -> None:
        self.errors: dict[str, list[str]] = {}
        self.prefix = prefix

    def add(self, field: str, message: str) -> None:
        """Record ``message`` against ``field`` (once)."""
        messages = self.errors.setdefault(self.prefix + field, [])
        if message not in messages:
            messages.append(message)

    def raise_if_any(self) -> None:
        """Raise one ``EngineInputError`` with every recorded problem, if any."""
        if self.errors:
            raise EngineInputError(self.errors)

    def decimal(
        self,
        field: str,
        value: Any,
        *,
        minimum: Decimal | int | None = 0,
        above: bool = False,
        maximum: Decimal | int | None = None,
        optional: bool = False,
    ) -> Decimal | None:
        """``value`` as a Decimal, checked against ``minimum`` (``> minimum`` when ``above``) and
        ``maximum`` (inclusive). Returns ``None`` (with an error recorded) when it is unusable."""
        if value is None:
            if not optional:
                self.add(field, "This field is required.")
            return None
        if isinstance(value, bool):
            self.add(field, "Must be a number.")
            return None
        try:
            if isinstance(value, float):
                if not math.isfinite(value):
                    raise InvalidOperation
                d = Decimal(str(value))
            else:
                d = Decimal(value)
        except (InvalidOperation, TypeError, ValueError):
            self.add(field, "Must be a number.")
            return None
        if not d.is_finite():
            self.add(field, "Must be a finite number.")
            return None
        if minimum is not None:
            if above and d <= minimum:
                self.add(field, "Must be greater than zero." if minimum == 0 else f"Must be greater than {minimum}.")
                return None
            if not above and d < minimum:
                self.add(field, "Must not be negative." if minimum == 0 else f"Must be at least {minimum}.")
                return None
        if maximum is not None and d > maximum:
            self.add(field, f"Must be at most {maximum}.")
            return None
        return d

    def integer(
        self,
        field: str,
        value: Any,
        *,
        minimum: int | None = 0,
        maximum: int | None = None,
        optional: bool = False,
    ) -> int | None:
        """``value`` as an int (an integral Decimal or float is accepted), within the bounds."""
        if value is None:
            if not optional:
                self.add(field, "This field is required.")
            return None
        if isinstance(value, bool):
            self.add(field, "Must be a whole number.")
            return None
        if isinstance(value, int):
            n = value
        else:
            d = self.decimal(field, value, minimum=None)
            if d is None:
                return None
            if d != d.to_integral_value():
                self.add(field, "Must be a whole number.")
                return None
            n = int(d)
        if minimum is not None and n < minimum:
            self.add(field, "Must not be negative." if minimum == 0 else f"Must be at least {minimum}.")
            return None
        if maximum is not None and n > maximum:
            self.add(field, f"Must be at most {maximum}.")
            return None
        return n

    def fraction(self, field: str, value: Any, *, optional: bool = False) -> Decimal | None:
        """A fraction between 0 and 1 inclusive (cache hit rate, utilisation)."""
        d = self.decimal(field, value, minimum=None, optional=optional)
        if d is not None and not (0 <= d <= 1):
            self.add(field, "Must be a fraction between 0 and 1.")
            return None
        return d

    def hours_per_day(self, field: str, value: Any) -> Decimal | None:
        """Hours switched on per day: greater than 0, at most 24."""
        d = self.decimal(field, value, minimum=None)
        if d is not None and not (0 < d <= HOURS_PER_DAY):
            self.add(field, "Hours per day must be greater than 0 and at most 24.")
            return None
        return d
