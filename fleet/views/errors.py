"""Error answers outside DRF's views: the one JSON error body (``error_body``, shared with
``fleet.api.errors``) for ``/api/`` paths, Django's HTML error pages for everything else.

Wired as ``handler400/403/404/500`` in ``fleet.project.urls``, so an unknown ``/api/`` URL, an
exception no view caught and a database outage outside a view (a session or token lookup) answer
JSON on the API. A database outage is a 503 with ``Retry-After``, never a 500."""

from __future__ import annotations

import sys
from http import HTTPStatus

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

#: Seconds a client should wait before retrying when the database is unreachable.
DATABASE_RETRY_AFTER_S = 10

#: ``code`` for each status (DRF's exception codes where it has them).
CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    429: "throttled",
    500: "server_error",
    503: "unavailable",
}
MESSAGES = {
    400: "Invalid input.",
    404: "Not found.",
    413: "The request body is too large.",
    500: "Internal error; it has been logged.",
    503: "The database is unreachable; try again shortly.",
}


def error_body(
    status: int, detail: str | None = None, *, code: str | None = None, fields: dict[str, list[str]] | None = None
) -> dict:
    """``{"detail", "code", **fields}``: ``detail`` defaults to the first field's first message."""
    fields = fields or {}
    if detail is None and fields:
        name, messages = next(iter(fields.items()))
        detail = f"{name}: {messages[0]}" if name not in ("non_field_errors", "__all__") else messages[0]
    if detail is None:
        detail = MESSAGES.get(status) or HTTPStatus(status).phrase
    return {"detail": detail, "code": code or CODES.get(status, "error"), **fields}


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def api_error(status: int, detail: str | None = None, **headers: str) -> JsonResponse:
    response = JsonResponse(error_body(status, detail), status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return api_error(400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return api_error(403, "You do not have permission to perform this action.")
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return api_error(404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """Django calls this inside its ``except`` (the exception is logged already)."""
    if isinstance(sys.exc_info()[1], (OperationalError, InterfaceError)):
        if is_api(request):
            return api_error(503, Retry_After=str(DATABASE_RETRY_AFTER_S))
        response = HttpResponse(MESSAGES[503], status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
        return response
    if is_api(request):
        return api_error(500)
    return defaults.server_error(request)
