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

import calendar
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
MONTH_HOURS = DEFAULT_DAYS_PER_MONTH * HOURS_PER_DAY
"""The hours of the month every monthly figure outside spend is for (rent vs API, breakevens, decisions,
reviews, a workload's monthly tokens): the seeds' 30-day month, 720 h. Spend uses the calendar month
(``calendar_month_hours``): December 2026 is 744 h."""
MONTH_LABEL = f"{DEFAULT_DAYS_PER_MONTH}-day month, {MONTH_HOURS} h"
"""How pages and the API name that month: "30-day month, 720 h"."""
MAX_DAYS_PER_MONTH = 31
"""The longest calendar month."""


def month_label(days: int = DEFAULT_DAYS_PER_MONTH, hours_per_day: int | float | Decimal = HOURS_PER_DAY) -> str:
    """The month a monthly figure (not spend's) is for: ``"30-day month, 720 h"`` (``MONTH_LABEL``);
    with fewer hours a day, ``"30-day month at 8 h a day, 240 h"``."""
    hours = Decimal(str(hours_per_day))
    if hours == HOURS_PER_DAY:
        return f"{days}-day month, {days * HOURS_PER_DAY} h"
    return f"{days}-day month at {plain(hours)} h a day, {plain(hours * days)} h"


def calendar_month_days(year: int, month: int) -> int:
    """Days of a calendar month: 31 in December, 28 or 29 in February."""
    return calendar.monthrange(year, month)[1]


def calendar_month_hours(year: int, month: int) -> int:
    """Hours of a calendar month, the month spend prices: 744 in December 2026, 720 in June."""
    return calendar_month_days(year, month) * HOURS_PER_DAY


def calendar_month_label(year: int, month: int) -> str:
    """How spend names its month: ``"December 2026, 744 h"``."""
    return f"{calendar.month_name[month]} {year}, {calendar_month_hours(year, month)} h"


CENT = Decimal("0.01")
MILLS = Decimal("0.0001")

Number = int | float | Decimal | str

# --- input limits (docs/sizing.md, "Input limits") --------------------------------------------
# Money is exact ``Decimal`` under the default context (28 significant digits): a figure rounded
# to the cent must stay below 1e26, and a quotient must not overflow. These limits, far beyond any
# real cluster or price, keep every derived figure inside that: rent <= 1e6 GPUs x 24 h x 31 days
# x 10,000 USD = 7.4e15 USD, a breakeven volume <= rent / 1e-6 USD per Mtok x 1e6 < 1e28 tokens.
#: The most GPUs a cluster, a quote or a comparison may have.
MAX_GPUS: int = 1_000_000
#: The highest price per unit (USD per GPU-hour, per million tokens, per GB-month).
MAX_PRICE_USD: int = 10_000
#: The most tokens a month (input, output, capacity) and bytes of weights.
MAX_TOKENS: int = 10**18
#: The fastest decode rate of a whole cluster, tokens per second.
MAX_TOKENS_PER_S: int = 10**12
#: The fastest download, GB/s; and the most months of storage (a century).
MAX_GBYTES_PER_S: int = 10**6
MAX_MONTHS: int = 1200
#: The smallest non-zero price or rate: below it a quotient by it (breakeven, per-dollar figures)
#: would leave what ``Decimal`` holds exactly. Zero stays allowed where the field allows it.
MIN_NONZERO = Decimal("0.000001")
#: Upper bound and smallest non-zero value per field (the last part of a dotted field name;
#: ``rates.<sku>`` is a rate per GPU-hour). Fields not listed have no limit beyond their own checks.
FIELD_LIMITS: dict[str, tuple[int, Decimal | None]] = {
    "gpus": (MAX_GPUS, None),
    "usd_per_gpu_hour": (MAX_PRICE_USD, MIN_NONZERO),
    "input_cache_hit_usd_per_mtok": (MAX_PRICE_USD, MIN_NONZERO),
    "input_cache_miss_usd_per_mtok": (MAX_PRICE_USD, MIN_NONZERO),
    "output_usd_per_mtok": (MAX_PRICE_USD, MIN_NONZERO),
    "usd_per_gb_month": (MAX_PRICE_USD, MIN_NONZERO),
    "monthly_input_tokens": (MAX_TOKENS, None),
    "monthly_output_tokens": (MAX_TOKENS, None),
    "input_tokens": (MAX_TOKENS, None),
    "output_tokens": (MAX_TOKENS, None),
    "capacity_output_tokens_per_month": (MAX_TOKENS, None),
    "weights_bytes": (MAX_TOKENS, None),
    "output_tokens_per_s": (MAX_TOKENS_PER_S, MIN_NONZERO),
    "download_gbytes_per_s": (MAX_GBYTES_PER_S, MIN_NONZERO),
    "months": (MAX_MONTHS, None),
    "rent_usd": (10**16, None),
}


def field_limits(field: str) -> tuple[int | None, Decimal | None]:
    """``(maximum, smallest non-zero)`` of a field (``FIELD_LIMITS``), ``(None, None)`` if it has none."""
    key = "usd_per_gpu_hour" if field.startswith("rates.") else field.rsplit(".", 1)[-1]
    return FIELD_LIMITS.get(key, (None, None))


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
        limit, smallest = field_limits(field)
        if maximum is None:
            maximum = limit
        if maximum is not None and d > maximum:
            self.add(field, f"Must be at most {maximum:,}.")
            return None
        if smallest is not None and d and abs(d) < smallest:
            self.add(field, f"Must be at least {smallest}." if above else f"Must be 0 or at least {smallest}.")
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
        if maximum is None:
            maximum = field_limits(field)[0]
        if isinstance(value, int):
            n: int | Decimal = value
        else:
            d = self.decimal(field, value, minimum=None, maximum=maximum)
            if d is None:
                return None
            if d != d.to_integral_value():
                self.add(field, "Must be a whole number.")
                return None
            n = d  # compared before int(): a huge exponent would make a huge int
        if minimum is not None and n < minimum:
            self.add(field, "Must not be negative." if minimum == 0 else f"Must be at least {minimum}.")
            return None
        if maximum is not None and n > maximum:
            self.add(field, f"Must be at most {maximum:,}.")
            return None
        return int(n)

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
