"""Every API error as one JSON shape (docs/api.md, "Errors"):

``{"detail": "<what went wrong>", "code": "<machine-readable>", "<field>": ["<message>", ...], ...}``

``detail`` and ``code`` are always there; a 400 about the input adds each field's messages beside
them, nested fields as dotted paths (``breakeven.gpus``, ``skus.0``, ``layer_groups.1.kv_heads``);
a 409 for a protected delete adds ``used_by``. Field errors stay 400, protected deletes and
conflicts 409, a database outage 503 with ``Retry-After``; never a 500 for bad input. Errors
raised outside DRF's views (unknown URLs, uncaught exceptions) get the same body from
``fleet.views.errors`` for ``/api/`` paths.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.db.models import ProtectedError
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from fleet.errors import ConflictError, InputError
from fleet.views.errors import DATABASE_RETRY_AFTER_S, error_body
from planner.engine import EngineInputError

log = logging.getLogger(__name__)

#: What a lost or refused database connection raises (a restart, an outage): 503, try again.
DATABASE_DOWN = (OperationalError, InterfaceError)


def flatten(detail: Any, path: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail (dicts, lists of messages, lists of dicts) as dotted paths."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            out.update(flatten(value, f"{path}.{key}" if path else str(key)))
        return out
    if isinstance(detail, (list, tuple)):
        if all(not isinstance(item, (dict, list, tuple)) for item in detail):
            return {path or "non_field_errors": [str(item) for item in detail]} if detail else {}
        out = {}
        for index, item in enumerate(detail):
            if isinstance(item, (dict, list, tuple)):
                out.update(flatten(item, f"{path}.{index}" if path else str(index)))
            else:
                out.setdefault(path or "non_field_errors", []).append(str(item))
        return out
    return {path or "non_field_errors": [str(detail)]}


def field_errors_response(fields: dict[str, list[str]], status_code: int = 400) -> Response:
    """A 400 naming each field (``detail`` summarises the first)."""
    return Response(error_body(status_code, fields=fields), status=status_code)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = _response_for(exc, context)
    if response is not None:
        # An error is JSON whatever was asked for (a CSV export's error too).
        request = context.get("request")
        if request is not None:
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
    return response


def _response_for(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ProtectedError):
        names = sorted({str(obj) for obj in exc.protected_objects})[:10]
        body = error_body(409, "Other records still use this one; remove or reassign them first.")
        return Response({**body, "used_by": names}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, ConflictError):
        return Response(error_body(409, str(exc)), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return field_errors_response(flatten(detail))
    if isinstance(exc, (EngineInputError, InputError)):
        return field_errors_response(flatten(exc.errors))
    if isinstance(exc, RequestDataTooBig):
        return Response(error_body(413), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, DATABASE_DOWN):
        log.error("database unreachable: %s", type(exc).__name__)
        return Response(
            error_body(503),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)},
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # uncaught: Django's handler500 answers (fleet.views.errors), after logging it
    if isinstance(exc, exceptions.ValidationError):
        response.data = error_body(400, fields=flatten(exc.detail))
    else:
        detail = response.data.get("detail") if isinstance(response.data, dict) else None
        code = getattr(exc, "default_code", None)
        if isinstance(exc, exceptions.APIException) and isinstance(exc.detail, exceptions.ErrorDetail):
            code = exc.detail.code or code
        response.data = error_body(response.status_code, str(detail) if detail else None, code=code)
    return response
