"""Searchable pickers for the records that grow with the fleet (deployments, clusters, workloads): a
form names one by its slug in a text input instead of a ``<select>`` of them all (issue 30).

``PickField`` is the form field: a text input and, under it, the suggestions htmx asks ``/pick/<kind>/``
for as the user types (at most ``SUGGESTIONS`` buttons: ``fleet/views/pickers.py``); choosing one puts its
slug in the input (``static/js/pickers.js``). Without script it is a plain text field taking the slug.
Either way the server checks the slug and says "No deployment named 'x'." beside the input; the cleaned
value is the slug (``instance=True``: the record), as the ``<select>`` it replaces gave.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.db.models import Case, IntegerField, Model, Q, QuerySet, Value, When
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from fleet.models import Cluster, Deployment, Workload
from fleet.models.base import SLUG_MAX_CHARS

#: The most suggestions one answer holds (type more to narrow them).
SUGGESTIONS = 20
#: The longest search the endpoint takes (a record's name is at most 100 characters).
MAX_QUERY_CHARS = 100
#: Longer typed text is cut to this in an error message.
SHOWN_CHARS = 40


@dataclass(frozen=True)
class Picker:
    """One kind of record a form can pick: its URL segment (``/pick/<kind>/``), what it is called,
    the fields a search matches (substrings, case-insensitive) and each suggestion's label."""

    kind: str
    noun: str
    model: type[Model]
    search_fields: Sequence[str]
    label: Callable[[Any], str]
    related: Sequence[str] = ()
    #: The longest text its input takes (``maxlength``): a search, or a slug.
    max_chars = MAX_QUERY_CHARS

    @property
    def permission(self) -> str:
        """The Django model permission reading these records needs (and so asking for suggestions)."""
        meta = self.model._meta
        return f"{meta.app_label}.view_{meta.model_name}"

    @property
    def url_name(self) -> str:
        return f"pick-{self.kind}"

    def url(self) -> str:
        return reverse(self.url_name)

    def records(self) -> QuerySet:
        return self.model.objects.select_related(*self.related)

    def suggestions(self, query: str, limit: int = SUGGESTIONS) -> list[tuple[str, str]]:
        """At most ``limit`` ``(slug, label)``: every word of ``query`` somewhere in a searched field;
        slugs starting with the query first, then by slug (an empty query: the first by slug)."""
        records = self.records()
        words = query.split()
        for word in words:
            match = Q()
            for name in self.search_fields:
                match |= Q(**{f"{name}__icontains": word})
            records = records.filter(match)
        if words:
            starts = Case(
                When(slug__istartswith=query.strip(), then=Value(0)), default=Value(1), output_field=IntegerField()
            )
            records = records.annotate(slug_starts=starts).order_by("slug_starts", "slug")
        else:
            records = records.order_by("slug")
        return [(r.slug, self.label(r)) for r in records[:limit]]

    def find(self, slug: str) -> Model | None:
        """The record of ``slug`` (None: no such record, or text no slug can be)."""
        if len(slug) > SLUG_MAX_CHARS:
            return None
        return self.records().filter(slug=slug).first()

    def unknown(self, text: str) -> str:
        shown = text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}…"
        return f"No {self.noun} named '{shown}'."


PICKERS = {
    p.kind: p
    for p in (
        Picker(
            "deployments",
            "deployment",
            Deployment,
            ("slug", "model__name", "cluster__name"),
            lambda d: f"{d.model.name} on {d.cluster.name}",
            related=("model", "cluster"),
        ),
        Picker("clusters", "cluster", Cluster, ("slug", "name", "team"), lambda c: f"{c.name} ({c.team})"),
        Picker("workloads", "workload", Workload, ("slug", "name", "team"), lambda w: f"{w.name} ({w.team})"),
    )
}


class PickInput(forms.TextInput):
    """A text input with its suggestions under it (``templates/_pick_input.html``, also what
    ``templates/_inline_field.html`` renders for it)."""

    def __init__(self, picker: Picker, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.picker = picker

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        final = self.build_attrs(self.attrs, attrs)
        context = {
            "name": name,
            "id": final.get("id") or f"id_{name}",
            "value": self.format_value(value) or "",
            "picker": self.picker,
            "placeholder": final.get("placeholder", ""),
        }
        return render_to_string("_pick_input.html", context)


class PickField(forms.CharField):
    """A record picked by its slug (``Picker``): the cleaned value is the slug, or the record with
    ``instance=True`` (a ModelForm's foreign key); blank is ``""`` (or None). An unknown slug is a
    field error ("No deployment named 'x'."), never a 500."""

    def __init__(self, kind: str, *, instance: bool = False, placeholder: str = "slug or name", **kwargs: Any) -> None:
        self.picker = PICKERS[kind]
        self.instance = instance
        kwargs.setdefault("widget", PickInput(self.picker, attrs={"placeholder": placeholder}))
        kwargs.setdefault("max_length", self.picker.max_chars)  # what the input takes: a search or a slug
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        """What the input shows: a slug (a record or a ModelForm's initial primary key made one)."""
        if isinstance(value, Model):
            return value.slug
        if isinstance(value, int):
            return self.picker.model.objects.filter(pk=value).values_list("slug", flat=True).first() or ""
        return value

    def clean(self, value: Any) -> Any:
        slug = super().clean(value)
        if slug in self.empty_values:
            return None if self.instance else ""
        record = self.picker.find(slug)
        if record is None:
            raise forms.ValidationError(self.picker.unknown(slug), code="unknown")
        return record if self.instance else record.slug

    def has_changed(self, initial: Any, data: Any) -> bool:
        return str(self.prepare_value(initial) or "") != str(data or "").strip()
