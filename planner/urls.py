"""Pages of the planner: the fleet's headroom, models, what-if, route, plans, rent vs API, spend, budgets,
decisions, the glossary."""

from django.urls import path

from planner.views import budgets, costs, fleet, glossary, models, plans, prefix_cache, route, whatif

urlpatterns = [
    path("", fleet.fleet, name="fleet"),
    path("fleet.csv", fleet.fleet_csv, name="fleet-csv"),
    path("clusters/<str:slug>/", fleet.cluster_detail, name="cluster"),
    path("deployments/<str:slug>/", fleet.deployment_detail, name="deployment"),
    path("deployments/<str:slug>/calibrate/", fleet.deployment_calibrate, name="deployment-calibrate"),
    path("models/", models.model_list, name="models"),
    path("models/export.csv", models.model_list_csv, name="models-csv"),
    path("models/new/", models.model_form, name="model-new"),
    path("models/import/", models.model_import, name="model-import"),
    path("models/<str:slug>/", models.model_detail, name="model"),
    path("models/<str:slug>/edit/", models.model_form, name="model-edit"),
    path("what-if/", whatif.what_if, name="what-if"),
    path("prefix-cache/", prefix_cache.prefix_cache_page, name="prefix-cache"),
    path("route/", route.route_page, name="route"),
    path("plans/", plans.plan_list, name="plans"),
    path("plans/export.csv", plans.plan_list_csv, name="plans-csv"),
    path("plans/compare/", plans.plan_compare, name="plan-compare"),
    path("plans/start/", plans.plan_start, name="plan-start"),
    path("plans/<uuid:pk>/", plans.plan_detail, name="plan"),
    path("plans/<uuid:pk>/cancel/", plans.plan_cancel, name="plan-cancel"),
    path("plans/<uuid:pk>/deploy/", plans.plan_deploy, name="plan-deploy"),
    path("plans/<uuid:pk>/ranking.csv", plans.plan_ranking_csv, name="plan-ranking-csv"),
    path("rent-vs-api/", costs.rent_vs_api, name="rent-vs-api"),
    path("rent-vs-api/decide/", costs.record_decision, name="record-decision"),
    path("rent-vs-api/recompute/", costs.recompute_breakeven, name="recompute-breakeven"),
    path("spend/", costs.spend, name="spend"),
    path("budgets/new/", budgets.budget_form, name="budget-new"),
    path("budgets/<int:pk>/edit/", budgets.budget_form, name="budget-edit"),
    path("budgets/<int:pk>/delete/", budgets.budget_delete, name="budget-delete"),
    path("decisions/", costs.decisions, name="decisions"),
    path("decisions/export.csv", costs.decisions_csv, name="decisions-csv"),
    path("decisions/<int:pk>/inputs/", costs.decision_inputs, name="decision-inputs"),
    path("decisions/<int:pk>/history/", costs.decision_history, name="decision-history"),
    path("decisions/<int:pk>/supersede/", costs.supersede_decision, name="decision-supersede"),
    path("glossary/", glossary.glossary, name="glossary"),
]
