"""A picker's suggestions (``fleet.pickers``): ``GET /pick/<kind>/?q=`` answers the buttons htmx puts under
its input (``_pick_options.html``), at most ``fleet.pickers.SUGGESTIONS``, to users who may read those
records (their Django view permission); a search over ``MAX_QUERY_CHARS`` is a 400."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from fleet import inputs
from fleet.pickers import MAX_QUERY_CHARS, SUGGESTIONS, Picker

from .access import View, perms_required


class PickQueryForm(forms.Form):
    """The search text: ``q``, or else the one parameter sent (an htmx input sends its own value under
    its field's name, e.g. ``?deployment=k3``)."""

    q = forms.CharField(label="Search", required=False, max_length=MAX_QUERY_CHARS, strip=True)

    @classmethod
    def of(cls, request: HttpRequest) -> PickQueryForm:
        params = request.GET
        if "q" not in params and len(params) == 1:
            params = {"q": next(iter(params.values()))}
        return cls(params)

    def clean_q(self) -> str:
        value = self.cleaned_data["q"]
        if message := inputs.control_character_message(value):
            raise forms.ValidationError(message)
        return value


def suggestions_view(picker: Picker) -> View:
    """The suggestions endpoint of ``picker``, behind its records' view permission (anonymous: to log in)."""

    def suggestions(request: HttpRequest) -> HttpResponse:
        form = PickQueryForm.of(request)
        if not form.is_valid():
            return render(request, "_pick_options.html", {"picker": picker, "errors": form.errors["q"]}, status=400)
        found = picker.suggestions(form.cleaned_data["q"], limit=SUGGESTIONS + 1)
        context = {"picker": picker, "options": found[:SUGGESTIONS], "more": len(found) > SUGGESTIONS}
        return render(request, "_pick_options.html", context)

    suggestions.__name__ = suggestions.__qualname__ = f"pick_{picker.kind}"
    return perms_required(picker.permission)(suggestions)
