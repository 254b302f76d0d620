"""The fleet page: clusters and deployments with live status and headroom, filterable."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpResponse
from django.shortcuts import render

from fleet.filters import ClusterFilter
from fleet.headroom import headroom
from fleet.models import Cluster, Deployment, HardwareSku, WorkerHeartbeat

from .access import HtmxHttpRequest, is_partial


@login_required
def fleet(request: HtmxHttpRequest) -> HttpResponse:
    """Full page, or only the table when HTMX refreshes it (every few seconds)."""
    deployments = Deployment.objects.select_related("cluster__sku", "model").order_by("slug")
    clusters = ClusterFilter(
        request.GET,
        queryset=Cluster.objects.select_related("sku").prefetch_related(Prefetch("deployments", deployments)),
    ).qs
    rows = []
    for cluster in clusters:
        rows.append({"cluster": cluster, "deployments": headroom(cluster.deployments.all())})
    context = {"rows": rows, "filters": request.GET}
    if is_partial(request):
        return render(request, "fleet/_fleet_table.html", context)
    context |= {
        "teams": Cluster.objects.order_by("team").values_list("team", flat=True).distinct(),
        "providers": Cluster.objects.order_by("provider").values_list("provider", flat=True).distinct(),
        "skus": HardwareSku.objects.values_list("slug", "name"),
        "statuses": Cluster.Status.choices,
        "workers": WorkerHeartbeat.objects.all()[:10],
    }
    return render(request, "fleet/fleet.html", context)
