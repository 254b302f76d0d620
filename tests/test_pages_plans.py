"""Plan pages: start a search, follow progress with HTMX, read the frontier, cancel; roles."""

from __future__ import annotations

import pytest

from fleet.models import Workload
from planner.engine import OUTCOMES
from planner.models import Plan
from planner.models.plans import PRICE_BASIS_NAMES
from planner.plans import execute_plan


@pytest.fixture
def setup(catalog_and_agent):
    """The catalogue and the ``agent`` workload (tests/conftest.py)."""


@pytest.mark.django_db
def test_start_follow_and_read_a_plan(client, make_user, setup):
    client.force_login(make_user("p", "platform"))
    r = client.post(
        "/plans/start/",
        {"model": "kimi-k3", "workload": "agent", "max_nodes": "4", "skus": ["h200-141gb", "b200-192gb"]},
    )
    plan = Plan.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/plans/{plan.pk}/"
    queued = client.get(f"/plans/{plan.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in queued and 'value="0"' in queued
    execute_plan(str(plan.pk))
    done = client.get(f"/plans/{plan.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in done  # finished: the page stops polling
    assert 'value="100"' in done and 'data-chart="pareto"' in done and 'id="plan-ranking"' in done
    assert "Why the others lost" in done and OUTCOMES["does_not_fit"] in done


@pytest.mark.django_db
def test_viewer_sees_plans_but_cannot_start_or_cancel(client, make_user, setup):
    client.force_login(make_user("v", "viewer"))
    page = client.get("/plans/").content.decode()
    assert "Start the search" not in page
    assert client.post("/plans/start/", {"model": "kimi-k3", "workload": "agent"}).status_code == 403
    assert not Plan.objects.exists()


@pytest.mark.django_db
def test_bad_start_is_reported_not_a_500(client, make_user, setup):
    client.force_login(make_user("p", "platform"))
    r = client.post("/plans/start/", {"model": "kimi-k3", "workload": "nope"})
    assert r.status_code == 400 and not Plan.objects.exists()
    errors = r.context["form"].errors
    assert errors == {"workload": ["No workload named 'nope'."]}
    html = r.content.decode()  # the message sits in the workload field's box, and the input is kept
    field = html.split('<label for="id_workload">')[1].split('<div class="field')[0]
    assert "No workload named &#x27;nope&#x27;." in field and 'value="nope"' in field


@pytest.mark.django_db
def test_start_without_quotes_shows_the_service_error_beside_the_skus(client, make_user, setup):
    from fleet.models import GpuQuote

    GpuQuote.objects.filter(sku__slug="b200-192gb").delete()
    client.force_login(make_user("p", "platform"))
    r = client.post("/plans/start/", {"model": "kimi-k3", "workload": "agent", "skus": ["b200-192gb"]})
    assert r.status_code == 400 and not Plan.objects.exists()
    field = r.content.decode().split('<label for="id_skus">')[1].split('<div class="field')[0]
    assert "No on-demand price in force" in field and "b200-192gb" in field


@pytest.mark.django_db
def test_cancel_from_the_page(client, make_user, setup):
    client.force_login(make_user("f", "finance"))
    client.post("/plans/start/", {"model": "kimi-k3", "workload": "agent", "max_nodes": "2"})
    plan = Plan.objects.get()
    assert client.post(f"/plans/{plan.pk}/cancel/").status_code == 302
    plan.refresh_from_db()
    assert plan.status == "cancelled"


@pytest.mark.django_db
def test_plans_and_what_if_query_counts_are_constant(client, make_user, setup):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from fleet.models import ModelSpec

    client.force_login(make_user("v", "viewer"))

    def count(url: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        return len(ctx.captured_queries)

    whatif = "/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16"
    model, workload = ModelSpec.objects.get(slug="kimi-k3"), Workload.objects.get()
    Plan.objects.create(model=model, workload=workload)
    few_plans, few_whatif = count("/plans/"), count(whatif)
    for _ in range(20):
        Plan.objects.create(model=model, workload=workload)
    assert count("/plans/") <= few_plans  # never more (permissions cached after the first)
    assert count(whatif) == few_whatif


@pytest.mark.django_db
def test_the_ranking_shows_layouts_sku_names_ties_and_counts_that_add_up(client, make_user, setup):
    """Issue 15: the ranking had no layout (rows looked identical), SKUs as slugs, equal costs
    labelled costs_more, reject counts that added to more than the candidates, and a Cancel button
    left on a finished plan."""
    import re

    client.force_login(make_user("p", "platform"))
    client.post("/plans/start/", {"model": "kimi-k3", "workload": "agent", "max_nodes": "4",
                                  "skus": ["h200-141gb", "b200-192gb"]})  # fmt: skip
    plan = Plan.objects.get()
    assert 'id="plan-cancel"' in client.get(f"/plans/{plan.pk}/", HTTP_HX_REQUEST="true").content.decode()
    execute_plan(str(plan.pk))
    page = client.get(f"/plans/{plan.pk}/").content.decode()
    assert 'id="plan-cancel"' not in page  # finished: nothing left to cancel
    ranking = page[page.index('id="plan-ranking"') :]
    rows = re.findall(r'<tr><td>(\d+)</td><td title="[^"]+">([^<]+)</td><td>(\w+)</td><td>([^<]+)</td>', ranking)
    assert rows and all(name.startswith("NVIDIA") for _, name, _, _ in rows)  # names, not slugs
    assert all("tp" in layout or "GPU" in layout for *_, layout in rows)
    assert len({(name, mode, layout) for _, name, mode, layout in rows}) == len(rows)  # no two alike
    result = Plan.objects.get().result
    best = result["top"][0]["usd_per_hour"]
    ties = [c for c in result["top"][1:] if c["usd_per_hour"] == best]
    assert all(c["reason"] == "same_cost" for c in ties)
    assert ranking.count(f">{OUTCOMES['same_cost']}</td>") == len(ties)
    rejected = sum(v["count"] for r, v in result["rejected"].items() if r not in ("costs_more", "same_cost"))
    considered = result["feasible"] + rejected
    assert f"{considered:,} configurations: {result['feasible']:,} feasible and {rejected:,} that do not fit" in page


@pytest.mark.django_db
def test_a_plan_started_on_public_list_prices_says_so_and_names_the_providers(client, make_user, setup):
    """The plans page's "Rank by prices": public list prices name their provider per SKU on the plan
    page; SKUs without a list price (the RTX 4080 has none in the catalogue) are named as skipped."""
    client.force_login(make_user("p", "platform"))
    page = client.get("/plans/").content.decode()
    assert 'name="price_basis"' in page and "Rank by prices" in page
    r = client.post(
        "/plans/start/",
        {"model": "kimi-k3", "workload": "agent", "max_nodes": "2", "price_basis": "list",
         "skus": []},
    )  # fmt: skip
    plan = Plan.objects.get()
    assert r.status_code == 302 and plan.options["price_basis"] == "list"
    assert "rtx-4080-16gb" in plan.options["skipped_without_quote"]
    assert all(q.get("list_price") for q in plan.options["prices"].values())
    text = client.get(f"/plans/{plan.pk}/").content.decode()
    h200 = plan.options["prices"]["h200-141gb"]["provider"]
    h200_name = '<span title="h200-141gb">NVIDIA H200 SXM 141GB</span>'
    assert f">{PRICE_BASIS_NAMES['list']}</strong>" in text and f"{h200_name}: {h200}, " in text
    assert "skipped without a price" in text and '<span title="rtx-4080-16gb">NVIDIA' in text  # by name
