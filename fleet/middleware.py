"""Refuse control characters in the URL (path and query string) of every request, and in the
form bodies of pages, before any view or database sees them (``fleet.inputs`` says which).

This one middleware covers what no serializer or form field sees: slugs in URL paths, query
parameters that views read directly, and filters. A NUL reaching PostgreSQL is a
``DataError`` (a 500), so it must stop here. API bodies are checked by the API's parsers
(``fleet.api.parsers``), which name the field inside the JSON."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.html import escape

from fleet import inputs
from fleet.views.errors import error_body, is_api

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class RefuseControlCharacters:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        errors = self.errors(request)
        if errors:
            if is_api(request):
                return JsonResponse(error_body(400, fields=errors), status=400)
            lines = "".join(f"<li>{escape(name)}: {escape(' '.join(msgs))}</li>" for name, msgs in errors.items())
            return HttpResponseBadRequest(f"<h1>Bad request</h1><ul>{lines}</ul>")
        return self.get_response(request)

    @staticmethod
    def errors(request: HttpRequest) -> dict[str, list[str]]:
        """Parameter name -> message (``path`` for the URL path itself)."""
        errors: dict[str, list[str]] = {}
        message = inputs.control_character_message(request.path)
        if message:
            errors["path"] = [message]
        sources = [request.GET]
        if request.method == "POST" and not is_api(request) and request.content_type in FORM_TYPES:
            sources.append(request.POST)
        for source in sources:
            for name in source:
                values = {name: source.getlist(name)}
                name_problem = inputs.control_character_message(name)
                if name_problem:
                    errors["parameter name"] = ["A parameter name contains a control character."]
                elif found := inputs.control_character_errors(values):
                    errors[name] = [next(iter(found.values()))[0]]
        return errors


#: The health check's path (``fleet/urls.py``), answered whatever the Host header.
HEALTH_PATH = "/healthz"


class HealthCheckAnyHost:
    """Answer ``GET /healthz`` before anything reads the Host header (issue 29): a load balancer probes
    by IP, which ``ALLOWED_HOSTS`` set to the public name refuses with a 400. Only this path is exempt:
    it reads nothing of the request and says only whether the database answers and how many workers
    beat. Placed first in ``MIDDLEWARE``, so no session, CSRF or host check runs for it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == HEALTH_PATH and request.method in ("GET", "HEAD"):
            from fleet.views.health import healthz

            return healthz(request)
        return self.get_response(request)
