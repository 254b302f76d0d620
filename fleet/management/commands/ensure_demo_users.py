"""``manage.py ensure_demo_users``: one login per role for trying fleetcap locally.

The password is generated once into ``var/demo-password`` (mode 600) and printed; it is never
a constant in the code. Do not run this on a production instance.
"""

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from fleet.roles import ROLES


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
        password = demo_password()
        User = get_user_model()
        for role in ROLES:
            user, created = User.objects.get_or_create(username=f"demo-{role}")
            if created or not user.check_password(password):
                user.set_password(password)
            user.is_staff = role == "admin"
            user.is_superuser = role == "admin"
            user.save()
            user.groups.set([Group.objects.get_or_create(name=role)[0]])
        self.stdout.write(f"Demo logins: demo-admin, demo-platform, demo-finance, demo-viewer / password: {password}")
