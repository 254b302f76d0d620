"""List endpoints filter by the fields a script joins on (docs/api.md, "Records"): deployments by workload,
clusters by ownership, plans by model and workload, budgets by team or cluster. An unknown value filters
to nothing; a malformed one is a 400, never a 500."""

from __future__ import annotations

import pytest

from fleet.models import Cluster, Deployment, Provider
from planner import plans as plan_service
from planner.models import Budget


@pytest.mark.django_db
def test_join_filters(viewer_api, cluster, kimi_k3, catalog_and_agent):
    d = Deployment.objects.create(
        slug="k3", cluster=cluster, model=kimi_k3, tp=8, dp=4, ep=32, workload=catalog_and_agent
    )
    other = Cluster.objects.create(
        slug="owned", name="Owned", sku=cluster.sku, nodes=1, provider=Provider.objects.ensure("dc"), team="ml",
        ownership="owned",
    )  # fmt: skip
    plan_service.create_plan(plan_service.PlanRequest(model="kimi-k3", workload="agent", max_nodes=1), None)
    Budget.objects.create(cluster=other, amount_usd=100, emails=["f@example.com"])
    Budget.objects.create(team="ml", amount_usd=200, emails=["f@example.com"])

    def slugs(url: str, key: str = "slug") -> list:
        r = viewer_api.get(url)
        assert r.status_code == 200, r.json()
        return [row[key] for row in r.json()["results"]]

    assert slugs("/api/v1/deployments/?workload=agent") == [d.slug]
    assert slugs("/api/v1/deployments/?workload=nope") == []
    assert slugs("/api/v1/clusters/?ownership=owned") == ["owned"]
    assert slugs("/api/v1/clusters/?ownership=rented") == [cluster.slug]
    assert viewer_api.get("/api/v1/clusters/?ownership=bought").status_code == 400
    assert len(slugs("/api/v1/plans/?model=kimi-k3&workload=agent", "id")) == 1
    assert slugs("/api/v1/plans/?workload=chat", "id") == []
    assert len(slugs("/api/v1/budgets/?team=ML", "id")) == 1  # a team's budget (a cluster's has no team)
    assert len(slugs("/api/v1/budgets/?cluster=owned", "id")) == 1
    assert slugs("/api/v1/budgets/?cluster=h100-pool", "id") == []
