"""The API's token authentication: ``Authorization: Token <key>`` or ``Authorization: Bearer <key>``.

The key is one of the API tokens people manage themselves (``fleet/tokens.py``: named, scoped,
expiring, stored hashed; /account/tokens/ and ``tokens/``). Scripts and tools (Swagger UI, Prometheus,
most HTTP clients' "bearer token" option) send ``Bearer``; ``Token`` is DRF's word. Both name the same
token, everywhere the API takes a token (``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]`` and
``GET /metrics``). The schema documents it once, as an HTTP bearer scheme whose description says
``Token`` works too (docs/api.md, "Authentication").

An unknown, expired or revoked key is a 401 saying which; a ``read`` token on an unsafe method is a 403
naming its scope. The scope is enforced here, where the token is known, so no view can forget it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from fleet import tokens

#: The schemes accepted before the key, compared case-insensitively (RFC 9110: the scheme is case-insensitive).
KEYWORDS: tuple[bytes, ...] = (b"token", b"bearer")
#: No key is longer (ours are 47 characters, DRF's migrated ones 40): a longer one is refused unhashed.
MAX_KEY_CHARS = 200


class ApiTokenAuthentication(BaseAuthentication):
    """An API token after ``Token`` or ``Bearer``; anything else is left to the next authenticator.
    ``request.auth`` is the :class:`fleet.models.ApiToken`."""

    keyword = "Bearer"  # the WWW-Authenticate challenge a 401 carries

    def authenticate(self, request: Any) -> Any:
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() not in KEYWORDS:
            return None
        if len(auth) != 2:
            raise exceptions.AuthenticationFailed("Give the token after the scheme: Authorization: Bearer <key>.")
        try:
            key = auth[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("The token holds characters a key never has.") from None
        if len(key) > MAX_KEY_CHARS:
            raise exceptions.AuthenticationFailed("Invalid token.")
        try:
            token = tokens.authenticate_key(key)
        except tokens.TokenRefused as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        if not tokens.allows(token, request.method):
            raise exceptions.PermissionDenied(tokens.scope_refusal(token, request.method))
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The schema's one token scheme (Swagger UI sends ``Bearer <key>``)."""

    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An API token (made at /account/tokens/ or POST /api/v1/tokens/): `Authorization: Bearer <key>` "
                "or, the same, `Authorization: Token <key>`. A `read` token may only GET, HEAD and OPTIONS."
            ),
        }
