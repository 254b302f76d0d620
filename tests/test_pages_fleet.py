"""Fleet pages: overview with headroom, HTMX partial refresh, registration forms, detail pages."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider
from planner.snapshots import refresh_snapshots


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


def add_fleet(n: int, prefix: str = "c") -> None:
    """n clusters of 4 x 8 H100, each serving Llama 3.1 70B on two tp-4 replicas... and one more model."""
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    for i in range(n):
        c = Cluster.objects.create(
            slug=f"{prefix}{i}",
            name=f"{prefix.upper()}{i}",
            sku=sku,
            nodes=4,
            provider=Provider.objects.ensure(f"p{i % 3}"),
            team=f"t{i % 2}",
        )
        for j in range(2):
            Deployment.objects.create(
                slug=f"{prefix}{i}-d{j}",
                cluster=c,
                model=llama,
                tp=4,
                replicas=2,
                last_status="up",
                last_metrics={"requests_running": 3 + j},
            )


def queries(client, url: str, **headers) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url, **headers).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.django_db
def test_fleet_page_shows_headroom(client, make_user, catalog):
    add_fleet(1)
    client.force_login(make_user("v", "viewer"))
    page = client.get("/").content.decode()
    # Before a worker has computed the snapshots the page says so (it never sizes anything itself).
    assert "c0-d0" in page and "capacity not computed yet" in page
    refresh_snapshots()
    page = client.get("/").content.decode()
    assert "C0" in page and "c0-d0" in page and "Llama-3.1-70B-Instruct" in page
    d = Deployment.objects.get(slug="c0-d0")
    capacity = d.sizing().max_concurrent_sequences
    assert capacity > 0 and f"3 / {capacity}" in page and "capacity not computed yet" not in page
    assert "snapshot-flag" not in page  # current: no flag
    assert "Register a cluster" not in page  # a viewer is not offered what it may not do


@pytest.mark.django_db
def test_fleet_page_flags_a_snapshot_whose_inputs_changed_and_keeps_showing_it(client, make_user, catalog):
    add_fleet(1)
    refresh_snapshots()
    client.force_login(make_user("v", "viewer"))
    d = Deployment.objects.select_related("cluster__sku", "model").get(slug="c0-d0")
    before = d.sizing().max_concurrent_sequences
    d.gpu_memory_utilization = 0.8
    d.save()
    page = client.get("/").content.decode()
    assert f"3 / {before}" in page  # the stored figures, said to be stale
    assert 'class="badge stale snapshot-flag"' in page and "changed" in page
    refresh_snapshots()
    page = client.get("/").content.decode()
    assert f"3 / {d.sizing().max_concurrent_sequences}" in page and "snapshot-flag" not in page


@pytest.mark.django_db
def test_fleet_page_query_count_is_constant(client, make_user, catalog):
    client.force_login(make_user("v", "viewer"))
    add_fleet(2, "a")
    few = queries(client, "/")
    few_partial = queries(client, "/", HTTP_HX_REQUEST="true")
    add_fleet(15, "b")
    assert queries(client, "/") <= few  # never more (permissions cached after the first)
    assert queries(client, "/", HTTP_HX_REQUEST="true") == few_partial


@pytest.mark.django_db
def test_htmx_refresh_returns_only_the_table(client, make_user, catalog):
    add_fleet(1)
    client.force_login(make_user("v", "viewer"))
    partial = client.get("/?team=t0", HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<section id="fleet-table"') and "<html" not in partial
    assert 'hx-trigger="every 5s"' in partial and "C0" in partial
    assert "C0" not in client.get("/?team=nobody", HTTP_HX_REQUEST="true").content.decode()


@pytest.mark.django_db
def test_platform_registers_a_cluster_and_a_deployment(client, make_user, catalog):
    client.force_login(make_user("p", "platform"))
    sku = HardwareSku.objects.get(slug="h200-141gb")
    r = client.post(
        "/clusters/new/",
        {
            "name": "K3 H200",
            "slug": "k3-h200",
            "sku": sku.pk,
            "nodes": 2,
            "provider": Provider.objects.ensure("acme").name,
            "team": "ml",
            "hours_per_day": "24",
            "status": "active",
        },
    )
    assert r.status_code == 302 and r["Location"] == "/clusters/k3-h200/"
    k3 = ModelSpec.objects.get(slug="kimi-k3")
    cluster = Cluster.objects.get(slug="k3-h200")
    form = {
        "slug": "k3-prod",
        "cluster": cluster.slug,
        "model": k3.pk,
        "replicas": 1,
        "tp": 8,
        "pp": 1,
        "dp": 2,
        "ep": 16,
        "engine": "sglang",
        "kv_cache_dtype": "fp8",
        "max_model_len": 131072,
        "gpu_memory_utilization": 0.9,
        "poll_interval_s": 15,
        "enabled": "on",
        "api_key": "sk-page-secret",
    }
    r = client.post("/deployments/new/", form)
    assert r.status_code == 302, r.content.decode()[:2000]
    page = client.get("/deployments/k3-prod/").content.decode()
    assert "sk-page-secret" not in page and "API key set" in page
    # the envelope is drawn now; the admitted curve is the snapshot's, which a worker computes
    assert 'data-chart="envelope"' in page and 'data-chart="capacity"' not in page
    assert "Not computed yet" in page.split('id="capacity-curve"')[1]
    from planner.snapshots import refresh_snapshots

    refresh_snapshots([Deployment.objects.get(slug="k3-prod").pk])
    page = client.get("/deployments/k3-prod/").content.decode()
    assert 'data-chart="capacity"' in page
    assert Deployment.objects.get(slug="k3-prod").decrypted_api_key() == "sk-page-secret"
    edit = client.get("/deployments/k3-prod/edit/").content.decode()
    assert "sk-page-secret" not in edit and Deployment.objects.get().api_key_encrypted not in edit


@pytest.mark.django_db
def test_form_errors_are_shown_inline(client, make_user, catalog):
    client.force_login(make_user("p", "platform"))
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    r = client.post(
        "/clusters/new/",
        {
            "name": "x",
            "slug": "x",
            "sku": sku.pk,
            "nodes": 0,
            "provider": Provider.objects.ensure("a").name,
            "team": "b",
            "hours_per_day": "30",
            "status": "active",
        },
    )
    page = r.content.decode()
    assert r.status_code == 400 and "has-error" in page
    assert "Hours per day must be greater than 0 and at most 24." in page
    assert not Cluster.objects.exists()


@pytest.mark.django_db
def test_viewer_cannot_open_or_post_forms(client, make_user, catalog):
    client.force_login(make_user("v", "viewer"))
    assert client.get("/clusters/new/").status_code == 403
    assert client.post("/clusters/new/", {"name": "x"}).status_code == 403
    assert client.get("/deployments/new/").status_code == 403
    assert not Cluster.objects.exists()


@pytest.mark.django_db
def test_detail_pages_and_unknown_slugs(client, make_user, catalog):
    add_fleet(1)
    client.force_login(make_user("v", "viewer"))
    assert "History" in client.get("/clusters/c0/").content.decode()
    assert client.get("/clusters/nope/").status_code == 404
    assert client.get("/deployments/nope/").status_code == 404


@pytest.mark.django_db
def test_deployment_page_shows_polls_against_the_slo_and_calibration(client, make_user, catalog):
    from fleet.models import Workload
    from fleet.poller import poll_deployment
    from fleet.polling.fakeserver import FakeEngineServer

    add_fleet(1)
    w = Workload.objects.create(
        slug="chat",
        name="Chat",
        team="t",
        requests_per_day=1000,
        mean_prompt_tokens=1000,
        mean_output_tokens=200,
        p95_context_tokens=4000,
        peak_concurrency=8,
        ttft_slo_ms=1500,
        tpot_slo_ms=40,
    )
    d = Deployment.objects.get(slug="c0-d0")
    with FakeEngineServer("vllm") as server:
        Deployment.objects.filter(pk=d.pk).update(base_url=server.url, served_model_id=server.model_id, workload=w)
        from planner.snapshots import refresh_snapshots

        refresh_snapshots([d.pk])  # the worker's part: the predicted cache is stored with the capacity
        d = Deployment.objects.get(pk=d.pk)
        poll_deployment(d)
        poll_deployment(d)
    client.force_login(make_user("v", "viewer"))
    page = client.get("/deployments/c0-d0/").content.decode()
    live = page.split('id="live"')[1].split('id="poll-range"')[0]
    assert live.count('data-chart="timeseries"') == 4  # latency, fractions, tokens, speed (the range's are apart)
    assert '"TTFT SLO (1,500 ms)"' in page
    assert 'id="calibration-ratio"' in page
    # sized with its own engine's allocator, and vLLM's published blocks set beside that prediction
    sized = page[page.index('id="sized-as"') :].split("</dd>")[0]
    assert "vllm 0.33.0 (newest modelled release)" in sized and "blocks per GPU" in sized
    assert 'id="block-check"' in page and "outside 0.97" in page  # the fake publishes 2,000 blocks


@pytest.mark.django_db
def test_detail_pages_query_count_is_constant(client, make_user, catalog):
    from datetime import timedelta

    from django.utils import timezone

    from fleet.models import EndpointPoll

    client.force_login(make_user("v", "viewer"))
    add_fleet(1)
    c0 = Cluster.objects.get(slug="c0")
    d = Deployment.objects.get(slug="c0-d0")
    now = timezone.now()
    EndpointPoll.objects.create(deployment=d, polled_at=now, status="up", requests_running=2)
    cluster_few, deployment_few = queries(client, "/clusters/c0/"), queries(client, "/deployments/c0-d0/")
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    c0.nodes = 40
    c0.save()
    for j in range(2, 12):
        Deployment.objects.create(slug=f"c0-d{j}", cluster=c0, model=llama, tp=4)
        c0.hours_per_day = 24 - j
        c0.save()  # more history rows
    EndpointPoll.objects.bulk_create(
        [
            EndpointPoll(deployment=d, polled_at=now - timedelta(seconds=5 * i), status="up", requests_running=i)
            for i in range(1, 200)
        ]
    )
    assert queries(client, "/clusters/c0/") <= cluster_few  # never more (permissions cached after the first)
    assert queries(client, "/deployments/c0-d0/") == deployment_few


@pytest.mark.django_db
def test_fleet_page_is_paginated_and_keeps_filters(client, make_user, catalog):
    client.force_login(make_user("v", "viewer"))
    add_fleet(30)
    first = client.get("/?team=t0").content.decode()  # 15 clusters in team t0: one page
    assert "pager" not in first
    page1 = client.get("/").content.decode()
    assert page1.count('class="cluster"') == 25 and "clusters 1\u201325 of 30" in page1 and "page=2" in page1
    page2 = client.get("/?page=2", HTTP_HX_REQUEST="true").content.decode()
    assert page2.count('class="cluster"') == 5 and 'hx-get="/?page=2"' in page2
