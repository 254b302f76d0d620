"""The rent-vs-API chart's series (planner.breakeven.cost_curve, issue 28): rent steps up by one
cluster past each multiple of the capacity, and stays flat when the capacity is unknown."""

from __future__ import annotations

import pytest

from planner.breakeven import clusters_needed


@pytest.mark.parametrize(
    ("volume", "capacity", "clusters"),
    [(0, 1000, 1), (999, 1000, 1), (1000, 1000, 1), (1000.5, 1000, 2), (3000, 1000, 3), (3001, 1000, 4), (5e9, 0, 1)],
)
def test_clusters_needed(volume, capacity, clusters):
    assert clusters_needed(volume, capacity) == clusters


@pytest.mark.django_db
def test_rent_steps_at_each_capacity_multiple(client, make_user, catalog_and_agent):
    client.force_login(make_user("v", "viewer"))
    base = {"workload": "agent", "gpus": "8", "sku": "h100-sxm-80gb", "api_price": "kimi-k3-api"}
    chart = client.get("/rent-vs-api/", {**base, "capacity_output_tokens_per_month": "400000000"}).context["chart"]
    capacity, points = chart["capacity"], chart["points"]
    one = points[0]["rent"]
    assert capacity == 400
    for p in points:  # one cluster's rent times the clusters the volume needs
        assert p["rent"] == pytest.approx(one * p["clusters"])
        assert p["clusters"] == clusters_needed(p["volume"], capacity) or p["volume"] % capacity == 0
    at = [p["rent"] for p in points if p["volume"] == capacity]
    assert at == pytest.approx([one, 2 * one])  # the ceiling sampled before and after its step
    assert [p["rent"] for p in points] == sorted(p["rent"] for p in points)
    assert chart["ymax"] >= points[-1]["rent"]
    flat = client.get("/rent-vs-api/", base).context["chart"]  # no model named: no capacity known
    assert flat["capacity"] is None and {p["rent"] for p in flat["points"]} == {one}
