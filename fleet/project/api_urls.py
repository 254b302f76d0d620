"""``/api/v1/``: the router's API root lists every endpoint; schema and offline Swagger UI."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from fleet.api import views
from fleet.api.bills import BillViewSet, ExchangeRateViewSet
from fleet.api.schema import DocsView, SchemaView
from fleet.api.tokens import ApiTokenViewSet
from planner.api.budgets import BudgetViewSet
from planner.api.calibrations import CalibrationViewSet
from planner.api.costs import BreakevenView, DecisionViewSet, SpendView
from planner.api.estimate import EstimateView
from planner.api.plans import PlanViewSet
from planner.api.prefix_cache import PrefixCacheView
from planner.api.routing import LiteLLMView, RouteView
from planner.api.sizing import SizingView

app_name = "api"


class Router(DefaultRouter):
    """The API root lists the computations (sizing, estimate, breakeven, spend, route) beside the records."""

    EXTRA = {
        "sizing": "sizing",
        "estimate": "estimate",
        "breakeven": "breakeven",
        "spend": "spend",
        "prefix-cache": "prefix-cache",
        "route": "route",
        "route-litellm": "route-litellm",
    }

    def get_api_root_view(self, api_urls=None):
        view = super().get_api_root_view(api_urls)
        view.initkwargs["api_root_dict"].update(self.EXTRA)
        return view


router = Router()
router.register("skus", views.HardwareSkuViewSet, basename="sku")
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("deployments", views.DeploymentViewSet, basename="deployment")
router.register("gpu-quotes", views.GpuQuoteViewSet, basename="gpuquote")
router.register("providers", views.ProviderViewSet, basename="provider")
router.register("api-prices", views.ApiPriceViewSet, basename="apiprice")
router.register("models", views.ModelSpecViewSet, basename="modelspec")
router.register("workloads", views.WorkloadViewSet, basename="workload")
router.register("bills", BillViewSet, basename="cloudbill")
router.register("exchange-rates", ExchangeRateViewSet, basename="exchangerate")
router.register("owned-costs", views.OwnedCostsViewSet, basename="ownedcosts")
router.register("cluster-purchases", views.ClusterPurchaseViewSet, basename="clusterpurchase")
router.register("electricity-prices", views.ElectricityPriceViewSet, basename="electricityprice")
router.register("decisions", DecisionViewSet, basename="decision")
router.register("plans", PlanViewSet, basename="plan")
router.register("calibrations", CalibrationViewSet, basename="calibration")
router.register("budgets", BudgetViewSet, basename="budget")
router.register("tokens", ApiTokenViewSet, basename="apitoken")

urlpatterns = [
    # The contract: public unless FLEETCAP_API_SCHEMA_PUBLIC=0 (then a token or a session), built once per
    # process. The split view serves its script from ?script (no inline script under the CSP).
    path("schema/", SchemaView.as_view(), name="schema"),
    path("docs/", DocsView.as_view(url_name="api:schema"), name="docs"),
    path("sizing/", SizingView.as_view(), name="sizing"),
    path("estimate/", EstimateView.as_view(), name="estimate"),
    path("breakeven/", BreakevenView.as_view(), name="breakeven"),
    path("spend/", SpendView.as_view(), name="spend"),
    path("prefix-cache/", PrefixCacheView.as_view(), name="prefix-cache"),
    path("route/", RouteView.as_view(), name="route"),
    path("route/litellm/", LiteLLMView.as_view(), name="route-litellm"),
    *router.urls,
]
