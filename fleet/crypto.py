"""Symmetric encryption for secrets stored in the database (endpoint API keys).

Fernet (AES-128-CBC + HMAC-SHA256) with several keys (``MultiFernet``), so a key can be rotated:
``FIELD_ENCRYPTION_KEYS`` (``FLEETCAP_FIELD_ENCRYPTION_KEYS``, comma separated, newest first),
then the single ``FIELD_ENCRYPTION_KEY`` of older set-ups, then a key derived from ``SECRET_KEY``
(what encrypted everything stored before any key was set). The first key encrypts; any of them
decrypts. Each configured value is key material, not a Fernet key: the Fernet key is derived from it.

Rotation: put the new value first in ``FLEETCAP_FIELD_ENCRYPTION_KEYS``, restart every process,
run ``manage.py rotate_endpoint_keys`` (re-encrypts with the new key), then drop the old value.

A token no key opens raises :class:`UndecryptableSecret`: it is never read as "no key".
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class UndecryptableSecret(Exception):
    """A stored secret that none of the configured keys decrypts (its key was rotated away or lost).

    The message never contains the token or a key."""

    def __init__(self, message: str = "stored API key cannot be decrypted; re-enter it"):
        super().__init__(message)


def _fernet_for(material: str) -> Fernet:
    key = base64.urlsafe_b64encode(hashlib.sha256(f"fleetcap-field:{material}".encode()).digest())
    return Fernet(key)


def key_materials() -> list[str]:
    """The configured key values, in the order they are tried (the first encrypts)."""
    materials = [*settings.FIELD_ENCRYPTION_KEYS, settings.FIELD_ENCRYPTION_KEY, settings.SECRET_KEY]
    return list(dict.fromkeys(m for m in materials if m))


def _fernet() -> MultiFernet:
    return MultiFernet([_fernet_for(m) for m in key_materials()])


def encrypt(plaintext: str) -> str:
    """Encrypt a secret for storage with the newest key; the empty string stays empty."""
    if not plaintext:
        return ""
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt a stored secret with whichever key opens it; ``""`` only for an empty token.

    Raises :class:`UndecryptableSecret` when no configured key opens it."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise UndecryptableSecret() from None


def rotate(token: str) -> str:
    """The same secret encrypted with the newest key (``MultiFernet.rotate``); ``""`` stays ``""``.

    Raises :class:`UndecryptableSecret` when no configured key opens it."""
    if not token:
        return ""
    try:
        return _fernet().rotate(token.encode()).decode()
    except InvalidToken:
        raise UndecryptableSecret() from None
