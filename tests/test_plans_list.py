"""Issue 30: the plans list page and the API's plans list carry each plan's summary (its best
configuration's headline figures, status, price basis, what was searched) and never read the result
(tens of KB a plan); the result is on the plan itself (its page and ``GET /api/v1/plans/<id>/``)."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from planner import plans as plan_service
from planner.models import Plan
from planner.plans import PlanRequest, create_plan, execute_plan, plan_summary


@pytest.fixture
def done_plan(catalog_and_agent) -> Plan:
    """One real search over every priced SKU (up to 8 nodes each), stored by ``execute_plan``."""
    plan = execute_plan(str(create_plan(PlanRequest(model="kimi-k3", workload="agent"), None).pk))
    assert plan.status == Plan.Status.DONE and plan.result["best"]
    return plan


def test_no_result_no_summary():
    assert plan_summary(None) is None
    assert plan_summary({"best": None, "feasible": 0, "candidates_evaluated": 12}) == {
        "candidates_evaluated": 12,
        "feasible": 0,
        "best": None,
    }


@pytest.mark.django_db
def test_a_finished_search_stores_its_summary_with_its_result(done_plan):
    best, summary = done_plan.result["best"], done_plan.summary
    assert summary == plan_summary(done_plan.result)
    assert summary["feasible"] == done_plan.result["feasible"] > 0
    assert summary["candidates_evaluated"] == done_plan.candidates_evaluated > 0
    for key in ("sku", "mode", "kv_cache_dtype", "gpus", "nodes", "usd_per_gpu_hour", "usd_per_mtok", "tpot_ms"):
        assert summary["best"][key] == best[key]
    assert summary["best"]["layout"] == plan_service.configuration_row(best, {})["layout"]
    assert "decode" not in summary["best"] and "assumptions" not in summary["best"]  # the headline only
    assert len(str(summary)) * 20 < len(str(done_plan.result))


@pytest.mark.django_db
def test_failed_and_cancelled_plans_have_no_summary(catalog_and_agent, monkeypatch):
    cancelled = create_plan(PlanRequest(model="kimi-k3", workload="agent", max_nodes=2), None)
    plan_service.cancel(cancelled)
    monkeypatch.setattr(plan_service, "search", lambda *a, **k: 1 / 0)
    failed = execute_plan(str(create_plan(PlanRequest(model="kimi-k3", workload="agent", max_nodes=2), None).pk))
    assert failed.status == Plan.Status.FAILED and failed.summary is None
    assert Plan.objects.get(pk=cancelled.pk).summary is None


@pytest.mark.django_db
def test_the_migration_backfills_the_summaries_of_stored_results(done_plan):
    """Plans finished before summaries existed get theirs from their result, by the same rule."""
    queued = create_plan(PlanRequest(model="kimi-k3", workload="agent", max_nodes=2), None)
    Plan.objects.update(summary=None)
    migration = importlib.import_module("planner.migrations.0009_plan_summary")
    migration.backfill_summaries(apps, None)
    assert Plan.objects.get(pk=done_plan.pk).summary == plan_summary(done_plan.result)
    assert Plan.objects.get(pk=queued.pk).summary is None
