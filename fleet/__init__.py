"""fleetcap's Django project package, inventory and live state of the fleet."""

from .celery import app as celery_app

__all__ = ("celery_app",)
