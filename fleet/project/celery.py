"""The Celery application: Django settings under the ``CELERY_`` namespace, tasks autodiscovered."""

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

from fleet.broker import ALIAS

# filesystem:// is kombu's filesystem transport with whole message files (fleet/broker.py), registered
# before any connection resolves the scheme.
TRANSPORT_ALIASES[ALIAS[0]] = ALIAS[1]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.project.settings")

app = Celery("fleet")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
