"""The fleet page: clusters and deployments with live status and headroom, filterable, paginated."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpResponse
from django.shortcuts import render

from fleet.filters import ClusterFilter
from fleet.headroom import headroom
from fleet.models import Cluster, Deployment, HardwareSku, WorkerHeartbeat

from .access import HtmxHttpRequest, is_partial

#: Clusters per page. The table refreshes every few seconds, so it must stay cheap to render.
CLUSTERS_PER_PAGE = 25


@login_required
def fleet(request: HtmxHttpRequest) -> HttpResponse:
    """Full page, or only the table when HTMX refreshes it (every few seconds)."""
    deployments = Deployment.objects.select_related("model").defer(
        "created", "updated", "api_key_encrypted", "poll_lease_until", "model__source", "model__assumptions"
    )
    clusters = ClusterFilter(request.GET, queryset=Cluster.objects.select_related("sku")).qs
    page = Paginator(clusters, CLUSTERS_PER_PAGE).get_page(request.GET.get("page"))
    shown = list(page.object_list.prefetch_related(Prefetch("deployments", deployments.order_by("slug"))))
    # One headroom pass over every deployment on the page shares one engine object per model.
    rows = headroom([d for c in shown for d in c.deployments.all()])
    by_cluster: dict[int, list] = {}
    for row in rows:
        by_cluster.setdefault(row.deployment.cluster_id, []).append(row)
    context = {
        "rows": [{"cluster": c, "deployments": by_cluster.get(c.pk, [])} for c in shown],
        "page": page,
        "filters": request.GET,
        "query": request.GET.copy(),
    }
    context["query"].pop("page", None)
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
