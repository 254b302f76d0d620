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

# Errors outside DRF's views: JSON of the API's one error shape for /api/, HTML pages elsewhere.
handler400 = "fleet.views.errors.bad_request"
handler403 = "fleet.views.errors.permission_denied"
handler404 = "fleet.views.errors.page_not_found"
handler500 = "fleet.views.errors.server_error"
