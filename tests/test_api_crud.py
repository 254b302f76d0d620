"""CRUD and filters over the REST API for every record, as the platform and finance roles."""

from __future__ import annotations

from decimal import Decimal

import pytest

from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider, Workload

SKU = {
    "slug": "b200-192gb",
    "name": "B200",
    "vendor": "NVIDIA",
    "hbm_gb": 192,
    "hbm_bandwidth_tbps": 8,
    "bf16_tflops": 2250,
    "fp8_tflops": 4500,
    "fp4_tflops": 9000,
    "interconnect_gbps": 1800,
    "gpus_per_node": 8,
}
WORKLOAD = {
    "slug": "coding-agent",
    "name": "Coding agent",
    "team": "dev-tools",
    "requests_per_day": 200000,
    "mean_prompt_tokens": 12000,
    "mean_output_tokens": 600,
    "p95_context_tokens": 64000,
    "prefix_cache_hit_rate": 0.9,
    "peak_concurrency": 256,
    "ttft_slo_ms": 2000,
    "tpot_slo_ms": 50,
}
MODEL = {
    "slug": "tiny-moe",
    "name": "Tiny MoE",
    "total_params": 30_000_000_000,
    "active_params": 3_000_000_000,
    "expert_params": 28_000_000_000,
    "n_routed_experts": 128,
    "n_active_experts": 8,
    "n_shared_experts": 0,
    "hidden_size": 2048,
    "vocab_size": 151936,
    "max_context_tokens": 32768,
    "attention_heads": 32,
    "weight_format": "bf16",
    "expert_weight_format": "fp8",
    "layer_groups": [{"kind": "full", "count": 48, "kv_heads": 4, "head_dim": 128}],
}


@pytest.mark.django_db
def test_sku_crud(platform_api):
    r = platform_api.post("/api/v1/skus/", SKU, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["url"].endswith("/api/v1/skus/b200-192gb/")
    r = platform_api.patch("/api/v1/skus/b200-192gb/", {"hbm_bandwidth_tbps": 7.7}, format="json")
    assert r.status_code == 200 and r.json()["hbm_bandwidth_tbps"] == 7.7
    assert platform_api.get("/api/v1/skus/b200-192gb/").json()["fp4_tflops"] == 9000
    assert platform_api.delete("/api/v1/skus/b200-192gb/").status_code == 204
    assert not HardwareSku.objects.exists()


@pytest.mark.django_db
def test_cluster_crud_and_default_gpus_per_node(platform_api, sku):
    body = {"slug": "c1", "name": "C1", "sku": sku.slug, "nodes": 2, "provider": "ACME", "team": "ml"}
    assert platform_api.post("/api/v1/clusters/", body, format="json").json()["provider"] == [
        "No provider called 'ACME'; pick one of /api/v1/providers/ or add it there first."
    ]
    r = platform_api.post("/api/v1/providers/", {"name": "acme", "kind": "neo-cloud"}, format="json")
    assert r.status_code == 201, r.json()
    # Names are unique whatever the case; a cluster names its provider in any case.
    assert platform_api.post("/api/v1/providers/", {"name": "Acme"}, format="json").status_code == 400
    r = platform_api.post("/api/v1/clusters/", body, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["provider"] == "acme" and r.json()["price_in_force"] is None  # no quote: unpriced
    assert r.json()["gpus_per_node"] == 8 and r.json()["total_gpus"] == 16
    assert r.json()["hours_per_day"] == "24.00" and r.json()["status"] == "active"
    r = platform_api.put("/api/v1/clusters/c1/", {**body, "nodes": 3, "hours_per_day": "4"}, format="json")
    assert r.status_code == 200, r.json()
    assert Cluster.objects.get(slug="c1").total_gpus == 24
    assert platform_api.delete("/api/v1/clusters/c1/").status_code == 204


@pytest.mark.django_db
def test_deployment_crud(platform_api, cluster, kimi_k3):
    body = {
        "slug": "k3",
        "cluster": cluster.slug,
        "model": kimi_k3.slug,
        "tp": 8,
        "dp": 4,
        "ep": 32,
        "engine": "sglang",
        "max_model_len": 131072,  # at the model's 1M tokens one sequence does not fit 32 H100s
        "base_url": "http://127.0.0.1:30000",
        "served_model_id": "moonshotai/Kimi-K3",
    }
    r = platform_api.post("/api/v1/deployments/", body, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["has_api_key"] is False
    r = platform_api.patch("/api/v1/deployments/k3/", {"enabled": False, "poll_interval_s": 30}, format="json")
    assert r.status_code == 200 and r.json()["enabled"] is False
    assert platform_api.delete("/api/v1/deployments/k3/").status_code == 204
    assert not Deployment.objects.exists()


@pytest.mark.django_db
def test_model_and_workload_crud(platform_api):
    r = platform_api.post("/api/v1/models/", MODEL, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["is_moe"] is True
    assert ModelSpec.objects.get(slug="tiny-moe").to_engine().layer_groups[0].kv_heads == 4
    r = platform_api.post("/api/v1/workloads/", WORKLOAD, format="json")
    assert r.status_code == 201, r.json()
    r = platform_api.patch("/api/v1/workloads/coding-agent/", {"peak_concurrency": 300}, format="json")
    assert r.status_code == 200 and Workload.objects.get().peak_concurrency == 300
    assert platform_api.delete("/api/v1/workloads/coding-agent/").status_code == 204
    assert platform_api.delete("/api/v1/models/tiny-moe/").status_code == 204


@pytest.mark.django_db
def test_quotes_and_api_prices_crud_as_finance(finance_api, sku):
    assert finance_api.post("/api/v1/providers/", {"name": "acme"}, format="json").status_code == 201
    quote = {"sku": sku.slug, "provider": "acme", "usd_per_gpu_hour": "2.50", "quoted_on": "2026-07-17"}
    r = finance_api.post("/api/v1/gpu-quotes/", quote, format="json")
    assert r.status_code == 201, r.json()
    qid = r.json()["id"]
    assert r.json()["pricing_kind"] == "on-demand"
    r = finance_api.patch(f"/api/v1/gpu-quotes/{qid}/", {"usd_per_gpu_hour": "2.10"}, format="json")
    assert r.status_code == 200 and GpuQuote.objects.get().usd_per_gpu_hour == Decimal("2.1")
    price = {
        "slug": "kimi-k3-api",
        "provider": "Moonshot AI",
        "model_name": "kimi-k3",
        "input_cache_hit_usd_per_mtok": "0.30",
        "input_cache_miss_usd_per_mtok": "3.00",
        "output_usd_per_mtok": "15.00",
        "context_window": 1048576,
        "quoted_on": "2026-07-17",
    }
    r = finance_api.post("/api/v1/api-prices/", price, format="json")
    assert r.status_code == 201, r.json()
    assert finance_api.delete("/api/v1/api-prices/kimi-k3-api/").status_code == 204
    assert finance_api.delete(f"/api/v1/gpu-quotes/{qid}/").status_code == 204
    assert not ApiPrice.objects.exists() and not GpuQuote.objects.exists()


@pytest.mark.django_db
def test_filters(viewer_api, sku, cluster, kimi_k3, llama70b):
    from fleet.models import Cluster as C

    C.objects.create(
        slug="other", name="Other", sku=sku, nodes=1, provider=Provider.objects.ensure("bigcloud"), team="research"
    )
    assert [c["slug"] for c in viewer_api.get("/api/v1/clusters/?team=research").json()["results"]] == ["other"]
    assert viewer_api.get("/api/v1/clusters/?provider=ACME").json()["count"] == 1
    assert viewer_api.get(f"/api/v1/clusters/?sku={sku.slug}").json()["count"] == 2
    assert viewer_api.get("/api/v1/clusters/?sku=nope").json()["count"] == 0
    assert [m["slug"] for m in viewer_api.get("/api/v1/models/?is_moe=true").json()["results"]] == ["kimi-k3"]
    assert [m["slug"] for m in viewer_api.get("/api/v1/models/?is_moe=false").json()["results"]] == ["llama-3.1-70b"]
    assert viewer_api.get("/api/v1/skus/?min_hbm_gb=100").json()["count"] == 0
    assert viewer_api.get("/api/v1/skus/?vendor=nvidia").json()["count"] == 1
    # A bad filter value is a 400 with the field, not a 500.
    r = viewer_api.get("/api/v1/skus/?min_hbm_gb=lots")
    assert r.status_code == 400 and "min_hbm_gb" in r.json()


@pytest.mark.django_db
def test_pagination(viewer_api, sku):
    from fleet.models import Cluster as C

    p = Provider.objects.ensure("p")
    C.objects.bulk_create(
        [C(slug=f"c{i:03d}", name=f"C{i}", sku=sku, nodes=1, gpus_per_node=8, provider=p, team="t") for i in range(60)]
    )
    page = viewer_api.get("/api/v1/clusters/").json()
    assert page["count"] == 60 and len(page["results"]) == 50 and page["next"]
    assert len(viewer_api.get("/api/v1/clusters/?page_size=10").json()["results"]) == 10


@pytest.mark.django_db
def test_deleting_a_used_record_is_a_conflict_not_a_500(platform_api, cluster):
    r = platform_api.delete(f"/api/v1/skus/{cluster.sku.slug}/")
    assert r.status_code == 409
    assert "H100 pool" in r.json()["used_by"]


@pytest.mark.django_db
def test_api_root_lists_every_endpoint(viewer_api):
    root = viewer_api.get("/api/v1/").json()
    records = {
        "skus",
        "clusters",
        "providers",
        "deployments",
        "gpu-quotes",
        "api-prices",
        "models",
        "workloads",
        "decisions",
        "plans",
        "calibrations",
        "budgets",
        "bills",
        "exchange-rates",
        "owned-costs",
        "cluster-purchases",
        "electricity-prices",
        "tokens",
    }
    assert set(root) == records | {"sizing", "estimate", "breakeven", "spend", "prefix-cache", "route", "route-litellm"}
    assert root["sizing"].endswith("/api/v1/sizing/")
