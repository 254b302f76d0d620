"""fleet's pages: register and edit clusters and deployments; records' change history; the health check."""

from django.urls import path

from fleet.views import health, history, inventory

urlpatterns = [
    path("clusters/new/", inventory.cluster_form, name="cluster-new"),
    path("clusters/<str:slug>/edit/", inventory.cluster_form, name="cluster-edit"),
    path("deployments/new/", inventory.deployment_form, name="deployment-new"),
    path("deployments/<str:slug>/edit/", inventory.deployment_form, name="deployment-edit"),
    path("history/<str:kind>/<str:key>/", history.record_history, name="history"),
    path("healthz", health.healthz, name="healthz"),
]
