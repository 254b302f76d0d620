"""``manage.py create_service_account NAME --role viewer|platform|finance [--token-days N] [--scope read|write]``:
a user without a usable password (it cannot log in to the pages) in that role's group, and one API token
of its own, whose key is printed this once (fleet/tokens.py, ``create_service_account``). More tokens, or
a new one when this expires: an admin revokes at /account/tokens/; this command makes a new account."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from fleet import tokens
from fleet.errors import FIELD_ERRORS, describe


class Command(BaseCommand):
    help = "Create a service account (no password) in a role, and print one API token for it, once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="The account's username.")
        parser.add_argument("--role", required=True, choices=tokens.SERVICE_ROLES)
        parser.add_argument(
            "--token-days",
            type=int,
            default=None,
            help=f"Days the token lives (default {tokens.DEFAULT_SERVICE_DAYS}).",
        )
        parser.add_argument("--scope", choices=["read", "write"], default="read")

    def handle(self, *args, **options) -> None:
        try:
            new = tokens.create_service_account(
                options["name"], role=options["role"], days=options["token_days"], scope=options["scope"]
            )
        except FIELD_ERRORS as exc:
            raise CommandError(describe(exc)) from None
        token = new.token
        self.stderr.write(
            f"Service account {token.user.username} ({options['role']}) created; token {token.name!r}, scope "
            f"{token.scope}, expires {token.expires:%Y-%m-%d %H:%M} UTC. The key below is shown this once:"
        )
        # The key alone on stdout, so a script can capture it: KEY=$(manage.py create_service_account ...).
        self.stdout.write(new.key)
