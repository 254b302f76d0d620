"""Pages of the fleet app. Thin: load rows, render."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.db.models import Count, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, WorkerHeartbeat
from planner.models import ModelSpec, Workload

#: A worker whose heartbeat is older than this is reported as missing.
HEARTBEAT_STALE_AFTER = timedelta(minutes=3)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Overview: counts of every record and the clusters with their GPUs."""
    clusters = Cluster.objects.select_related("sku").annotate(n_deployments=Count("deployments"))
    counts = {
        "SKUs": HardwareSku.objects.count(),
        "Clusters": clusters.count(),
        "Deployments": Deployment.objects.count(),
        "Models": ModelSpec.objects.count(),
        "Workloads": Workload.objects.count(),
        "GPU quotes": GpuQuote.objects.count(),
        "API prices": ApiPrice.objects.count(),
    }
    context = {
        "counts": counts,
        "clusters": clusters,
        "total_nodes": Cluster.objects.aggregate(n=Sum("nodes"))["n"] or 0,
        "workers": _workers(),
    }
    return render(request, "home.html", context)


def _workers() -> list[dict[str, object]]:
    now = timezone.now()
    return [
        {"worker": hb.worker, "last_seen": hb.last_seen, "alive": now - hb.last_seen < HEARTBEAT_STALE_AFTER}
        for hb in WorkerHeartbeat.objects.all()[:20]
    ]


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers: database reachable, and whether a worker beat recently."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as exc:  # any driver error means "not healthy"
        database = f"error: {type(exc).__name__}"
    workers = _workers() if database == "ok" else []
    body = {"database": database, "workers_alive": sum(1 for w in workers if w["alive"])}
    return JsonResponse(body, status=200 if database == "ok" else 503)
