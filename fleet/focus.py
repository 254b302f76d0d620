"""Reading a FOCUS cost and usage CSV (the FinOps Foundation's FinOps Open Cost and Usage
Specification, versions 1.0, 1.1 and 1.2) row by row, checking the spec's rules for the columns
fleetcap reads. Pure Python (no Django): ``fleet.bills`` stores what this yields.

Why our own rules and not the FinOps Foundation's ``focus-validator``: docs/architecture.md,
"Choices and why" (FOCUS bills). The rules below are the spec's for these columns, which did not
change between 1.0 and 1.2:

* mandatory columns (1.0 section 3): ``BilledCost``, ``EffectiveCost``, ``BillingCurrency``,
  ``BillingPeriodStart``, ``BillingPeriodEnd``, ``ChargePeriodStart``, ``ChargePeriodEnd``,
  ``ChargeCategory``, ``ChargeClass``; ``ResourceId`` and ``Tags`` are conditional (present when the
  provider has resources and tags), and at least one of them must be there to match a cluster;
* BilledCost and EffectiveCost: Decimal (Numeric Format: digits, an optional sign, point and
  exponent; no currency symbol, thousands separator or unit), never null;
* BillingCurrency: an ISO 4217 alphabetic code (three capital letters), never null;
* the four periods: Date/Time Format, ISO 8601 in UTC (``2026-06-01T00:00:00Z``; ``+00:00`` and
  fractional seconds accepted), never null; each period's end after its start (ends exclusive);
* ChargeCategory: one of Usage, Purchase, Tax, Credit, Adjustment; ChargeClass: null or Correction;
* Tags: Key-Value Format, a JSON object (or null);
* every cell: no NUL byte or other control character (fleet.inputs), at most ``MAX_CELL_CHARS``.

Rows are numbered as a spreadsheet numbers them: the header is row 1, the first charge row 2.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import IO, Any

from fleet.inputs import CONTROL_CHARACTERS, control_character_message

SPEC_VERSIONS = ("1.0", "1.1", "1.2")
MANDATORY = (
    "BilledCost",
    "EffectiveCost",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
)
#: Conditional columns fleetcap matches clusters by: at least one must be in the file.
MATCHING = ("ResourceId", "Tags")
#: Read when present (never required): what the bill's pages show beside a row.
DESCRIPTIVE = ("ServiceName", "ChargeDescription", "ResourceName")
CHARGE_CATEGORIES = frozenset({"Usage", "Purchase", "Tax", "Credit", "Adjustment"})
CORRECTION = "Correction"
#: The longest cell read (a Tags object of many keys is the longest real one: a few KB).
MAX_CELL_CHARS = 64 * 1024
#: The longest line read (bytes): no real row is near it, and a file of one endless line (or of one
#: line of millions of empty cells) would otherwise be read into memory whole.
MAX_LINE_BYTES = 4 * 1024 * 1024
#: The largest cost a row may hold, in its currency: beyond any real charge, and within the stored
#: column (24 digits, 10 after the point).
MAX_COST = Decimal("1e13")
COST_PLACES = Decimal("1e-10")
#: Cells of more characters than this are not numbers (checked before parsing).
MAX_NUMBER_CHARS = 40

_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,3})?")
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]00:?00)")
_CURRENCY = re.compile(r"[A-Z]{3}")


class FocusError(ValueError):
    """A file that is not a FOCUS bill fleetcap can read: the row (header = 1), the column (or None
    for the whole row or file) and why."""

    def __init__(self, row: int, column: str | None, message: str):
        self.row, self.column, self.message = row, column, message
        where = f"row {row}" + (f", column {column}" if column else "")
        super().__init__(f"{where}: {message}")

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "column": self.column, "message": self.message}


@dataclass(frozen=True, slots=True)
class FocusRow:
    """One charge row as read: values parsed, costs in the row's own currency."""

    row: int
    #: sha256 of the row's cells by column name (column order does not change it).
    content_hash: str
    billed_cost: Decimal
    effective_cost: Decimal
    currency: str
    billing_period_start: datetime
    charge_period_start: datetime
    charge_period_end: datetime
    charge_category: str
    charge_class: str
    resource_id: str
    tags: dict[str, Any]
    service_name: str
    charge_description: str

    @property
    def is_correction(self) -> bool:
        return self.charge_class == CORRECTION


def parse_decimal(text: str, row: int, column: str) -> Decimal:
    text = text.strip()
    if not text:
        raise FocusError(row, column, "Empty: a cost is never null in FOCUS.")
    if len(text) > MAX_NUMBER_CHARS or not _DECIMAL.fullmatch(text):
        raise FocusError(
            row, column, f"{text[:40]!r} is not a FOCUS decimal (digits, sign, point; no symbol or separator)."
        )
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover: the pattern admits only what Decimal reads
        raise FocusError(row, column, f"{text!r} is not a number.") from None
    if abs(value) >= MAX_COST:
        raise FocusError(row, column, f"{text} is beyond any charge ({MAX_COST:,.0f} or more).")
    return value.quantize(COST_PLACES)


def parse_datetime(text: str, row: int, column: str) -> datetime:
    text = text.strip()
    if not text:
        raise FocusError(row, column, "Empty: this period is never null in FOCUS.")
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise FocusError(
            row, column, f"{text[:40]!r} is not a FOCUS date/time (ISO 8601 in UTC, e.g. 2026-06-01T00:00:00Z)."
        )
    y, mo, d, h, mi, s, frac, _tz = match.groups()
    try:
        micro = int((frac or "0").ljust(6, "0")[:6])
        return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s or 0), micro, tzinfo=UTC)
    except ValueError as exc:
        raise FocusError(row, column, f"{text!r} is no date: {exc}.") from None


def parse_tags(text: str, row: int) -> dict[str, Any]:
    text = text.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise FocusError(row, "Tags", "Not JSON: FOCUS writes tags as a JSON object.") from None
    if not isinstance(value, dict):
        raise FocusError(row, "Tags", "Not a JSON object: FOCUS writes tags as key-value pairs.")
    return value


class _Lines:
    """The text of a binary stream line by line, decoded as UTF-8 (a BOM dropped), NUL bytes turned
    into U+0001 so that Python's csv module (which refuses NUL without saying where) reads them into
    their cell, where the cell check names the column; ``nul`` says a NUL was seen."""

    def __init__(self, raw: IO[bytes]):
        self.raw = raw
        self.nul = False
        self.bytes_read = 0
        self.line = 0

    def __iter__(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        while chunk := self.raw.readline(MAX_LINE_BYTES + 1):
            self.bytes_read += len(chunk)
            self.line += 1
            if len(chunk) > MAX_LINE_BYTES:
                raise FocusError(self.line, None, f"A line of more than {MAX_LINE_BYTES:,} bytes (line {self.line}).")
            try:
                text = decoder.decode(chunk)
            except UnicodeDecodeError:
                raise FocusError(self.line, None, "Not UTF-8 text (FOCUS CSV files are UTF-8).") from None
            if "\x00" in text:
                self.nul = True
                text = text.replace("\x00", "\x01")
            yield text


class FocusReader:
    """Iterate a FOCUS CSV (a binary stream) as ``FocusRow``s, in file order; the first problem is a
    ``FocusError`` with its row and column. ``bytes_read`` follows the stream (for progress)."""

    def __init__(self, raw: IO[bytes]):
        self._lines = _Lines(raw)
        self._reader = csv.reader(self._lines, strict=True)
        self.row = 1
        try:
            header = next(self._reader)
        except StopIteration:
            raise FocusError(1, None, "The file is empty: no header row.") from None
        except csv.Error as exc:
            raise FocusError(1, None, f"Not CSV: {exc}.") from None
        self.header = [self._cell(h, "header").strip() for h in header]
        self.index = {name: i for i, name in enumerate(self.header)}
        self.header_problem()

    @property
    def bytes_read(self) -> int:
        return self._lines.bytes_read

    def _cell(self, value: str, column: str) -> str:
        if len(value) > MAX_CELL_CHARS:
            raise FocusError(self.row, column, f"More than {MAX_CELL_CHARS:,} characters.")
        if CONTROL_CHARACTERS.search(value):
            if self._lines.nul and "\x01" in value:
                raise FocusError(self.row, column, "Contains a NUL byte (U+0000).")
            raise FocusError(self.row, column, control_character_message(value) or "A control character.")
        return value

    def header_problem(self) -> None:
        seen: set[str] = set()
        for name in self.header:
            if name in seen:
                raise FocusError(1, name, "The column appears twice in the header.")
            seen.add(name)
        for name in MANDATORY:
            if name not in self.index:
                raise FocusError(1, name, f"Missing: a mandatory FOCUS column (FOCUS {', '.join(SPEC_VERSIONS)}).")
        if not any(name in self.index for name in MATCHING):
            raise FocusError(1, "ResourceId", "Missing, and so is Tags: nothing to match a cluster by.")

    def __iter__(self) -> Iterator[FocusRow]:
        width = len(self.header)
        while True:
            try:
                cells = next(self._reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise FocusError(self.row + 1, None, f"Not CSV: {exc}.") from None
            self.row += 1
            if not cells:
                continue  # a blank line is no row
            if len(cells) != width:
                raise FocusError(self.row, None, f"{len(cells)} cells where the header has {width} columns.")
            yield self._parse([self._cell(v, self.header[i]) for i, v in enumerate(cells)])

    def _get(self, cells: list[str], name: str) -> str:
        i = self.index.get(name)
        return cells[i] if i is not None else ""

    def _parse(self, cells: list[str]) -> FocusRow:
        row = self.row
        digest = hashlib.sha256()
        for name, value in sorted(zip(self.header, cells, strict=True)):
            digest.update(f"{name}\x1f{value}\x1e".encode())
        currency = self._get(cells, "BillingCurrency").strip()
        if not _CURRENCY.fullmatch(currency):
            raise FocusError(row, "BillingCurrency", f"{currency[:20]!r} is not an ISO 4217 currency code (e.g. USD).")
        category = self._get(cells, "ChargeCategory").strip()
        if category not in CHARGE_CATEGORIES:
            raise FocusError(
                row, "ChargeCategory", f"{category[:40]!r} is not one of {', '.join(sorted(CHARGE_CATEGORIES))}."
            )
        charge_class = self._get(cells, "ChargeClass").strip()
        if charge_class not in ("", CORRECTION):
            raise FocusError(row, "ChargeClass", f"{charge_class[:40]!r}: FOCUS allows only null or Correction.")
        periods = {}
        for start, end in (("BillingPeriodStart", "BillingPeriodEnd"), ("ChargePeriodStart", "ChargePeriodEnd")):
            periods[start] = parse_datetime(self._get(cells, start), row, start)
            periods[end] = parse_datetime(self._get(cells, end), row, end)
            if periods[end] <= periods[start]:
                raise FocusError(row, end, f"Not after {start} (a period's end is exclusive).")
        return FocusRow(
            row=row,
            content_hash=digest.hexdigest(),
            billed_cost=parse_decimal(self._get(cells, "BilledCost"), row, "BilledCost"),
            effective_cost=parse_decimal(self._get(cells, "EffectiveCost"), row, "EffectiveCost"),
            currency=currency,
            billing_period_start=periods["BillingPeriodStart"],
            charge_period_start=periods["ChargePeriodStart"],
            charge_period_end=periods["ChargePeriodEnd"],
            charge_category=category,
            charge_class=charge_class,
            resource_id=self._get(cells, "ResourceId").strip(),
            tags=parse_tags(self._get(cells, "Tags"), row) if "Tags" in self.index else {},
            service_name=self._get(cells, "ServiceName").strip()[:200],
            charge_description=self._get(cells, "ChargeDescription").strip()[:500],
        )
