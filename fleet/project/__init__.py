"""The Django project: settings, the URL map, the API router, the Celery app and WSGI.

This is the composition root: the one place that knows both apps (``fleet`` for the stored
records and live state, ``planner`` for modelling); the apps never import it.
"""

from .celery import app as celery_app

__all__ = ("celery_app",)
