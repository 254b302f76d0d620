"""fleet's pages: register and edit clusters and deployments; the price book (GPU quotes, API prices)
and the catalogue (SKUs, workloads); records' change history; the pickers' suggestions; one's API tokens;
the health check."""

from django.urls import path

from fleet.pickers import PICKERS
from fleet.views import bills, catalogue, health, history, inventory, pickers, prices, tokens

urlpatterns = [
    path("clusters/new/", inventory.cluster_form, name="cluster-new"),
    path("clusters/<str:slug>/edit/", inventory.cluster_form, name="cluster-edit"),
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
