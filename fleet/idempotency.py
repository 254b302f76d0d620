"""Idempotent writes for retries: a POST to ``/api/v1/`` with an ``Idempotency-Key`` header is answered
once; a retry with the same key by the same caller gets the first answer again (status, body, ``Location``;
``Idempotent-Replayed: true``) instead of a duplicate or a 400, for ``IDEMPOTENCY_TTL_S`` (a day).

The key belongs to the authenticated caller (``IdempotentRequest``, unique per user and key): the caller is
authenticated first, by the API's own authenticators, so a replay is never served to anyone else nor
without credentials, and a key reused for a different request (method, path or body) is refused (422).
A retry while the first is still being answered gets 409; a 5xx answer is not kept (the retry runs again).
Why not ``drf-idempotency`` (docs/architecture.md, "Choices and why"): its keys are global and its
middleware replays before authentication.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.settings import api_settings

from fleet.models import IdempotentRequest

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
KEY = re.compile(r"^[A-Za-z0-9._~:-]{1,255}\Z")
#: The paths whose POSTs take a key.
PREFIX = "/api/v1/"


def ttl() -> timedelta:
    """How long a first answer is kept for retries (``IDEMPOTENCY_TTL_S``, default a day)."""
    return timedelta(seconds=getattr(settings, "IDEMPOTENCY_TTL_S", 86400))


def _caller(request: HttpRequest) -> object | None:
    """The user the API's authenticators find for ``request`` (None: anonymous or refused: the view answers)."""
    drf = Request(request)
    for authenticator in api_settings.DEFAULT_AUTHENTICATION_CLASSES:
        try:
            found = authenticator().authenticate(drf)
        except APIException:
            return None
        if found is not None:
            return found[0]
    return None


def _fingerprint(request: HttpRequest) -> str:
    digest = hashlib.sha256()
    for part in (request.method or "", request.get_full_path(), ""):
        digest.update(part.encode() + b"\n")
    digest.update(request.body)
    return digest.hexdigest()


def _problem(status: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail, HEADER: [detail]}, status=status)


def _replay(row: IdempotentRequest) -> HttpResponse:
    response = HttpResponse(bytes(row.body), status=row.status_code, content_type=row.content_type or None)
    if row.location:
        response["Location"] = row.location
    response[HEADER] = row.key
    response[REPLAYED] = "true"
    return response


class IdempotencyMiddleware:
    """The module's rule, for every POST under ``/api/v1/`` that carries the header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        key = request.headers.get(HEADER)
        if key is None or request.method != "POST" or not request.path.startswith(PREFIX):
            return self.get_response(request)
        if not KEY.match(key):
            return _problem(400, "An Idempotency-Key is 1-255 letters, digits or '-._~:'.")
        user = _caller(request)
        if user is None:
            return self.get_response(request)  # the view answers 401/403: nothing to keep
        fingerprint = _fingerprint(request)
        now = timezone.now()
        IdempotentRequest.objects.filter(user=user, created__lt=now - ttl()).delete()
        try:
            with transaction.atomic():
                row = IdempotentRequest.objects.create(user=user, key=key, fingerprint=fingerprint)
        except IntegrityError:
            row = IdempotentRequest.objects.filter(user=user, key=key).first()
            if row is None:  # deleted between the two: a concurrent retry's failure; try once more
                return _problem(409, "A request with this Idempotency-Key was just retried; retry it again.")
            if row.fingerprint != fingerprint:
                return _problem(422, "This Idempotency-Key was used for a different request; use a new key.")
            if not row.done:
                return _problem(409, "A request with this Idempotency-Key is still being answered; retry shortly.")
            return _replay(row)
        try:
            response = self.get_response(request)
        except Exception:
            row.delete()
            raise
        if response.status_code >= 500 or response.streaming:
            row.delete()
            return response
        row.done, row.status_code = True, response.status_code
        row.content_type = response.get("Content-Type", "")[:100]
        row.location = response.get("Location", "")[:500]
        row.body = response.content
        row.save(update_fields=["done", "status_code", "content_type", "location", "body"])
        response[HEADER] = key
        response[REPLAYED] = "false"
        return response
