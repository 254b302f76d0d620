"""Work per request that must not grow with the fleet (found by the load test, docs/benchmarks.md "Load")."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider, Workload
from planner.snapshots import refresh_snapshots


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


def add_served(n: int, prefix: str) -> None:
    """n clusters, each with one Llama 3.1 70B deployment serving a workload of its own."""
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    for i in range(n):
        cluster = Cluster.objects.create(
            slug=f"{prefix}{i}", name=f"{prefix}{i}", sku=sku, nodes=1, provider=Provider.objects.ensure("p"), team="t"
        )
        workload = Workload.objects.create(
            slug=f"{prefix}w{i}",
            name=f"W {prefix}{i}",
            team="t",
            requests_per_day=1000,
            mean_prompt_tokens=1000,
            mean_output_tokens=100,
            p95_context_tokens=8000,
            peak_concurrency=8,
            ttft_slo_ms=2000,
            tpot_slo_ms=50,
        )
        Deployment.objects.create(slug=f"{prefix}{i}-d", cluster=cluster, model=llama, workload=workload, tp=4)


def count(client, url: str, **headers) -> int:
    with CaptureQueriesContext(connection) as ctx:
        r = client.get(url, **headers)
        assert r.status_code == 200, r.content[:300]
    return len(ctx.captured_queries)


@pytest.mark.django_db
def test_deployment_list_api_queries_do_not_grow_with_workloads(viewer_api, catalog):
    """Each deployment's workload slug came from one query per row (22 queries for 17 rows)."""
    add_served(2, "a")
    few = count(viewer_api, "/api/v1/deployments/")
    add_served(10, "b")
    assert count(viewer_api, "/api/v1/deployments/") <= few  # never more (permissions cached after the first)
    slugs = {d["slug"]: d["workload"] for d in viewer_api.get("/api/v1/deployments/").json()["results"]}
    assert slugs["b9-d"] == "bw9" and len(slugs) == 12


@pytest.mark.django_db
def test_fleet_page_loads_each_model_once(client, make_user, catalog):
    """Deployments of one model share one loaded model row (a join built it again for every row)."""
    add_served(3, "c")
    refresh_snapshots()
    client.force_login(make_user("v", "viewer"))
    r = client.get("/", HTTP_HX_REQUEST="true")
    models = [h.deployment.model for row in r.context["rows"] for h in row["deployments"]]
    assert len(models) == 3 and all(m is models[0] for m in models)
    assert all(h.capacity for row in r.context["rows"] for h in row["deployments"])
