"""Issue 30: the plans list page and the API's plans list carry each plan's summary (its best
configuration's headline figures, status, price basis, what was searched) and never read the result
(tens of KB a plan); the result is on the plan itself (its page and ``GET /api/v1/plans/<id>/``)."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.models import HardwareSku
from planner import plans as plan_service
from planner.engine import OUTCOMES
from planner.models import Plan
from planner.models.plans import PRICE_BASIS_NAMES
from planner.plans import PlanRequest, create_plan, execute_plan, labelled_result, plan_summary

#: What a query that reads the result column says (SQLite and PostgreSQL quote alike).
RESULT_COLUMN = '"planner_plan"."result"'
#: The most the plans page may weigh with 50 plans (issue 30: 880 KB a page with each plan's result).
PAGE_BYTES = 50 * 1024
#: The most the API's list of 50 plans may weigh: about 1 KB a plan (what it searched, its SKUs, its
#: best configuration's figures); 2.4 MB with each plan's result.
API_LIST_BYTES = 64 * 1024


@pytest.fixture
def done_plan(catalog_and_agent) -> Plan:
    """One real search over every priced SKU (up to 8 nodes each), stored by ``execute_plan``."""
    plan = execute_plan(str(create_plan(PlanRequest(model="kimi-k3", workload="agent"), None).pk))
    assert plan.status == Plan.Status.DONE and plan.result["best"]
    return plan


@pytest.fixture
def fifty_plans(done_plan) -> list[Plan]:
    """The real plan and 49 done copies of it (result, summary, SKUs), as bench/pages_data.py stores them."""
    copies = Plan.objects.bulk_create(
        Plan(
            model=done_plan.model,
            workload=done_plan.workload,
            options=done_plan.options,
            status=Plan.Status.DONE,
            progress=100,
            progress_log=done_plan.progress_log,
            candidates_evaluated=done_plan.candidates_evaluated,
            result=done_plan.result,
            summary=done_plan.summary,
            started=done_plan.started,
            finished=done_plan.finished,
        )
        for _ in range(49)
    )
    skus = list(done_plan.skus.all())
    Plan.skus.through.objects.bulk_create(
        Plan.skus.through(plan_id=p.pk, hardwaresku_id=s.pk) for p in copies for s in skus
    )
    return [done_plan, *copies]


def _reads_the_result(ctx: CaptureQueriesContext) -> bool:
    return any(RESULT_COLUMN in q["sql"] for q in ctx.captured_queries)


def test_no_result_no_summary():
    assert plan_summary(None) is None
    assert plan_summary({"best": None, "feasible": 0, "candidates_evaluated": 12}) == {"feasible": 0, "best": None}


@pytest.mark.django_db
def test_a_finished_search_stores_its_summary_with_its_result(done_plan):
    best, summary = done_plan.result["best"], done_plan.summary
    assert summary == plan_summary(done_plan.result, done_plan.options["prices"])
    # The best's price basis is its SKU's price as the plan priced it; "why" says it in one line.
    assert summary["best"]["price_basis"] == done_plan.options["prices"][best["sku"]]["basis"] in ("own", "list")
    lead = f"{OUTCOMES['best']}: {summary['best']['layout']} on {best['gpus']} x {best['sku']}, "
    assert summary["best"]["why"].startswith(lead)
    assert f"TPOT {best['tpot_ms']:,.1f} ms" in summary["best"]["why"]
    assert summary["feasible"] == done_plan.result["feasible"] > 0
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


@pytest.mark.django_db
def test_the_api_list_of_fifty_plans_carries_their_summaries_not_their_results(viewer_api, fifty_plans):
    with CaptureQueriesContext(connection) as ctx:
        r = viewer_api.get("/api/v1/plans/?page_size=50")
    assert r.status_code == 200
    rows = r.json()["results"]
    assert len(rows) == 50 and not _reads_the_result(ctx)
    assert not {"result", "options", "progress_log"} & {key for row in rows for key in row}
    plan = fifty_plans[0]
    for row in rows:
        assert row["status"] == "done" and row["summary"] == plan.summary
        assert row["request"] == {
            "max_nodes": 8,
            "kv_cache_dtypes": ["bf16", "fp8"],
            "modes": ["aggregated", "disaggregated"],
            "on": plan.options["on"],
            "price_basis": "fleet",
        }
        assert set(row["skus"]) == set(plan.options["prices"])
    assert len(r.content) < API_LIST_BYTES, len(r.content)
    with CaptureQueriesContext(connection) as few:
        viewer_api.get("/api/v1/plans/?page_size=5")
    assert len(few.captured_queries) <= len(ctx.captured_queries)  # permissions cached after the first


@pytest.mark.django_db
def test_the_plan_itself_carries_its_result(viewer_api, done_plan):
    with CaptureQueriesContext(connection) as ctx:
        body = viewer_api.get(f"/api/v1/plans/{done_plan.pk}/").json()
    assert _reads_the_result(ctx)  # the check above sees a query that reads it
    assert body["result"] == labelled_result(done_plan.result) and body["summary"] == done_plan.summary
    assert body["options"] == done_plan.options and body["progress_log"] == done_plan.progress_log
    assert body["request"]["price_basis"] == "fleet"


@pytest.mark.django_db
def test_queued_and_failed_plans_list_without_a_summary(viewer_api, catalog_and_agent, monkeypatch):
    create_plan(PlanRequest(model="kimi-k3", workload="agent", max_nodes=2, price_basis="list"), None)
    monkeypatch.setattr(plan_service, "search", lambda *a, **k: 1 / 0)
    execute_plan(str(create_plan(PlanRequest(model="kimi-k3", workload="agent", max_nodes=2), None).pk))
    rows = viewer_api.get("/api/v1/plans/").json()["results"]
    assert [(r["status"], r["summary"], r["request"]["price_basis"]) for r in rows] == [
        ("failed", None, "fleet"),
        ("queued", None, "list"),
    ]
    assert "Unexpected error" in rows[0]["error"]


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url, headers",
    [
        ("/plans/", {}),
        ("/plans/?page=2", {}),
        ("/plans/?sort=-usd", {"HTTP_HX_REQUEST": "true"}),
        ("/plans/export.csv", {}),
    ],
)
def test_the_plans_page_of_fifty_plans_shows_their_summaries_in_under_50_kb(viewer, fifty_plans, url, headers):
    with CaptureQueriesContext(connection) as ctx:
        r = viewer.get(url, **headers)
    assert r.status_code == 200
    assert len(r.content) < PAGE_BYTES, len(r.content)
    assert not _reads_the_result(ctx)
    best = fifty_plans[0].summary["best"]
    text = r.content.decode()
    if url.endswith(".csv"):
        assert text.count(best["layout"]) == 50
        return
    assert len(r.context["rows"]) == 25 and text.count('name="plan"') == 25  # 25 rows a page, of 50
    sku = f'<span title="{best["sku"]}">{HardwareSku.objects.get(slug=best["sku"]).name}</span>'
    headline = f"{best['gpus']} \u00d7 {sku} · {best['mode']} · {best['kv_cache_dtype']} KV · {best['layout']}"
    assert text.count(headline) == 25 and text.count(f">{best['usd_per_mtok']:.2f}</td>") == 25
    assert text.count(f">{PRICE_BASIS_NAMES['fleet']}</td>") == 25 and 'data-sort-key="usd"' in text


@pytest.mark.django_db
def test_the_plans_page_sorts_by_the_best_configurations_figures(viewer, done_plan):
    """Cheapest first (USD/Mtok, TPOT and the best configuration: from the stored summary); a plan
    whose search found nothing within the SLOs says so, an unfinished one shows nothing yet."""
    best = done_plan.summary["best"]
    cheaper = Plan.objects.create(
        model=done_plan.model,
        workload=done_plan.workload,
        options={**done_plan.options, "price_basis": "list"},
        status=Plan.Status.DONE,
        summary={"feasible": 3, "best": {**best, "usd_per_mtok": best["usd_per_mtok"] / 2, "tpot_ms": 99.0}},
    )
    none_fit = Plan.objects.create(
        model=done_plan.model,
        workload=done_plan.workload,
        options=done_plan.options,
        status=Plan.Status.DONE,
        summary={"feasible": 0, "best": None},
    )
    queued = create_plan(PlanRequest(model="kimi-k3", workload="agent", max_nodes=2), None)
    done = [cheaper.pk, done_plan.pk]
    by_cost = [p.pk for p in viewer.get("/plans/?sort=usd").context["rows"] if p.pk in done]
    assert by_cost == done
    by_tpot = [p.pk for p in viewer.get("/plans/?sort=-tpot").context["rows"] if p.pk in done]
    assert by_tpot == done
    by_prices = [p.pk for p in viewer.get("/plans/?sort=-prices").context["rows"]]
    assert by_prices[0] == cheaper.pk
    page = viewer.get("/plans/").content.decode()
    assert "none meets the SLOs" in page.split(f'data-plan="{none_fit.pk}"')[1].split("</tr>")[0]
    assert '<td colspan="3"></td>' in page.split(f'data-plan="{queued.pk}"')[1].split("</tr>")[0]
