"""Top-level URLs: both apps' pages, Django auth at /accounts/, the admin, the API at /api/v1/, and
/metrics (our figures for Prometheus, Bearer token: planner/api/metrics.py)."""

from django.contrib import admin
from django.urls import include, path

from planner.api.metrics import MetricsView

urlpatterns = [
    path("", include("fleet.urls")),
    path("", include("planner.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("fleet.project.api_urls")),
    path("metrics", MetricsView.as_view(), name="metrics"),
]
