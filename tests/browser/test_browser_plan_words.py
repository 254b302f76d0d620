"""A plan's page in Chromium (issue 28, "Plans in words"): the feasible-configurations chart is drawn with
every point the plan kept and the frontier as a line, its caption says how many of how many, and the page
as read shows every outcome in words, never a raw code.

The plan: K3 for the coding agent over every priced SKU up to 8 nodes (thousands feasible: thinned),
searched in the test (``execute_plan``, what the worker runs).
"""

from __future__ import annotations

import re

import pytest

from fleet.models import HardwareSku
from planner import plans as plan_service
from planner.engine import OUTCOMES, REASONS
from planner.models import Plan

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def plan(catalog_and_agent, make_user):
    make_user("viewer", "viewer")
    done = plan_service.execute_plan(
        str(plan_service.create_plan(plan_service.PlanRequest(model="kimi-k3", workload="agent"), None).pk)
    )
    assert done.status == Plan.Status.DONE and done.result["feasible"] > len(done.result["points"])
    return done


def test_the_plan_chart_draws_every_kept_point_says_how_many_and_no_code_shows(open_page, live_server, plan):
    page = open_page("viewer")
    page.goto(f"{live_server.url}/plans/{plan.pk}/")
    page.wait_for_selector("canvas[data-chart='pareto'][data-drawn='1']")
    drawn = page.evaluate(
        """() => {
          const chart = Chart.getChart(document.querySelector("canvas[data-chart='pareto']"));
          return chart.data.datasets.map((d) => ({ label: d.label, n: d.data.length, line: !!d.showLine }));
        }"""
    )
    points, frontier = drawn
    feasible, kept = plan.result["feasible"], len(plan.result["points"])
    assert points["n"] == kept and points["label"] == f"Feasible configurations ({kept:,} of {feasible:,})"
    assert frontier["n"] == len(plan.result["frontier"]) and frontier["line"]
    caption = page.inner_text("#pareto-caption")
    assert caption.startswith(f"{kept:,} of {feasible:,} feasible configurations drawn")
    text = page.inner_text("main")
    assert [c for c in REASONS if re.search(rf"\b{c}\b", text)] == []
    assert OUTCOMES["does_not_fit"] in text and OUTCOMES["best"] in text
    sku = HardwareSku.objects.get(slug=plan.result["best"]["sku"])
    assert page.get_attribute("#plan-verdict span[title]", "title") == sku.slug  # the name, its slug on hover
    assert page.inner_text("#plan-verdict span[title]") == sku.name
