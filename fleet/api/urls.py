"""``/api/v1/``: the router's API root lists every endpoint; schema and offline Swagger UI."""

from django.contrib.auth.decorators import login_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import IsAuthenticated
from rest_framework.routers import DefaultRouter

from planner.api import views as planner_views
from planner.api.sizing import SizingView

from . import views

app_name = "api"

router = DefaultRouter()
router.register("skus", views.HardwareSkuViewSet, basename="sku")
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("deployments", views.DeploymentViewSet, basename="deployment")
router.register("gpu-quotes", views.GpuQuoteViewSet, basename="gpuquote")
router.register("api-prices", views.ApiPriceViewSet, basename="apiprice")
router.register("models", planner_views.ModelSpecViewSet, basename="modelspec")
router.register("workloads", planner_views.WorkloadViewSet, basename="workload")

urlpatterns = [
    # The schema needs a login like the rest of the API; the Swagger UI page sends people to log in.
    path("schema/", SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]), name="schema"),
    path("docs/", login_required(SpectacularSwaggerView.as_view(url_name="api:schema")), name="docs"),
    path("sizing/", SizingView.as_view(), name="sizing"),
    *router.urls,
]
