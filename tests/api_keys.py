"""An API token's key for a test user (fleet/tokens.py), in a module of its own as tests/roles.py is."""

from __future__ import annotations

from typing import Any


def api_key(user: Any, scope: str = "write", days: int = 30, name: str = "tests") -> str:
    """A new token of ``user``'s (scope ``write`` by default: what the user's permissions allow) and its key."""
    from fleet.tokens import create_token

    return create_token(user, name=name, scope=scope, days=days).key
