"""POST /api/v1/sizing/ and `manage.py size`: the seeds' figures over HTTP, errors as 400s."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

URL = "/api/v1/sizing/"


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


@pytest.mark.django_db
@pytest.mark.parametrize(("fmt", "tb"), [("bf16", 5.6), ("fp8", 2.8), ("mxfp4", 1.4), ("int2", 0.7)])
def test_k3_weights_by_format_without_scale_overhead(viewer_api, catalog, fmt, tb):
    body = {
        "model": "kimi-k3",
        "sku": "h100-sxm-80gb",
        "gpus": 32,
        "weight_format": fmt,
        "include_scale_overhead": False,
    }
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200, r.json()
    # The seeds' table (2.8T x 2 / 1 / 0.5 / 0.25 B) at its precision, 0.1 TB; exact: the config's count x bytes.
    bytes_per_weight = {"bf16": 2, "fp8": 1, "mxfp4": 0.5, "int2": 0.25}[fmt]
    assert r.json()["weights_bytes"] == round(2_779_481_795_168 * bytes_per_weight)
    assert round(r.json()["weights_bytes"] / 1e12, 1) == tb


@pytest.mark.django_db
def test_k3_mxfp4_with_scales_is_about_1_49_tb(viewer_api, catalog):
    """The seeds' one-format view: every weight in MXFP4, with the 8-bit scale per 32 weights."""
    body = {"model": "kimi-k3", "sku": "h100-sxm-80gb", "gpus": 32, "weight_format": "mxfp4"}
    r = viewer_api.post(URL, body, format="json").json()
    # 2,779,481,795,168 parameters (the config's count) x 4.25 / 8; the seeds' 1.49 TB is the card's 2.8T x 4.25 / 8.
    assert r["weights_bytes"] == round(2_779_481_795_168 * 4.25 / 8) == 1_476_599_703_683
    assert round(2_800_000_000_000 * 4.25 / 8 / 1e12, 2) == 1.49


@pytest.mark.django_db
def test_k3_as_published_is_about_1_56_tb(viewer_api, catalog):
    """K3's published config (DESIGN.md): MXFP4 routed experts (92 x 896 x 3 x 3584 x 3072 = 2,722,740,830,208
    parameters x 4.25 / 8), bf16 for the other 56,740,964,960 (x 2 B): 1,559,937,995,968 bytes."""
    r = viewer_api.post(URL, {"model": "kimi-k3", "sku": "h100-sxm-80gb", "gpus": 32}, format="json").json()
    assert r["weights_bytes"] == 1_559_937_995_968
    assert r["weights"]["expert_format"] == "mxfp4" and r["weights"]["other_format"] == "bf16"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("sku", "floor"), [("h100-sxm-80gb", 18), ("h200-141gb", 10), ("b200-192gb", 8), ("gb300-288gb", 5)]
)
def test_weights_only_floors(viewer_api, catalog, sku, floor):
    """The seeds' floors count 1.4 TB: every weight in MXFP4, no scales."""
    body = {"model": "kimi-k3", "sku": sku, "weight_format": "mxfp4", "include_scale_overhead": False}
    assert viewer_api.post(URL, body, format="json").json()["min_gpus_for_weights"] == floor


@pytest.mark.django_db
def test_sglang_recipe_32_h100_is_2560_gb(viewer_api, catalog):
    body = {"model": "kimi-k3", "sku": "h100-sxm-80gb", "gpus": 32, "tp": 8, "dp": 4, "ep": 32}
    r = viewer_api.post(URL, body, format="json").json()
    assert r["aggregate_hbm_bytes"] == 2_560 * 10**9
    assert r["per_gpu"]["hbm_bytes"] == 80 * 10**9
    assert r["layout"] == {"tp": 8, "pp": 1, "dp": 4, "ep": 32}
    assert r["assumptions"] and all(isinstance(a, str) for a in r["assumptions"])


@pytest.mark.django_db
def test_single_gpu_does_not_fit_and_reports_the_deficit(viewer_api, catalog):
    r = viewer_api.post(URL, {"model": "kimi-k3", "sku": "gb300-288gb"}, format="json").json()
    assert r["fits"] is False and r["max_concurrent_sequences"] == 0
    # "Fits" means one sequence at the context is admitted: the deficit is what that needs beyond usable.
    per_gpu = r["per_gpu"]
    one_sequence = r["kv_bytes_per_sequence_per_gpu"] + r["state_bytes_per_sequence_per_gpu"]
    expected = per_gpu["weights_bytes"] + per_gpu["runtime_bytes"] + one_sequence - per_gpu["usable_bytes"]
    assert r["deficit_bytes"] == expected > 0
    assert per_gpu["cache_bytes"] < 0


@pytest.mark.django_db
def test_more_context_fewer_sequences_and_split_never_beats_unified(viewer_api, catalog):
    base = {"model": "kimi-k3", "sku": "b200-192gb", "gpus": 16, "tp": 8, "dp": 2, "ep": 16}
    short = viewer_api.post(URL, {**base, "context_tokens": 32768}, format="json").json()
    long = viewer_api.post(URL, {**base, "context_tokens": 262144}, format="json").json()
    assert short["fits"] and short["max_concurrent_sequences"] > long["max_concurrent_sequences"] > 0
    split = viewer_api.post(URL, {**base, "context_tokens": 32768, "pool": "split"}, format="json").json()
    assert split["max_concurrent_sequences"] == short["max_concurrent_sequences_split"]
    assert split["max_concurrent_sequences"] <= short["max_concurrent_sequences"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model": "no-such-model"}, "model"),
        ({"sku": "no-such-sku"}, "sku"),
        ({"tp": 5}, "tp"),
        ({"gpus": 8, "tp": 8, "ep": 3}, "ep"),
        ({"gpus": 8, "tp": 1, "pp": 200}, "pp"),
        ({"context_tokens": 2_000_000}, "context_tokens"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"gpu_memory_utilization": 0}, "gpu_memory_utilization"),
        ({"weight_format": "fp3"}, "weight_format"),
        ({"kv_cache_dtype": "fp4"}, "kv_cache_dtype"),
        ({"runtime_reserve_gib": -1}, "runtime_reserve_gib"),
        ({"pool": "shared"}, "pool"),
        ({"gpus": 0}, "gpus"),
        ({"gpus": "many"}, "gpus"),
    ],
)
def test_bad_input_is_a_400_with_the_field(viewer_api, catalog, change, field):
    r = viewer_api.post(URL, {"model": "kimi-k3", "sku": "h200-141gb", **change}, format="json")
    assert r.status_code == 400, r.content
    assert field in r.json(), r.json()


@pytest.mark.django_db
def test_sizing_needs_a_login(catalog):
    assert APIClient().post(URL, {"model": "kimi-k3", "sku": "h200-141gb"}, format="json").status_code == 401


@pytest.mark.django_db
def test_the_command_gives_the_api_answer(viewer_api, catalog):
    body = {
        "model": "llama-3.1-70b",
        "sku": "h100-sxm-80gb",
        "gpus": 4,
        "context_tokens": 32768,
        "kv_cache_dtype": "fp8",
    }
    api = viewer_api.post(URL, body, format="json").json()
    out = StringIO()
    call_command(
        "size",
        "--model",
        "llama-3.1-70b",
        "--sku",
        "h100-sxm-80gb",
        "--gpus",
        "4",
        "--context-tokens",
        "32768",
        "--kv-cache-dtype",
        "fp8",
        "--json",
        stdout=out,
    )
    assert json.loads(out.getvalue()) == api
    text = StringIO()
    call_command("size", "--model", "llama-3.1-70b", "--sku", "h100-sxm-80gb", "--gpus", "4", stdout=text)
    assert "fits:" in text.getvalue() and "assumptions:" in text.getvalue()


@pytest.mark.django_db
def test_the_command_reports_field_errors(catalog):
    with pytest.raises(CommandError, match="tp: Tensor parallel size 5"):
        call_command("size", "--model", "kimi-k3", "--sku", "h200-141gb", "--tp", "5", stdout=StringIO())


@pytest.mark.django_db
def test_vllm_profile_over_http_with_the_logged_memory(viewer_api, catalog):
    """Llama-3.1-70B on 4 H100 at tp 4, vLLM 0.11.0, 40 GiB of KV cache memory per GPU as logged:
    page 2 x (8 / 4) x 128 x 2 B x 16 tokens = 16,384 B; 80 layers; num_blocks = 40 x 2^30 // 16,384 // 80
    = 32,768; logged tokens 32,768 x 16 = 524,288; at 131,072 tokens 32,768 / 8,192 = 4.00x."""
    body = {
        "model": "llama-3.1-70b",
        "sku": "h100-sxm-80gb",
        "gpus": 4,
        "engine": "vllm",
        "engine_version": "0.11.0",
        "available_kv_cache_gib": 40,
        "max_model_len": 131072,
    }
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200, r.json()
    d = r.json()
    assert (d["engine"], d["engine_version"]) == ("vllm", "0.11.0")
    assert (d["engine_block_size_tokens"], d["engine_num_blocks"], d["engine_kv_cache_tokens"]) == (16, 32_768, 524_288)
    assert d["engine_max_concurrency"] == 4.0
    assert d["available_kv_cache_bytes"] == 40 * 2**30
    assert d["kv_cache_groups"] == [
        {
            "kind": "full",
            "layers": 80,
            "padding_layers": 0,
            "block_size_tokens": 16,
            "page_bytes": 16_384,
            "window": 0,
            "extra_blocks": 0,
            "pool": "shared",
        }
    ]


@pytest.mark.django_db
def test_a_deployment_supplies_the_defaults(viewer_api, deployment):
    """The fixture deployment serves K3 with SGLang as tp 8 x dp 4 on its H100 cluster: asking by deployment
    alone sizes that layout, and the engine comes from the deployment (sglang), unless overridden."""
    r = viewer_api.post(URL, {"deployment": "k3-prod", "engine": "generic"}, format="json")
    assert r.status_code == 200, r.json()
    d = r.json()
    assert d["inputs"]["layout"] == {"tp": 8, "pp": 1, "dp": 4, "ep": 32}
    assert d["inputs"]["model"] == "Kimi K3" and d["engine"] == "generic"
    r = viewer_api.post(URL, {"deployment": "nope"}, format="json")
    assert r.status_code == 400 and "deployment" in r.json()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"engine": "tgi"}, "engine"),
        ({"engine": "vllm", "engine_version": "0.8.5"}, "engine_version"),
        ({"engine": "vllm", "engine_version": "next"}, "engine_version"),
        ({"engine": "vllm", "block_size_tokens": 0}, "block_size_tokens"),
        ({"engine": "vllm", "available_kv_cache_gib": -2}, "available_kv_cache_gib"),
        ({"engine": "vllm", "max_model_len": 99_999_999}, "max_model_len"),
    ],
)
def test_engine_inputs_are_400s_with_their_field(viewer_api, catalog, extra, field):
    body = {"model": "llama-3.1-70b", "sku": "h100-sxm-80gb", "gpus": 4, **extra}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 400 and field in r.json(), r.json()


@pytest.mark.django_db
def test_model_and_sku_required_without_a_deployment(viewer_api, catalog):
    r = viewer_api.post(URL, {"gpus": 4}, format="json")
    assert r.status_code == 400 and {"model", "sku"} <= set(r.json())


@pytest.mark.django_db
def test_prefix_caching_takes_one_more_state_block_per_request(viewer_api, catalog):
    """Qwen3-Next at tp 2 with 40 GiB: 6,425 blocks (tests/engine/test_profile_vllm.py); a 262,144-token
    request holds 482 attention blocks + 1 per GDN group (3) = 485, or 488 in mamba 'align' mode (2 each).
    Left out, prefix_caching is the release's default: on for hybrids from vLLM 0.28 (the newest modelled)."""
    body = {
        "model": "qwen3-next-80b-a3b",
        "sku": "h200-141gb",
        "gpus": 2,
        "engine": "vllm",
        "available_kv_cache_gib": 40,
        "context_tokens": 262144,
    }
    plain = viewer_api.post(URL, {**body, "prefix_caching": False}, format="json").json()
    aligned = viewer_api.post(URL, {**body, "prefix_caching": True}, format="json").json()
    default = viewer_api.post(URL, body, format="json").json()
    assert plain["engine_max_concurrency"] == round(6_425 / 485, 4)
    assert aligned["engine_max_concurrency"] == round(6_425 / 488, 4) == default["engine_max_concurrency"]
    older = viewer_api.post(URL, {**body, "engine_version": "0.27.0"}, format="json").json()
    assert older["engine_max_concurrency"] == round(6_425 / 485, 4)  # opt-in for hybrids before 0.28


@pytest.mark.django_db
def test_ep72_with_redundant_experts_over_http(viewer_api, catalog):
    body = {"model": "deepseek-v3", "sku": "h100-sxm-80gb", "tp": 1, "dp": 72, "ep": 72, "context_tokens": 2000}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 400 and "redundant_experts=32" in r.json()["ep"][0]
    ok = viewer_api.post(URL, {**body, "redundant_experts": 32}, format="json")
    assert ok.status_code == 200 and ok.json()["layout"]["redundant_experts"] == 32
    bad = viewer_api.post(URL, {**body, "tp": 4, "dp": 2, "ep": 8, "etp": 4}, format="json")
    assert bad.status_code == 400 and "etp" in bad.json()
