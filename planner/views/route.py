"""Route: pick the model (by default the one the fleet serves most) and type a request class, see every
destination ranked with its reasons (the routing advisor, ``planner.routing``). Every change re-renders
the ranking in place (HTMX), each input's error beside it; the URL carries the inputs so a ranking can
be shared. The table shows the ranking a page at a time
(the fleet's every deployment is in it; the API's route answers it whole)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from fleet.errors import FIELD_ERRORS
from fleet.forms import add_service_errors
from fleet.inputs import whole_number
from fleet.tables import ROWS_PER_PAGE
from fleet.views.access import HtmxHttpRequest, is_partial, perms_required
from planner.forms import RouteForm
from planner.routing import route


def compute(form: RouteForm, page: str | None = None) -> dict:
    """Rank a bound form's request class, the table showing ``ROWS_PER_PAGE`` destinations of it (page
    ``page``); a problem goes beside its input, never out as an exception."""
    if not form.is_valid():
        return {}
    try:
        ranked = route(form.to_request())
    except FIELD_ERRORS as exc:
        add_service_errors(form, exc)
        return {}
    shown = Paginator(ranked.result.destinations, ROWS_PER_PAGE).get_page(whole_number(page, max_digits=9) or 1)
    inputs = {k: v for k, v in form.data.items() if k in form.fields and v not in ("", None)}
    return {"ranking": ranked.result, "at": ranked.at, "page": shown, "table_query": urlencode(inputs)}


@perms_required("fleet.view_deployment", "fleet.view_apiprice")
@vary_on_headers("HX-Request")
def route_page(request: HtmxHttpRequest) -> HttpResponse:
    form = RouteForm.from_query(request.GET)
    context = {"form": form, **compute(form, request.GET.get("page"))}
    if is_partial(request):
        return render(request, "planner/_route_result.html", {**context, "oob_errors": True})
    return render(request, "planner/route.html", context)
