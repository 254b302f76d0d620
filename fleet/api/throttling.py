"""API throttles: requests per user (token or session) and per IP address for anonymous ones.

DRF's throttles read their rates once, at import; these read ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``
at each request, so the rates follow the settings (``FLEETCAP_API_THROTTLE_USER`` / ``_ANON``, and tests
that override them). Counts live in the ``default`` cache: Redis shared by every web worker when
``FLEETCAP_CACHE_URL`` is set (docs/operations.md, "Security"). Past the rate DRF answers 429 with
``Retry-After`` (seconds). ``ExpensiveThrottle``: the per-user limits of the expensive requests
(``fleet.rate_limits``, counted with the pages').
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, UserRateThrottle

from fleet import rate_limits


class _SettingsRate:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class UserThrottle(_SettingsRate, UserRateThrottle):
    """Per authenticated user (a token authenticates as its user); anonymous requests by IP address."""


class AnonThrottle(_SettingsRate, AnonRateThrottle):
    """Anonymous requests per IP address (most API views refuse them first: 401/403 is not throttled)."""


class ExpensiveThrottle(ScopedRateThrottle):
    """Per-user limits on the expensive requests: the rule and the counts are ``fleet.rate_limits``'
    (shared with the pages), this only asks it. A view names its scope in ``throttle_scope`` (DRF's
    ``ScopedRateThrottle`` convention; an ``@action(..., throttle_scope=...)`` for one action) and may
    narrow what counts with ``limited(request)`` (a plan's create, not its list; a prefix-cache request
    with a trace). Only POSTs count. Past the limit: 429 with ``Retry-After`` and the limit in ``detail``."""

    def allow_request(self, request: Request, view: Any) -> bool:
        scope = getattr(view, self.scope_attr, None)
        if not scope or request.method != "POST":
            return True
        limited = getattr(view, "limited", None)
        if limited is not None and not limited(request):
            return True
        refusal = rate_limits.take(scope, request.user)
        if refusal is not None:
            raise Throttled(wait=refusal.retry_after_s, detail=refusal.limit)
        return True
