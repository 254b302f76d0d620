"""Route: type a request class, see every destination ranked with its reasons (the routing advisor,
``planner.routing``). Every change re-renders the ranking in place (HTMX), each input's error beside
it; the URL carries the inputs so a ranking can be shared."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from fleet.errors import FIELD_ERRORS
from fleet.forms import add_service_errors
from fleet.views.access import HtmxHttpRequest, is_partial, perms_required
from planner.forms import RouteForm
from planner.routing import route


def _form(request: HtmxHttpRequest) -> RouteForm:
    """Bound to the URL's inputs, or to the page's example when the URL names none."""
    if any(name in request.GET for name in RouteForm.base_fields):
        return RouteForm({k: v for k, v in request.GET.items() if v != ""})
    return RouteForm(RouteForm.EXAMPLE)


def compute(form: RouteForm) -> dict:
    """Rank a bound form's request class; a problem goes beside its input, never out as an exception."""
    if not form.is_valid():
        return {}
    try:
        ranked = route(form.to_request())
    except FIELD_ERRORS as exc:
        add_service_errors(form, exc)
        return {}
    return {"ranking": ranked.result, "at": ranked.at}


@perms_required("fleet.view_deployment", "fleet.view_apiprice")
@vary_on_headers("HX-Request")
def route_page(request: HtmxHttpRequest) -> HttpResponse:
    form = _form(request)
    context = {"form": form, **compute(form)}
    if is_partial(request):
        return render(request, "planner/_route_result.html", {**context, "oob_errors": True})
    return render(request, "planner/route.html", context)
