"""Plans: 202 on create, the search run by execute_plan (what the Celery task calls), idempotence,
cancellation, stored errors, roles, and `manage.py plan`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from fleet.models import Provider
from planner import plans as plan_service
from planner.engine import OUTCOMES
from planner.models import Plan

URL = "/api/v1/plans/"


@pytest.fixture
def setup(catalog_and_agent):
    """The catalogue and the ``agent`` workload (tests/conftest.py)."""


BODY = {"model": "kimi-k3", "workload": "agent", "skus": ["h200-141gb", "b200-192gb"], "max_nodes": 4}


@pytest.mark.django_db
def test_create_returns_202_with_url_and_id_then_the_search_stores_the_result(platform_api, setup):
    r = platform_api.post(URL, BODY, format="json")
    assert r.status_code == 202, r.json()
    body = r.json()
    assert body["status"] == "queued" and body["progress"] == 0 and r["Location"] == body["url"]
    assert body["url"].endswith(f"/api/v1/plans/{body['id']}/")
    # Each SKU's price in force: no provider quoted the fleet, so the cheapest public list price (RunPod
    # Community Cloud's H200 at 3.59, read 2026-09-25), never the seeds' 2.50 assumption.
    h200 = body["options"]["prices"]["h200-141gb"]
    assert (h200["provider"], h200["usd_per_gpu_hour"], h200["basis"]) == ("RunPod Community Cloud", "3.5900", "list")
    plan = plan_service.execute_plan(body["id"])
    assert plan.status == "done" and plan.progress == 100 and plan.error == ""
    result = platform_api.get(body["url"]).json()
    assert result["status"] == "done" and result["candidates_evaluated"] > 0
    assert result["result"]["frontier"] and result["result"]["top"]
    assert {c["sku"] for c in result["result"]["top"]} <= {"h200-141gb", "b200-192gb"}
    log = [p["progress"] for p in result["progress_log"]]
    assert log == sorted(log) and log[-1] == 100 and any(0 < p < 100 for p in log)


@pytest.mark.django_db
def test_running_the_same_plan_twice_never_duplicates(platform_api, setup):
    plan_id = platform_api.post(URL, BODY, format="json").json()["id"]
    first = plan_service.execute_plan(plan_id)
    again = plan_service.execute_plan(plan_id)
    assert again.finished == first.finished and again.result == first.result
    assert Plan.objects.count() == 1


@pytest.mark.django_db
def test_cancel_a_queued_plan_and_a_finished_one(platform_api, setup):
    plan_id = platform_api.post(URL, BODY, format="json").json()["id"]
    r = platform_api.post(f"{URL}{plan_id}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert plan_service.execute_plan(plan_id).status == "cancelled"  # the worker finds it cancelled
    assert platform_api.post(f"{URL}{plan_id}/cancel/").status_code == 409


@pytest.mark.django_db
def test_a_running_plan_stops_when_cancelled(platform_api, setup):
    plan_id = platform_api.post(URL, BODY, format="json").json()["id"]

    def ask_to_cancel(done: int, total: int) -> None:
        if done > 0:
            Plan.objects.filter(pk=plan_id).update(cancel_requested=True)

    plan = plan_service.execute_plan(plan_id, on_progress=ask_to_cancel)
    assert plan.status == "cancelled" and plan.result is None and 0 < plan.progress < 100


@pytest.mark.django_db
def test_a_failed_search_stores_a_readable_error(platform_api, setup, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("the interconnect table is empty")

    monkeypatch.setattr(plan_service, "search", broken)
    plan_id = platform_api.post(URL, BODY, format="json").json()["id"]
    plan = plan_service.execute_plan(plan_id)
    assert plan.status == "failed" and "the interconnect table is empty" in plan.error
    assert platform_api.get(f"{URL}{plan_id}/").json()["error"] == plan.error


@pytest.mark.django_db
def test_bad_requests_and_roles(platform_api, viewer_api, setup):
    assert viewer_api.post(URL, BODY, format="json").status_code == 403
    r = platform_api.post(URL, {**BODY, "model": "nope"}, format="json")
    assert r.status_code == 400 and "model" in r.json()
    r = platform_api.post(URL, {**BODY, "on": "2026-01-01"}, format="json")
    assert r.status_code == 400 and "No on-demand price in force" in r.json()["skus"][0]
    r = platform_api.post(URL, {**BODY, "modes": ["sideways"]}, format="json")
    assert r.status_code == 400 and "modes.0" in r.json()
    assert viewer_api.get(URL).status_code == 200
    assert not Plan.objects.exists()


@pytest.mark.django_db
def test_command_runs_the_same_search_with_a_progress_bar(setup):
    out = StringIO()
    call_command("plan", "agent", "--sku", "h200-141gb", "--sku", "b200-192gb", "--max-nodes", "4", stdout=out)
    text = out.getvalue()
    assert "100%" in text and "candidates evaluated" in text and OUTCOMES["best"] in text
    assert f"{OUTCOMES['does_not_fit']}: " in text and "does_not_fit" not in text  # in words, as on the pages
    assert Plan.objects.get().status == "done"
    with pytest.raises(CommandError, match="workload"):
        call_command("plan", "nope", stdout=StringIO())


@pytest.mark.django_db
def test_a_plan_ranked_on_public_list_prices(platform_api, setup):
    """``price_basis: list``: each SKU priced at the cheapest public on-demand list price in force
    (the latest of each provider); ``fleet`` (the default): the SKU's price in force, a provider's own
    quote before any list price. Never the seeds' 2.50 assumption."""
    from datetime import date

    from fleet.models import GpuQuote, HardwareSku

    h200, b200 = HardwareSku.objects.get(slug="h200-141gb"), HardwareSku.objects.get(slug="b200-192gb")
    listed = {"list_price": True, "pricing_kind": "on-demand", "source": "test price list"}
    GpuQuote.objects.create(
        sku=h200,
        provider=Provider.objects.ensure("cheap-then-dear"),
        usd_per_gpu_hour="0.40",
        quoted_on=date(2039, 11, 1),
        **listed,
    )
    GpuQuote.objects.create(
        sku=h200,
        provider=Provider.objects.ensure("cheap-then-dear"),
        usd_per_gpu_hour="0.90",
        quoted_on=date(2039, 12, 1),
        **listed,
    )
    GpuQuote.objects.create(
        sku=h200,
        provider=Provider.objects.ensure("steady"),
        usd_per_gpu_hour="0.50",
        quoted_on=date(2039, 10, 1),
        **listed,
    )
    GpuQuote.objects.create(
        sku=b200,
        provider=Provider.objects.ensure("steady"),
        usd_per_gpu_hour="0.60",
        quoted_on=date(2039, 10, 1),
        **listed,
    )
    on = "2040-01-01"
    r = platform_api.post(URL, {**BODY, "on": on, "price_basis": "list"}, format="json")
    assert r.status_code == 202, r.json()
    prices = r.json()["options"]["prices"]
    assert r.json()["options"]["price_basis"] == "list"
    assert (prices["h200-141gb"]["provider"], prices["h200-141gb"]["usd_per_gpu_hour"]) == ("steady", "0.5000")
    assert (prices["b200-192gb"]["provider"], prices["b200-192gb"]["usd_per_gpu_hour"]) == ("steady", "0.6000")
    fleet = platform_api.post(URL, {**BODY, "on": on}, format="json").json()["options"]
    assert fleet["price_basis"] == "fleet" and fleet["prices"]["h200-141gb"]["usd_per_gpu_hour"] == "0.5000"
    GpuQuote.objects.create(
        sku=h200, provider=Provider.objects.ensure("steady"), usd_per_gpu_hour="0.70", quoted_on=date(2039, 12, 15)
    )  # steady's own quote to the fleet: the H200's price in force, dearer than its list price
    fleet = platform_api.post(URL, {**BODY, "on": on}, format="json").json()["options"]
    assert (fleet["prices"]["h200-141gb"]["usd_per_gpu_hour"], fleet["prices"]["h200-141gb"]["basis"]) == (
        "0.7000",
        "own",
    )

    r = platform_api.post(URL, {**BODY, "skus": ["rtx-4080-16gb"], "price_basis": "list"}, format="json")
    assert r.status_code == 400 and "No public on-demand list price in force" in r.json()["skus"][0]
    r = platform_api.post(URL, {**BODY, "price_basis": "cheapest"}, format="json")
    assert r.status_code == 400 and "price_basis" in r.json()
