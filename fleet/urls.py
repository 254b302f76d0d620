"""Top-level URLs: pages, Django auth at /accounts/, the admin, and the API at /api/v1/."""

from django.contrib import admin
from django.urls import include, path

from fleet import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("fleet.api.urls")),
]
