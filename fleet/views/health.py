"""``/healthz`` for load balancers and monitors.

The status code says whether this web process can serve (200, or 503 when the database is
unreachable): a load balancer takes a node out on it. The body also says whether the background
work runs (``polling``: ``ok``, ``stopped`` when beat's last poll cycle started more than twice its
interval ago, ``never``; ``workers_alive``), summed up as ``status``: ``ok``, ``degraded`` (web up,
background work not) or ``unhealthy``. A stopped beat keeps the 200: taking every web node out
because beat stopped would turn a stale dashboard into an outage; a monitor alerts on ``status``.
"""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse

from fleet.models import WorkerHeartbeat
from fleet.models.ops import polling_state


def healthz(request: HttpRequest) -> JsonResponse:
    """Database reachable (else 503), how many workers beat recently, and whether poll cycles run."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        workers = WorkerHeartbeat.alive().count()
        polling = polling_state()
    except Exception as exc:  # any driver error means "not healthy"
        body = {"status": "unhealthy", "database": f"error: {type(exc).__name__}", "workers_alive": 0}
        return JsonResponse(body | {"polling": "unknown", "last_poll_cycle": None}, status=503)
    return JsonResponse(
        {
            "status": "ok" if polling.ok and workers else "degraded",
            "database": "ok",
            "workers_alive": workers,
            "polling": polling.state,
            "last_poll_cycle": polling.last_cycle.isoformat() if polling.last_cycle else None,
            "poll_cycle_limit_s": polling.limit_s,
            "detail": polling.sentence() or ("" if workers else "No Celery worker has beaten recently."),
        }
    )
