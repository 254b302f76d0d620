"""The API's token authentication: ``Authorization: Token <key>`` or ``Authorization: Bearer <key>``.

DRF's ``TokenAuthentication`` takes one keyword (``Token``); scripts and tools (Swagger UI, Prometheus,
most HTTP clients' "bearer token" option) send ``Bearer``. Both name the same DRF token, everywhere the
API takes a token (``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]`` and ``GET /metrics``). The schema
documents it once, as an HTTP bearer scheme whose description says ``Token`` works too (docs/api.md,
"Authentication").
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header

#: The schemes accepted before the key, compared case-insensitively (RFC 9110: the scheme is case-insensitive).
KEYWORDS: tuple[bytes, ...] = (b"token", b"bearer")


class ApiTokenAuthentication(TokenAuthentication):
    """A DRF token after ``Token`` or ``Bearer``; anything else is left to the next authenticator."""

    keyword = "Bearer"  # the WWW-Authenticate challenge a 401 carries

    def authenticate(self, request: Any) -> Any:
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() not in KEYWORDS:
            return None
        if len(auth) != 2:
            raise exceptions.AuthenticationFailed("Give the token after the scheme: Authorization: Bearer <key>.")
        try:
            key = auth[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("The token holds characters a key never has.") from None
        return self.authenticate_credentials(key)


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The schema's one token scheme (Swagger UI sends ``Bearer <key>``)."""

    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token: `Authorization: Bearer <key>` or, the same, `Authorization: Token <key>`.",
        }
