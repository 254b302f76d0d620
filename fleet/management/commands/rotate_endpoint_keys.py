"""``manage.py rotate_endpoint_keys``: re-encrypt every stored endpoint API key with the newest key.

After putting a new value first in ``FLEETCAP_FIELD_ENCRYPTION_KEYS`` (and restarting every
process, so that all of them can read what this writes), run this; then the old value can be
dropped from the list. Idempotent. Keys no configured key decrypts are left as they are and named
(the command then exits with an error): they must be re-entered. No key is ever printed.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from fleet import crypto
from fleet.models import Deployment


class Command(BaseCommand):
    help = "Re-encrypt stored endpoint API keys with the first of FLEETCAP_FIELD_ENCRYPTION_KEYS."

    def handle(self, *args, **options) -> None:
        rotated, unreadable = 0, []
        with transaction.atomic():
            rows = (
                Deployment.objects.select_for_update()
                .exclude(api_key_encrypted="")
                .only("pk", "slug", "api_key_encrypted")
            )
            for deployment in rows.order_by("pk"):
                try:
                    token = crypto.rotate(deployment.api_key_encrypted)
                except crypto.UndecryptableSecret:
                    unreadable.append(deployment.slug)
                    continue
                Deployment.objects.filter(pk=deployment.pk).update(api_key_encrypted=token)
                rotated += 1
        self.stdout.write(f"re-encrypted {rotated} endpoint API key(s) with the newest key")
        if unreadable:
            raise CommandError(
                f"{len(unreadable)} stored key(s) cannot be decrypted with any configured key and were left "
                f"as they are; re-enter them: {', '.join(unreadable)}"
            )
