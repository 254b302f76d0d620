"""From plan to running deployment in Chromium (issue 27, "A browser test: platform registers a plan's
second-best layout in two clicks, copies the launch command; a refused layout offers the smallest fitting
layouts").

The plan: K3 for the coding agent on H200s up to 4 nodes, searched in the test (``execute_plan``, what the
worker runs), beside a 4-node H200 cluster. Platform opens the plan, clicks "Register as deployment" on
the second row (click 1) and "Register deployment" on the prefilled form (click 2), lands on the new
deployment's page and copies its launch command: the clipboard then holds the command the page shows,
with the second layout's tensor parallel size. Then platform registers K3 by hand as tp 1 x dp 32 on
the cluster, is refused with the smallest layouts that fit, clicks the first suggestion, which fills the
layout in, and saves: registered with that layout.
"""

from __future__ import annotations

import pytest

from fleet.models import Cluster, Deployment, HardwareSku, Provider
from planner import plans as plan_service
from planner.models import Plan

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def plan(catalog_and_agent, make_user):
    make_user("platform", "platform")
    body = {"model": "kimi-k3", "workload": "agent", "skus": ("h200-141gb",), "max_nodes": 4, "modes": ("aggregated",)}
    done = plan_service.execute_plan(str(plan_service.create_plan(plan_service.PlanRequest(**body), None).pk))
    assert done.status == Plan.Status.DONE and len(done.result["top"]) >= 2
    sku = HardwareSku.objects.get(slug="h200-141gb")
    Cluster.objects.create(
        slug="h200s", name="H200s", sku=sku, nodes=4, provider=Provider.objects.ensure("acme"), team="ml"
    )
    return done


def test_register_the_second_layout_copy_its_command_and_use_a_suggested_layout(open_page, live_server, plan):
    page = open_page("platform")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(f"{live_server.url}/plans/{plan.pk}/")
    page.click("#plan-ranking a.register-layout[data-rank='2']")  # click 1
    page.click("button:has-text('Register deployment')")  # click 2
    page.wait_for_url(f"{live_server.url}/deployments/**")
    second = plan.result["top"][1]
    d = Deployment.objects.get()
    assert (d.tp, d.replicas) == (second["decode"]["layout"]["tp"], second["decode"]["replicas"])
    shown = page.inner_text("#launch-command")
    assert shown.startswith("vllm serve moonshotai/Kimi-K3") and f"--tensor-parallel-size {d.tp}" in shown
    page.click("button[data-copy='launch-command']")
    page.wait_for_function(
        "() => document.querySelector(\"button[data-copy='launch-command']\").textContent === 'Copied'"
    )
    assert page.evaluate("() => navigator.clipboard.readText()") == shown

    page.goto(f"{live_server.url}/deployments/new/?cluster=h200s")
    page.fill("#id_slug", "k3-by-hand")
    page.select_option("#id_model", label="Kimi K3")
    for name, value in {"tp": "1", "dp": "32", "ep": "32", "max_model_len": "131072"}.items():
        page.fill(f"#id_{name}", value)
    page.click("button:has-text('Save')")
    suggestion = page.locator("#fitting-layouts button[data-fill]").first
    suggestion.wait_for()
    assert "Smallest layouts that fit on this cluster" in page.inner_text("#fitting-layouts")
    suggestion.click()  # fills the layout in
    tp = page.input_value("#id_tp")
    assert tp != "1" or page.input_value("#id_dp") != "32"
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{live_server.url}/deployments/k3-by-hand/")
    assert str(Deployment.objects.get(slug="k3-by-hand").tp) == tp
