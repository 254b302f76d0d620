"""``manage.py ensure_demo_users``: one login per role for trying fleetcap locally.

The password is generated once into ``var/demo-password`` (mode 600) and printed; it is never
a constant in the code. Do not run this on a production instance.

Every demo user is staff, so the admin site is usable with exactly its role's permissions (a
viewer sees it read-only) and agrees with the pages and the API. None is a superuser, so each
login shows its role as the groups define it; ``manage.py createsuperuser`` for managing users.
"""

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from fleet.permissions import ROLES


def demo_password() -> str:
    path = settings.VAR_DIR / "demo-password"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(12))
    return path.read_text().strip()


class Command(BaseCommand):
    help = "Create demo-admin, demo-platform, demo-finance and demo-viewer with a generated password."

    def handle(self, *args, **options):
        groups = {g.name: g for g in Group.objects.filter(name__in=ROLES)}
        if set(groups) != set(ROLES):
            # The migrations create the groups with their permissions; an empty group made here
            # would be a role that may do nothing.
            raise CommandError("The role groups are missing: run `manage.py migrate` first.")
        password = demo_password()
        User = get_user_model()
        for role in ROLES:
            user, created = User.objects.get_or_create(username=f"demo-{role}")
            if created or not user.check_password(password):
                user.set_password(password)
            user.is_staff = True
            user.is_superuser = False
            user.save()
            user.groups.set([groups[role]])
        self.stdout.write(f"Demo logins: demo-admin, demo-platform, demo-finance, demo-viewer / password: {password}")
