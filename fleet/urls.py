"""fleet's pages: register and edit clusters and deployments, an owned cluster's running costs and purchases,
the sites' electricity prices; the price book (GPU quotes, API prices)
and the catalogue (SKUs, workloads); records' change history; the pickers' suggestions; one's API tokens;
the health check."""

from django.urls import path

from fleet.pickers import PICKERS
from fleet.views import bills, catalogue, health, history, inventory, owned, pickers, prices, tokens

urlpatterns = [
    path("clusters/new/", inventory.cluster_form, name="cluster-new"),
    path("clusters/<str:slug>/edit/", inventory.cluster_form, name="cluster-edit"),
    path("clusters/<str:slug>/owned-costs/", owned.owned_costs_form, name="owned-costs"),
    path("clusters/<str:slug>/purchases/new/", owned.purchase_form, name="purchase-new"),
    path("clusters/<str:slug>/purchases/<int:pk>/edit/", owned.purchase_form, name="purchase-edit"),
    path("clusters/<str:slug>/purchases/<int:pk>/delete/", owned.purchase_delete, name="purchase-delete"),
    path("electricity-prices/", owned.electricity_price_list, name="electricity-prices"),
    path("electricity-prices/new/", owned.electricity_price_form, name="electricity-price-new"),
    path("electricity-prices/<int:pk>/edit/", owned.electricity_price_form, name="electricity-price-edit"),
    path("electricity-prices/<int:pk>/delete/", owned.electricity_price_delete, name="electricity-price-delete"),
    path("deployments/new/", inventory.deployment_form, name="deployment-new"),
    path("deployments/<str:slug>/edit/", inventory.deployment_form, name="deployment-edit"),
    path("quotes/", prices.quote_list, name="gpu-quotes"),
    path("quotes/new/", prices.quote_form, name="gpu-quote-new"),
    path("quotes/<int:pk>/edit/", prices.quote_form, name="gpu-quote-edit"),
    path("quotes/<int:pk>/delete/", prices.quote_delete, name="gpu-quote-delete"),
    path("api-prices/", prices.api_price_list, name="api-prices"),
    path("api-prices/new/", prices.api_price_form, name="api-price-new"),
    path("api-prices/<str:slug>/edit/", prices.api_price_form, name="api-price-edit"),
    path("api-prices/<str:slug>/delete/", prices.api_price_delete, name="api-price-delete"),
    path("skus/", catalogue.sku_list, name="skus"),
    path("skus/new/", catalogue.sku_form, name="sku-new"),
    path("skus/<str:slug>/edit/", catalogue.sku_form, name="sku-edit"),
    path("skus/<str:slug>/delete/", catalogue.sku_delete, name="sku-delete"),
    path("workloads/", catalogue.workload_list, name="workloads"),
    path("workloads/new/", catalogue.workload_form, name="workload-new"),
    path("workloads/<str:slug>/edit/", catalogue.workload_form, name="workload-edit"),
    path("workloads/<str:slug>/delete/", catalogue.workload_delete, name="workload-delete"),
    path("bills/", bills.bill_list, name="bills"),
    path("bills/upload/", bills.bill_upload, name="bill-upload"),
    path("bills/<uuid:pk>/", bills.bill_detail, name="bill"),
    path("history/<str:kind>/<str:key>/", history.record_history, name="history"),
    *(path(f"pick/{p.kind}/", pickers.suggestions_view(p), name=p.url_name) for p in PICKERS.values()),
    path("account/tokens/", tokens.token_list, name="api-tokens"),
    path("account/tokens/<int:pk>/revoke/", tokens.token_revoke, name="api-token-revoke"),
    path("healthz", health.healthz, name="healthz"),
]
