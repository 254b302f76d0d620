"""``/healthz`` for load balancers."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse

from fleet.models import WorkerHeartbeat


def healthz(request: HttpRequest) -> JsonResponse:
    """Database reachable (else 503), and how many workers beat recently."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any driver error means "not healthy"
        return JsonResponse({"database": f"error: {type(exc).__name__}", "workers_alive": 0}, status=503)
    return JsonResponse({"database": "ok", "workers_alive": WorkerHeartbeat.alive().count()})
