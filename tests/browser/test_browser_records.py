"""Issue 15's remaining defects as a user meets them in Chromium: a cluster shrunk under its
deployments, a blank served-model id, the model page's What-if button, a refused page outside the
layout, and a finished plan's ranking (layouts, SKU names, no stale Cancel button)."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider, Workload
from planner.plans import PlanRequest, create_plan, execute_plan

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="agent", name="Agent", team="dev", requests_per_day=20_000, mean_prompt_tokens=8_000,
        mean_output_tokens=400, p95_context_tokens=32_000, prefix_cache_hit_rate=0.6, peak_concurrency=32,
        ttft_slo_ms=3000, tpot_slo_ms=60,
    )  # fmt: skip
    big = Cluster.objects.create(
        slug="big", name="Two H100 nodes", sku=HardwareSku.objects.get(slug="h100-sxm-80gb"), nodes=2,
        provider=Provider.objects.ensure("p"),
        team="t",
    )  # fmt: skip
    Deployment.objects.create(slug="llama-16", cluster=big, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=8,
                              replicas=2, kv_cache_dtype="fp8")  # fmt: skip
    for role in ("viewer", "platform"):
        make_user(role, role)


def test_shrinking_a_cluster_under_its_deployment_is_refused_naming_it(open_page, live_server, world):
    """Shrinking a cluster from 4 to 2 nodes was accepted while its deployment then needed 32 of 16 GPUs."""
    page = open_page("platform")
    page.goto(f"{live_server.url}/clusters/big/edit/")
    page.fill("#id_nodes", "1")
    page.click("button:has-text('Save')")
    error = page.get_by_text("would leave 1 deployment(s) without the GPUs")
    error.wait_for()
    assert "llama-16 needs 16" in error.inner_text()
    assert Cluster.objects.get(slug="big").nodes == 2


def test_an_endpoint_without_its_served_model_id_is_refused(open_page, live_server, world):
    """A blank served-model id let a K3 deployment poll a Llama endpoint and show green "up"."""
    page = open_page("platform")
    page.goto(f"{live_server.url}/clusters/big/")
    page.click("text=Add a deployment")
    page.fill("#id_slug", "llama-endpoint")
    page.select_option("#id_model", label="Llama-3.1-70B-Instruct")
    page.fill("#id_tp", "8")
    page.fill("#id_base_url", "http://127.0.0.1:9/")
    page.click("button:has-text('Save')")
    page.get_by_text("Required with an endpoint").wait_for()
    assert not Deployment.objects.filter(slug="llama-endpoint").exists()


def test_the_model_pages_what_if_button_lands_on_a_result(open_page, live_server, world):
    """It landed on "sku: This field is required"."""
    page = open_page("viewer")
    page.goto(f"{live_server.url}/models/kimi-k3/")
    page.click("#what-if-link")
    page.wait_for_url(re.compile(r".*/what-if/\?.*sku=.*"))
    main = page.inner_text("main")
    assert "This field is required" not in main
    assert re.search(r"(Fits|Does not fit)", main)


def test_a_refused_page_is_shown_inside_the_layout(open_page, live_server, world):
    """A bare 403 page, with no way back."""
    page = open_page("viewer")
    response = page.goto(f"{live_server.url}/clusters/new/")
    assert response.status == 403
    assert page.locator("#forbidden h1").inner_text() == "Not allowed"
    assert page.locator("nav a:has-text('Fleet')").count() >= 1  # the layout's navigation is there
    page.click("#forbidden a:has-text('Back to the fleet')")
    page.wait_for_url(f"{live_server.url}/")


def test_a_finished_plans_ranking_shows_layouts_and_sku_names_and_no_cancel(open_page, live_server, world):
    """Rows 1 and 4 looked identical (no layout), SKUs were slugs, and a finished plan kept its Cancel button."""
    from django.contrib.auth.models import User

    plan = create_plan(
        PlanRequest(model="llama-3.1-70b", workload="agent", skus=("h100-sxm-80gb", "h200-141gb"), max_nodes=2),
        User.objects.get(username="platform"),
    )
    execute_plan(str(plan.pk))
    page = open_page("platform")
    page.goto(f"{live_server.url}/plans/{plan.pk}/")
    rows = page.locator("#plan-ranking tbody tr")
    assert rows.count() >= 2
    first = rows.nth(0).locator("td")
    assert first.nth(1).inner_text() in ("NVIDIA H100 SXM 80GB", "NVIDIA H200 SXM 141GB")  # names, not slugs
    assert re.search(r"tp\s*\d", first.nth(3).inner_text())  # the layout is written out
    layouts = [rows.nth(i).locator("td").nth(3).inner_text() for i in range(rows.count())]
    skus = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())]
    modes = [rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())]
    kvs = [rows.nth(i).locator("td").nth(5).inner_text() for i in range(rows.count())]
    assert len(set(zip(skus, modes, layouts, kvs, strict=True))) == rows.count()  # no two rows alike
    assert page.locator("#plan-cancel").count() == 0
