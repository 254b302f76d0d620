"""Top-level URLs: pages, Django auth at /accounts/, the admin, and the API at /api/v1/."""

from django.contrib import admin
from django.urls import include, path

from fleet.views import health, inventory, overview

urlpatterns = [
    path("", overview.fleet, name="fleet"),
    path("clusters/new/", inventory.cluster_form, name="cluster-new"),
    path("clusters/<str:slug>/", inventory.cluster_detail, name="cluster"),
    path("clusters/<str:slug>/edit/", inventory.cluster_form, name="cluster-edit"),
    path("deployments/new/", inventory.deployment_form, name="deployment-new"),
    path("deployments/<str:slug>/", inventory.deployment_detail, name="deployment"),
    path("deployments/<str:slug>/edit/", inventory.deployment_form, name="deployment-edit"),
    path("", include("planner.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("fleet.api.urls")),
]
