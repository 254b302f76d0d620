"""Bad values get clear, field-level errors through the API (and the same rules in the admin)."""

from __future__ import annotations

import pytest
from test_api_crud import MODEL, SKU, WORKLOAD

from fleet.models import Provider


def _errors(api, url, body, method="post"):
    r = getattr(api, method)(url, body, format="json")
    assert r.status_code == 400, (r.status_code, r.content)
    return r.json()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hbm_gb", 0),
        ("hbm_gb", -80),
        ("hbm_bandwidth_tbps", 0),
        ("bf16_tflops", -1),
        ("fp8_tflops", 0),
        ("interconnect_gbps", -5),
        ("gpus_per_node", 0),
    ],
)
def test_sku_rejects_non_positive(platform_api, field, value):
    assert field in _errors(platform_api, "/api/v1/skus/", {**SKU, field: value})


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nodes", 0),
        ("nodes", -1),
        ("gpus_per_node", 0),
        ("hours_per_day", "0"),
        ("hours_per_day", "25"),
        ("status", "exploded"),
        ("sku", "no-such-sku"),
    ],
)
def test_cluster_rejects_bad_values(platform_api, sku, field, value):
    body = {
        "slug": "c1",
        "name": "C1",
        "sku": sku.slug,
        "nodes": 1,
        "provider": "p",
        "team": "t",
        field: value,
    }
    assert field in _errors(platform_api, "/api/v1/clusters/", body)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("requests_per_day", 0),
        ("mean_prompt_tokens", -3),
        ("mean_output_tokens", 0),
        ("peak_concurrency", 0),
        ("prefix_cache_hit_rate", 1.5),
        ("prefix_cache_hit_rate", -0.1),
        ("ttft_slo_ms", 0),
        ("tpot_slo_ms", -1),
        ("p95_context_tokens", 10),
    ],
)
def test_workload_rejects_bad_values(platform_api, field, value):
    assert field in _errors(platform_api, "/api/v1/workloads/", {**WORKLOAD, field: value})


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"total_params": 0}, "total_params"),
        ({"active_params": 40_000_000_000}, "active_params"),
        ({"expert_params": 31_000_000_000}, "expert_params"),
        ({"n_active_experts": 200}, "n_active_experts"),
        ({"n_active_experts": 0}, "n_active_experts"),
        ({"weight_format": "fp3"}, "weight_format"),
        ({"max_context_tokens": 0}, "max_context_tokens"),
        ({"layer_groups": []}, "layer_groups"),
        ({"layer_groups": "full"}, "layer_groups"),
    ],
)
def test_model_rejects_bad_values(platform_api, change, field):
    assert field in _errors(platform_api, "/api/v1/models/", {**MODEL, **change})


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("groups", "needle"),
    [
        ([{"kind": "sparse", "count": 4}], "layer_groups.0.kind"),
        ([{"kind": "full", "count": 4, "kv_heads": 8}], "layer_groups.0.head_dim"),
        ([{"kind": "sliding", "count": 4, "kv_heads": 8, "head_dim": 64}], "layer_groups.0.window"),
        ([{"kind": "mla", "count": 4, "kv_lora_rank": 512}], "layer_groups.0.qk_rope_head_dim"),
        ([{"kind": "full", "count": 0, "kv_heads": 8, "head_dim": 128}], "layer_groups.0.count"),
        ([{"kind": "full", "count": 2, "kv_heads": 8, "head_dim": 128, "window": 4}], "layer_groups.0.window"),
        (
            [
                {
                    "kind": "linear",
                    "count": 3,
                    "key_heads": 16,
                    "value_heads": 32,
                    "key_dim": 128,
                    "value_dim": 128,
                    "conv_kernel": 4,
                    "state_dtype": "fp64",
                }
            ],
            "layer_groups.0.state_dtype",
        ),
    ],
)
def test_layer_group_errors_name_the_item_and_key(platform_api, groups, needle):
    errors = _errors(platform_api, "/api/v1/models/", {**MODEL, "layer_groups": groups})
    assert any(needle in message for message in errors["layer_groups"]), errors


@pytest.mark.django_db
def test_deployment_layout_must_fit_the_cluster(platform_api, cluster, kimi_k3):
    base = {"slug": "d", "cluster": cluster.slug, "model": kimi_k3.slug, "engine": "vllm", "max_model_len": 131072}
    # 32 GPUs in the cluster: 2 replicas x tp 8 x dp 4 = 64 do not fit.
    errors = _errors(platform_api, "/api/v1/deployments/", {**base, "replicas": 2, "tp": 8, "dp": 4})
    assert "replicas" in errors and "64 GPUs" in errors["replicas"][0]
    # ep must divide the replica's GPUs (tp x pp x dp = 8).
    assert "ep" in _errors(platform_api, "/api/v1/deployments/", {**base, "tp": 8, "ep": 3})
    # tp must divide the model's 96 attention heads.
    assert "tp" in _errors(platform_api, "/api/v1/deployments/", {**base, "tp": 5})
    # ep must divide 896 routed experts: 32 GPUs, ep 32 is fine (tp 1 x dp 32 with ep 32 divides too,
    # but then every GPU holds the whole attention and does not fit: refused with the deficit).
    tp1 = _errors(platform_api, "/api/v1/deployments/", {**base, "tp": 1, "dp": 32, "ep": 32})
    assert tp1["tp"][0].startswith("This layout does not fit") and "GiB" in tp1["tp"][0]
    ok = platform_api.post("/api/v1/deployments/", {**base, "tp": 8, "dp": 4, "ep": 32}, format="json")
    assert ok.status_code == 201, ok.json()


@pytest.mark.django_db
def test_deployment_rejects_bad_values(platform_api, cluster, kimi_k3):
    base = {"slug": "d", "cluster": cluster.slug, "model": kimi_k3.slug, "engine": "vllm"}
    for field, value in [
        ("tp", 0),
        ("replicas", 0),
        ("gpu_memory_utilization", 1.2),
        ("gpu_memory_utilization", 0),
        ("engine", "tgi"),
        ("base_url", "ftp://x"),
        ("base_url", "not a url"),
        ("poll_interval_s", 1),
        ("kv_cache_dtype", "fp4"),
        ("max_model_len", 2_000_000),
    ]:
        assert field in _errors(platform_api, "/api/v1/deployments/", {**base, field: value}), field


@pytest.mark.django_db
def test_quote_cannot_expire_before_it_was_quoted(finance_api, sku):
    Provider.objects.ensure("acme")
    body = {
        "sku": sku.slug,
        "provider": "acme",
        "usd_per_gpu_hour": "2.5",
        "quoted_on": "2026-07-17",
        "valid_until": "2026-07-01",
    }
    assert "valid_until" in _errors(finance_api, "/api/v1/gpu-quotes/", body)
    assert "usd_per_gpu_hour" in _errors(finance_api, "/api/v1/gpu-quotes/", {**body, "usd_per_gpu_hour": "0"})
    assert "quoted_on" in _errors(finance_api, "/api/v1/gpu-quotes/", {**body, "quoted_on": "July"})


@pytest.mark.django_db
def test_api_price_rejects_negative_prices(finance_api):
    body = {
        "slug": "x",
        "provider": "p",
        "model_name": "m",
        "input_cache_hit_usd_per_mtok": "-1",
        "input_cache_miss_usd_per_mtok": "3",
        "output_usd_per_mtok": "15",
        "quoted_on": "2026-07-17",
    }
    assert "input_cache_hit_usd_per_mtok" in _errors(finance_api, "/api/v1/api-prices/", body)


@pytest.mark.django_db
def test_partial_update_is_validated_against_the_stored_record(platform_api, deployment):
    # Stored: tp 8, dp 4 on 32 GPUs. Raising replicas alone must be checked with the stored layout.
    errors = _errors(platform_api, f"/api/v1/deployments/{deployment.slug}/", {"replicas": 2}, method="patch")
    assert "replicas" in errors


@pytest.mark.django_db
def test_admin_shows_the_same_field_errors(client, make_user, cluster, kimi_k3):
    admin = make_user("root", "admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    r = client.post(
        "/admin/fleet/deployment/add/",
        {
            "slug": "d",
            "cluster": cluster.slug,  # the page form's picker takes the slug (fleet.pickers)
            "model": kimi_k3.pk,
            "replicas": 1,
            "tp": 5,
            "pp": 1,
            "dp": 1,
            "ep": 1,
            "engine": "vllm",
            "kv_cache_dtype": "bf16",
            "gpu_memory_utilization": 0.9,
            "poll_interval_s": 15,
        },
    )
    assert r.status_code == 200
    assert "must divide the model&#x27;s 96 attention heads" in r.content.decode()
