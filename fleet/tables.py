"""Sortable, searchable list pages and their CSV, for every app's pages: the query form (``q``,
``sort``, ``page``), the whitelisted orderings, and a CSV response that spreadsheets cannot run.

A list page names its columns once (``Column``: the ``?sort=`` key, the label and the ORM
ordering); the form refuses a sort it does not list (the page then shows the message and the
default order, never a 500), and the search is cleaned by ``fleet.inputs`` like every other input.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlencode

from django import forms
from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from django.http import HttpResponse
from django_filters import FilterSet

from fleet import inputs
from fleet.forms import BoundedIntegerField, labelled_errors

#: Rows per page of a list page (the CSV has every row that matches).
ROWS_PER_PAGE = 25
#: The highest page number a list page reads (a higher one than it has shows its last page).
MAX_PAGES = 1_000_000
#: The longest search a list page accepts.
MAX_SEARCH_CHARS = 100
#: A cell a spreadsheet would read as a formula starts with one of these (OWASP: CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Column:
    """A sortable column: ``?sort=key`` orders by ``order_by``; ``-key`` is that order reversed
    (every field of it, so descending is ascending read backwards)."""

    key: str
    label: str
    order_by: tuple[str, ...]
    numeric: bool = False


class TableForm(forms.Form):
    """A list page's query: ``q`` (search), ``sort`` (a column key, ``-`` for descending) and
    ``page``. Subclasses set ``columns``, ``default_sort`` and ``search_fields``."""

    columns: Sequence[Column] = ()
    default_sort: str = ""
    #: ORM lookups a search matches (case-insensitive, every word somewhere).
    search_fields: Sequence[str] = ()
    #: A search field reaches across a to-many relation: a searched list is made distinct.
    search_distinct: bool = False

    q = forms.CharField(label="Search", required=False, max_length=MAX_SEARCH_CHARS, strip=True)
    sort = forms.CharField(required=False, max_length=40, widget=forms.HiddenInput)
    page = BoundedIntegerField(required=False, min_value=1, max_value=MAX_PAGES, widget=forms.HiddenInput)

    def clean_q(self) -> str:
        value = self.cleaned_data.get("q") or ""
        message = inputs.control_character_message(value)
        if message:
            raise forms.ValidationError(message)
        return value

    def clean_sort(self) -> str:
        value = self.cleaned_data.get("sort") or ""
        if value and value.removeprefix("-") not in self.column_keys():
            raise forms.ValidationError(f"Cannot sort by {value!r}; sort by one of: {', '.join(self.column_keys())}.")
        return value

    @classmethod
    def column_keys(cls) -> list[str]:
        return [c.key for c in cls.columns]

    def value(self, name: str) -> str:
        """A cleaned value, or the default when the input was refused (its error is shown)."""
        if not hasattr(self, "cleaned_data"):
            self.is_valid()
        return self.cleaned_data.get(name) or ("" if name != "sort" else self.default_sort)

    @property
    def current_sort(self) -> str:
        return self.value("sort") or self.default_sort

    def filtered(self, filterset: FilterSet) -> QuerySet:
        """``filterset``'s queryset (a list's filters, ``fleet.filters``), its refused values added to this
        form's errors, so the page shows them above the table beside a refused search and its CSV
        answers 400; a refused filter is left out, as django-filter does."""
        queryset = filterset.qs
        for label, messages in labelled_errors(filterset.form).items():
            for message in messages:
                self.add_error(None, f"{label}: {message}")
        return queryset

    def apply(self, queryset: QuerySet) -> QuerySet:
        """``queryset`` searched and ordered as the form says (refused inputs are left out)."""
        words = self.value("q").split()
        for word in words:
            match = Q()
            for field in self.search_fields:
                match |= Q(**{f"{field}__icontains": word})
            queryset = queryset.filter(match)
        if words and self.search_distinct:
            queryset = queryset.distinct()
        sort = self.current_sort
        column = next((c for c in self.columns if c.key == sort.removeprefix("-")), None)
        if column is None:
            return queryset
        descending = sort.startswith("-")
        return queryset.order_by(*(_flip(f) if descending else f for f in column.order_by))

    def paginate(self, queryset: QuerySet, per_page: int = ROWS_PER_PAGE) -> Page:
        """One page of ``queryset`` (out of range: the last page, as Django's ``get_page``)."""
        return Paginator(queryset, per_page).get_page(self.value("page") or 1)

    def headers(self) -> list[dict]:
        """Each column's header: label, the query that sorts by it (ascending first, then the
        other way when it is the current sort), and its current direction for ``aria-sort``."""
        current = self.current_sort
        q = self.value("q")
        out = []
        for c in self.columns:
            if current == c.key:
                direction, next_sort = "ascending", f"-{c.key}"
            elif current == f"-{c.key}":
                direction, next_sort = "descending", c.key
            else:
                direction, next_sort = "", c.key
            query = _query({"q": q, "sort": next_sort})
            out.append({"key": c.key, "label": c.label, "query": query, "sort": direction, "numeric": c.numeric})
        return out

    def query(self, **extra: str | int) -> str:
        """The current search and sort (no page) as a query string, with ``extra`` added."""
        return _query({"q": self.value("q"), "sort": self.value("sort"), **extra})


def _flip(field: str) -> str:
    return field[1:] if field.startswith("-") else f"-{field}"


def _query(values: dict) -> str:
    return urlencode({k: v for k, v in values.items() if v not in ("", None)})


def safe_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a value starting with ``= + - @`` (or a tab or carriage
    return) gets a leading ``'``. Numbers are written as they are (a negative number stays a number)."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """``header`` and ``rows`` as CSV (Python's csv module; every cell through ``safe_cell``)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([safe_cell(h) for h in header])
    for row in rows:
        writer.writerow([safe_cell(v) for v in row])
    return out.getvalue()


def csv_response(name: str, header: Sequence[str], rows: Iterable[Sequence[object]], on: date) -> HttpResponse:
    """A ``text/csv`` download named ``<name>-<YYYY-MM-DD>.csv``."""
    response = HttpResponse(csv_text(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}-{on:%Y-%m-%d}.csv"'
    return response


def table_context(form: TableForm, page: Page, rows: Sequence[object]) -> dict:
    """What every table partial reads: the form (its errors shown above the table), the headers,
    the page of rows and the current query (for the pager and the CSV link)."""
    return {"table": form, "headers": form.headers(), "page": page, "rows": rows, "table_query": form.query()}


class WorkloadTableForm(TableForm):
    """The workloads list's search (name, slug, team) and sort (by name by default)."""

    columns = (
        Column("name", "Workload", ("name", "slug")),
        Column("team", "Team", ("team", "name")),
        Column("requests", "Requests / day", ("requests_per_day", "name"), numeric=True),
        Column("prompt", "Mean prompt (tokens)", ("mean_prompt_tokens", "name"), numeric=True),
        Column("output", "Mean output (tokens)", ("mean_output_tokens", "name"), numeric=True),
        Column("context", "p95 context (tokens)", ("p95_context_tokens", "name"), numeric=True),
        Column("hit", "Prefix cache hit", ("prefix_cache_hit_rate", "name"), numeric=True),
        Column("concurrency", "Peak concurrency", ("peak_concurrency", "name"), numeric=True),
        Column("ttft", "TTFT SLO (ms)", ("ttft_slo_ms", "name"), numeric=True),
        Column("tpot", "TPOT SLO (ms)", ("tpot_slo_ms", "name"), numeric=True),
    )
    default_sort = "name"
    search_fields = ("name", "slug", "team")
