"""API error shapes: field errors stay 400, protected deletes become 409, never a 500 for bad input."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from fleet.errors import ConflictError, InputError
from planner.engine import EngineInputError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ProtectedError):
        names = sorted({str(obj) for obj in exc.protected_objects})[:10]
        return Response(
            {"detail": "Other records still use this one; remove or reassign them first.", "used_by": names},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, ConflictError):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, (EngineInputError, InputError)):
        return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
