"""API tokens people manage themselves (issue 27): named, scoped, expiring, stored hashed.

The key is shown once when the token is created (``fleet.tokens.create_token``); the row keeps the
SHA-256 of the key and its first characters (``lookup``), so a request's key finds its row by an index
and is then compared digest to digest. Revoking keeps the row (``revoked_at``): a revoked key is refused
as revoked, not as unknown, and the list shows who had which token.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "read (GET, HEAD, OPTIONS only)"
        WRITE = "write", "write (every method the user's permissions allow)"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.READ)
    #: The key's first characters (``fleet.tokens.LOOKUP_CHARS``): found by index, never shown.
    lookup = models.CharField(max_length=16, db_index=True)
    #: SHA-256 of the whole key, hex.
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    expires = models.DateTimeField()
    #: Updated at most once a minute per token (``fleet.tokens.LAST_USED_EVERY_S``).
    last_used = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.user}, {self.scope})"

    @property
    def state(self) -> str:
        """``revoked``, ``expired`` or ``active``."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires <= timezone.now():
            return "expired"
        return "active"
