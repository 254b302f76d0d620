"""API throttles: requests per user (token or session) and per IP address for anonymous ones.

DRF's throttles read their rates once, at import; these read ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``
at each request, so the rates follow the settings (``FLEETCAP_API_THROTTLE_USER`` / ``_ANON``, and tests
that override them). Counts live in the ``default`` cache: Redis shared by every web worker when
``FLEETCAP_CACHE_URL`` is set (docs/operations.md, "Security"). Past the rate DRF answers 429 with
``Retry-After`` (seconds).
"""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class _SettingsRate:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class UserThrottle(_SettingsRate, UserRateThrottle):
    """Per authenticated user (a token authenticates as its user); anonymous requests by IP address."""


class AnonThrottle(_SettingsRate, AnonRateThrottle):
    """Anonymous requests per IP address (most API views refuse them first: 401/403 is not throttled)."""
