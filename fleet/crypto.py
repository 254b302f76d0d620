"""Symmetric encryption for secrets stored in the database (endpoint API keys).

Fernet (AES-128-CBC + HMAC-SHA256) keyed by ``FIELD_ENCRYPTION_KEY`` or, when that is
unset, by a key derived from ``SECRET_KEY``. Rotating the secret key without setting
``FLEETCAP_FIELD_ENCRYPTION_KEY`` makes stored API keys unreadable: they must be re-entered.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def _fernet() -> Fernet:
    material = settings.FIELD_ENCRYPTION_KEY or settings.SECRET_KEY
    key = base64.urlsafe_b64encode(hashlib.sha256(f"fleetcap-field:{material}".encode()).digest())
    return Fernet(key)


def encrypt(plaintext: str) -> str:
    """Encrypt a secret for storage; the empty string stays empty."""
    if not plaintext:
        return ""
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt a stored secret; an unreadable token (key rotated) gives the empty string."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""
