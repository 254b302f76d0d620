"""The route page asks for the model (issue 28): it starts from the model the fleet serves most
(``planner.routing.most_served_model``), and the ranking rule (the page's and ``POST /api/v1/route/``'s)
never ranks a destination serving another model above one serving the asked model; the API without a
model still ranks every model's destinations together (docs/api.md)."""

from __future__ import annotations

import re

import pytest
from test_route_api import CLASS, URL, _deployment, fleet  # noqa: F401  (the fixture)

from fleet.catalog.reference import model_record
from fleet.models import Deployment, ModelSpec
from planner.routing import most_served_model

pytestmark = pytest.mark.django_db
PAGE = "/route/?context_tokens=8192&prompt_tokens=4000&output_tokens=300&prefix_reuse_fraction=0.8"


@pytest.fixture
def qwen(fleet, cluster):  # noqa: F811
    """Qwen3-32B beside the three Llama deployments: one deployment (slug first, up, cheaper per request)."""
    model = ModelSpec.objects.create(**{k: v for k, v in model_record("qwen3-32b").items() if v is not None})
    _deployment(cluster, model, "aaa-qwen")
    return model


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


def _selected_model(html: str) -> str:
    select = re.search(r'<select name="model" id="id_model">(.*?)</select>', html, re.S).group(1)
    assert '<option value="">' not in select  # no "any": the page asks for a model
    return re.search(r'<option value="([^"]*)" selected>', select).group(1)


def _order(html: str) -> list[str]:
    return re.findall(r'<tr data-slug="([^"]+)"', html)


def test_most_served_model_counts_enabled_deployments_then_replicas(qwen, cluster, llama70b):
    assert most_served_model() == "llama-3.1-70b"  # three deployments against one
    Deployment.objects.filter(model=llama70b).exclude(slug="llama-fresh").update(enabled=False)
    assert most_served_model() == "llama-3.1-70b"  # one each, two replicas each: the first slug
    Deployment.objects.filter(slug="aaa-qwen").update(replicas=3)
    assert most_served_model() == "qwen3-32b"  # one each: more replicas
    Deployment.objects.update(enabled=False)
    assert most_served_model() is None


def test_the_page_starts_from_the_most_served_model_and_ranks_it_first(viewer, qwen):
    html = viewer.get("/route/").content.decode()
    assert _selected_model(html) == "llama-3.1-70b"
    order = _order(html)
    assert order[0] == "llama-fresh" and order[-1] == "aaa-qwen"  # after every Llama destination, eligible or not
    qwen_row = html.split('data-slug="aaa-qwen"')[1].split("</tr>")[0]
    assert "serves another model, after every destination serving llama-3.1-70b" in qwen_row
    # A URL naming inputs but no model asks for the same default; naming one asks for that one.
    assert _selected_model(viewer.get(PAGE).content.decode()) == "llama-3.1-70b"
    asked = viewer.get(PAGE + "&model=qwen3-32b").content.decode()
    assert _selected_model(asked) == "qwen3-32b" and _order(asked)[0] == "aaa-qwen"
    assert set(_order(asked)[1:]) == {"llama-fresh", "llama-stale", "llama-down", "llama-api"}


def test_the_api_ranks_the_asked_model_first_and_any_model_without_one(viewer_api, qwen):
    asked = viewer_api.post(URL, CLASS, format="json").json()["destinations"]
    others = [d["model"] != "llama-3.1-70b" for d in asked]
    assert others == sorted(others) and asked[-1]["slug"] == "aaa-qwen"
    assert "serves another model" in asked[-1]["reasons"][-1]
    anyone = viewer_api.post(URL, {k: v for k, v in CLASS.items() if k != "model"}, format="json").json()
    first = anyone["destinations"][0]
    assert first["eligible"] and anyone["best"] == first["slug"]
    assert {d["model"] for d in anyone["destinations"] if d["eligible"]} == {"llama-3.1-70b", "qwen3-32b"}
