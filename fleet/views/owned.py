"""An owned cluster's costs as pages: its running costs (one record per cluster), its purchases (add,
edit, delete) and the sites' electricity prices (list, add, edit, delete). What they cost is the
engine's (``fleet.owned``), shown on the cluster's page (planner/views/fleet.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from fleet.forms import ClusterPurchaseForm, ElectricityPriceForm, OwnedCostsForm
from fleet.models import Cluster, ClusterPurchase, ElectricityPrice, OwnedCosts

from .access import add_or_change_required, perms_required, record_delete_page, record_form_page


def _cluster(slug: str) -> Cluster:
    return get_object_or_404(Cluster.objects.select_related("sku"), slug=slug)


@login_required
def owned_costs_form(request: HttpRequest, slug: str) -> HttpResponse:
    """The cluster's running costs: added (``add_ownedcosts``) when it has none, else edited (``change_``)."""
    cluster = _cluster(slug)
    costs = OwnedCosts.objects.filter(cluster=cluster).first()
    perm = "fleet.change_ownedcosts" if costs else "fleet.add_ownedcosts"

    @perms_required(perm)
    def page(request: HttpRequest) -> HttpResponse:
        return record_form_page(
            request,
            OwnedCostsForm,
            costs or OwnedCosts(cluster=cluster),
            title=f"Running costs of {cluster.name}",
            saved=lambda c: (f"Running costs of {cluster.name} saved.", reverse("cluster", args=[cluster.slug])),
            cancel="fleet",
            cancel_url=reverse("cluster", args=[cluster.slug]),
        )

    return page(request)


@add_or_change_required("fleet", "clusterpurchase", key="pk")
def purchase_form(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    cluster = _cluster(slug)
    purchase = get_object_or_404(ClusterPurchase, cluster=cluster, pk=pk) if pk else ClusterPurchase(cluster=cluster)
    back = reverse("cluster", args=[cluster.slug])
    return record_form_page(
        request,
        ClusterPurchaseForm,
        purchase,
        title=f"Edit a purchase of {cluster.name}" if pk else f"Add a purchase of {cluster.name}",
        saved=lambda p: (f"Purchase saved: {p}.", back),
        cancel="fleet",
        cancel_url=back,
    )


@perms_required("fleet.delete_clusterpurchase")
def purchase_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    purchase = get_object_or_404(ClusterPurchase.objects.select_related("cluster"), cluster__slug=slug, pk=pk)
    back = reverse("cluster", args=[slug])
    return record_delete_page(request, purchase, back=back, done=back)


@perms_required("fleet.view_electricityprice")
def electricity_price_list(request: HttpRequest) -> HttpResponse:
    """Every site's electricity prices, newest first, with the owned clusters whose running costs name the site."""
    prices = list(ElectricityPrice.objects.order_by("site", "-valid_from"))
    clusters: dict[str, list[Cluster]] = {}
    for costs in OwnedCosts.objects.select_related("cluster").order_by("cluster__name"):
        clusters.setdefault(costs.site, []).append(costs.cluster)
    priced = {p.site for p in prices}
    rows = [{"price": p, "clusters": clusters.get(p.site, [])} for p in prices]
    missing = {site: named for site, named in clusters.items() if site not in priced}
    return render(request, "fleet/electricity_prices.html", {"rows": rows, "missing": missing})


@add_or_change_required("fleet", "electricityprice")
def electricity_price_form(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    price = get_object_or_404(ElectricityPrice, pk=pk) if pk else None
    return record_form_page(
        request,
        ElectricityPriceForm,
        price,
        title=f"Edit {price}" if price else "Add an electricity price",
        saved=lambda p: (f"Electricity price saved: {p}.", reverse("electricity-prices")),
        cancel="electricity-prices",
        initial=None if price else {"site": request.GET.get("site", "")[:100]},
    )


@perms_required("fleet.delete_electricityprice")
def electricity_price_delete(request: HttpRequest, pk: int) -> HttpResponse:
    price = get_object_or_404(ElectricityPrice, pk=pk)
    back = reverse("electricity-prices")
    return record_delete_page(request, price, back=back, done=back)
