"""Issue 28, "Plans in words": every outcome a sentence from one vocabulary (``planner.engine.OUTCOMES``),
never a raw code on a page; names (slugs on hover) in headlines and tables; the price basis on the
plans list, the plan's header and the compare page; the feasible-configurations chart drawing every
feasible point (thinned with the whole frontier kept past ``MAX_CHART_POINTS``) and saying how many."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from django.utils.html import escape

from fleet.models import HardwareSku
from planner.engine import OUTCOMES, REASONS
from planner.engine.layout_search.report import MAX_CHART_POINTS, spread
from planner.models import Plan
from planner.models.plans import PRICE_BASIS_NAMES
from planner.plans import PlanRequest, create_plan, execute_plan

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _raw_codes(html: str) -> list[str]:
    """The outcome codes written as codes anywhere in the page (the words around them are prose)."""
    return [code for code in REASONS if re.search(rf"(?<![\w-]){code}(?![\w-])", html)]


@pytest.fixture
def plans(catalog_and_agent) -> tuple[Plan, Plan]:
    """Two real searches of K3 for the agent: every SKU on the fleet's prices (thousands feasible), and
    two SKUs on public list prices (a hundred or so: all drawn)."""
    every = execute_plan(str(create_plan(PlanRequest(model="kimi-k3", workload="agent"), None).pk))
    two = PlanRequest(model="kimi-k3", workload="agent", skus=("h200-141gb", "b200-192gb"), max_nodes=4)
    listed = execute_plan(str(create_plan(PlanRequest(**{**vars(two), "price_basis": "list"}), None).pk))
    assert every.status == listed.status == Plan.Status.DONE
    return every, listed


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


@pytest.mark.django_db
def test_a_plan_page_shows_every_outcome_in_words_and_no_code(viewer, plans):
    every, _ = plans
    html = viewer.get(f"/plans/{every.pk}/").content.decode()
    assert _raw_codes(html) == []
    rejected = every.result["rejected"]
    assert {r for r, v in rejected.items() if v["count"]} >= {"does_not_fit", "costs_more"}
    why = html[html.index("Why the others lost") :]
    for reason in rejected:
        assert f"<td>{OUTCOMES[reason]}</td>" in why
    ranking = html[html.index('id="plan-ranking"') :]
    assert f">{OUTCOMES['best']}</td>" in ranking and f">{OUTCOMES['costs_more']}</td>" in ranking
    # The HTMX partial the page polls with says the same.
    assert _raw_codes(viewer.get(f"/plans/{every.pk}/", HTTP_HX_REQUEST="true").content.decode()) == []


@pytest.mark.django_db
def test_headlines_and_tables_name_records_with_their_slug_on_hover(viewer, plans):
    every, _ = plans
    html = viewer.get(f"/plans/{every.pk}/").content.decode()
    best = every.result["best"]
    sku = HardwareSku.objects.get(slug=best["sku"])
    h1 = html[html.index("<h1>") : html.index("</h1>")]
    assert f'<span title="kimi-k3">{every.model.name}</span>' in h1
    assert f'<span title="agent">{every.workload.name}</span>' in h1
    verdict = re.search(r'<p class="verdict" id="plan-verdict">(.*?)</p>', html, re.S)[1]
    assert verdict.startswith(f"{OUTCOMES['best']}: {best['gpus']} \u00d7 ")
    assert f'<span title="{sku.slug}">{sku.name}</span>' in verdict and f"\u00d7 {sku.slug}" not in verdict
    frontier = html[html.index("Frontier numbers") : html.index("Why the others lost")]
    assert f'<td title="{sku.slug}">{sku.name}</td>' in frontier


@pytest.mark.django_db
def test_the_price_basis_is_on_the_list_the_header_and_the_compare_page(viewer, plans):
    every, listed = plans
    rows = viewer.get("/plans/").content.decode()
    for plan in plans:
        row = rows.split(f'data-plan="{plan.pk}"')[1].split("</tr>")[0]
        assert f">{PRICE_BASIS_NAMES[plan.price_basis]}</td>" in row
    assert f'<strong title="{escape(listed.price_basis_text)}">{PRICE_BASIS_NAMES["list"]}</strong>' in (
        viewer.get(f"/plans/{listed.pk}/").content.decode()
    )
    header = viewer.get(f"/plans/{every.pk}/").content.decode()
    prices = header[header.index('id="plan-price-basis"') :].split("</p>")[0]
    assert PRICE_BASIS_NAMES["fleet"] in prices and "USD/GPU-hour" in prices
    compare = viewer.get(f"/plans/compare/?a={every.pk}&b={listed.pk}")
    figures = {f.label: f for f in compare.context["figures"] + compare.context["searched"]}
    basis = figures["Price basis"]
    assert (basis.a, basis.b) == (PRICE_BASIS_NAMES["fleet"], PRICE_BASIS_NAMES["list"]) and basis.differs
    html = compare.content.decode()
    assert 'class="differs" data-figure="Price basis"' in html and _raw_codes(html) == []
    same = viewer.get(f"/plans/compare/?a={every.pk}&b={every.pk}").content.decode()
    assert 'data-figure="Price basis"' in same and 'class="differs" data-figure="Price basis"' not in same


@pytest.mark.django_db
def test_the_api_keeps_the_codes_and_puts_a_label_beside_each(viewer_api, plans):
    every, _ = plans
    body = viewer_api.get(f"/api/v1/plans/{every.pk}/").json()
    result = body["result"]
    assert result["best"]["reason"] is None and result["best"]["label"] == OUTCOMES["best"]
    assert result["best"]["status"] == "feasible" and result["best"]["status_label"] == OUTCOMES["feasible"]
    for c in result["top"][1:] + result["frontier"][1:] + result["near_misses"]:
        assert c["reason"] in REASONS and c["label"] == OUTCOMES[c["reason"]]
        assert c["status_label"] == OUTCOMES[c["status"]]
    assert set(result["rejected"]) == set(REASONS)
    for reason, info in result["rejected"].items():
        assert info["label"] == OUTCOMES[reason]
        assert all(e["label"] == OUTCOMES[e["reason"]] for e in info["examples"])
    ranking = body["ranking"]
    assert ranking[0]["outcome"] == "best" and all(r["label"] == OUTCOMES[r["outcome"]] for r in ranking)
    assert body["result"]["top"][0]["sku"] == every.result["top"][0]["sku"]  # codes and slugs stay


@pytest.mark.django_db
def test_the_ranking_csv_has_the_code_and_its_label(viewer, plans):
    every, _ = plans
    lines = viewer.get(f"/plans/{every.pk}/ranking.csv").content.decode().splitlines()
    header = lines[0].split(",")
    assert header[-2:] == ["outcome", "outcome_label"]
    assert lines[1].endswith(f",best,{OUTCOMES['best']}")


def _chart(html: str) -> dict:
    return json.loads(re.search(r'<script id="pareto-data" type="application/json">(.*?)</script>', html, re.S)[1])


@pytest.mark.django_db
def test_the_chart_draws_every_frontier_point_and_says_how_many_of_how_many(viewer, plans):
    every, listed = plans
    html = viewer.get(f"/plans/{every.pk}/").content.decode()
    chart = _chart(html)
    feasible = every.result["feasible"]
    assert feasible > MAX_CHART_POINTS  # thousands feasible: thinned
    assert chart["feasible"] == feasible and chart["drawn"] == len(chart["points"]) <= MAX_CHART_POINTS
    assert len(chart["points"]) > 100  # not the ranking's ten
    frontier = every.result["frontier"]
    assert len(chart["frontier"]) == len(frontier) > 1
    drawn = {tuple(p) for p in chart["points"]}
    for c in frontier:  # every frontier point is among the points drawn (to the points' 5 digits)
        assert (float(f"{c['tpot_ms']:.5g}"), float(f"{c['usd_per_mtok']:.5g}")) in drawn
    caption = re.search(r'<p class="muted" id="pareto-caption">(.*?)</p>', html)[1]
    assert caption.startswith(f"{len(chart['points']):,} of {feasible:,} feasible configurations drawn")
    assert "every one on the Pareto frontier" in caption
    page = viewer.get(f"/plans/{listed.pk}/").content.decode()
    few = _chart(page)
    assert few["drawn"] == few["feasible"] == listed.result["feasible"] == len(few["points"])
    assert f"All {few['feasible']:,} feasible configurations drawn." in page


@pytest.mark.django_db
def test_a_plan_from_before_the_points_says_it_draws_only_its_ranking(viewer, plans):
    every, _ = plans
    old = {k: v for k, v in every.result.items() if k != "points"}
    Plan.objects.filter(pk=every.pk).update(result=old)
    html = viewer.get(f"/plans/{every.pk}/").content.decode()
    chart = _chart(html)
    assert len(chart["points"]) <= len(old["top"]) + len(old["frontier"]) and chart["feasible"] == old["feasible"]
    assert "this plan ran before every point was kept" in html


def test_thinning_keeps_what_it_must_and_spreads_the_rest_evenly():
    items = [[n] for n in range(1000)]  # kept by identity, as the search's records are
    keep = [items[n] for n in (3, 4, 5, 998)]
    picked = [i[0] for i in spread(items, keep, 100)]
    assert len(picked) == 100 and {3, 4, 5, 998} <= set(picked) and picked == sorted(picked)
    others = [n for n in range(1000) if n not in (3, 4, 5, 998)]
    at = [others.index(n) for n in picked if n in others]
    gaps = [b - a for a, b in itertools.pairwise(at)]
    assert max(gaps) - min(gaps) <= 1  # evenly
    assert spread(items[:50], keep, 100) == items[:50]
    assert spread(items, items[:200], 100) == items[:200]  # the frontier is never cut


def test_docs_list_every_outcome_with_its_label():
    text = (DOCS / "api.md").read_text()
    for code, label in OUTCOMES.items():
        assert f"| `{code}` | {label} |" in text
