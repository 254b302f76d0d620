"""`manage.py load_catalog`: every required preset, the seeds' figures, and idempotence."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from fleet.catalog_loader import CATALOG_DIR
from fleet.models import ApiPrice, GpuQuote, HardwareSku, ModelSpec

SKUS = {
    "h100-sxm-80gb",
    "h200-141gb",
    "b200-192gb",
    "gb300-288gb",
    "a100-sxm-80gb",
    "mi300x-192gb",
    "mi325x-256gb",
    "mi355x-288gb",
    "l40s-48gb",
    "rtx-4090-24gb",
}
MODELS = {
    "kimi-k3",
    "kimi-linear-48b-a3b",
    "deepseek-v3",
    "kimi-k2",
    "qwen3-235b-a22b",
    "qwen3-next-80b-a3b",
    "gpt-oss-120b",
    "llama-3.1-70b",
}


@pytest.mark.django_db
def test_catalogue_loads_every_required_record():
    call_command("load_catalog")
    skus = {s.slug: s for s in HardwareSku.objects.all()}
    assert set(skus) >= SKUS
    assert any(s.hbm_gb == 16 for s in skus.values()), "a 16 GB card"
    # The nominal decimal GB the seeds use.
    assert {k: skus[k].hbm_gb for k in ("h100-sxm-80gb", "h200-141gb", "b200-192gb", "gb300-288gb")} == {
        "h100-sxm-80gb": 80,
        "h200-141gb": 141,
        "b200-192gb": 192,
        "gb300-288gb": 288,
    }
    models = {m.slug: m for m in ModelSpec.objects.all()}
    assert set(models) >= MODELS
    dense_small = [m for m in models.values() if not m.is_moe and m.total_params < 40e9]
    assert {round(m.total_params / 1e9, -1) for m in dense_small} >= {10, 30}  # 7B-, 14B- and 32B-class
    assert len(dense_small) >= 3
    every = [*skus.values(), *models.values()]
    assert all(r.source for r in every), "every figure carries its source"


@pytest.mark.django_db
def test_kimi_k3_preset_matches_the_seeds():
    call_command("load_catalog")
    k3 = ModelSpec.objects.get(slug="kimi-k3")
    # The seeds' 2.8T / 104B are the card's rounding of the config's counts (issue 25: counted, the card beside it).
    assert (k3.total_params, k3.active_params) == (2_779_481_795_168, 105_361_336_928)
    assert (round(k3.total_params / 1e12, 1), round((k3.active_params - 163_840 * 7168) / 1e9)) == (2.8, 104)
    assert {p["part"] for p in k3.weight_parts} >= {"routed_experts", "attention", "linear_attention", "embedding"}
    assert (k3.n_routed_experts, k3.n_active_experts, k3.n_shared_experts) == (896, 16, 2)
    # DESIGN.md, K3's published config.json: MXFP4 routed experts, bf16 attention/shared experts/dense MLP/lm_head
    assert (k3.weight_format, k3.expert_weight_format) == ("bf16", "mxfp4") and k3.max_context_tokens == 1_048_576
    groups = {g.kind: g for g in k3.to_engine().layer_groups}
    assert groups["linear"].count == 69 and groups["mla"].count == 24
    assert k3.assumptions, "unpublished dimensions are marked as assumptions"


@pytest.mark.django_db
def test_seed_prices():
    call_command("load_catalog")
    api = ApiPrice.objects.get(slug="kimi-k3-api")
    prices = (api.input_cache_hit_usd_per_mtok, api.input_cache_miss_usd_per_mtok, api.output_usd_per_mtok)
    assert prices == (Decimal("0.30"), Decimal("3.00"), Decimal("15.00"))
    assert api.quoted_on.strftime("%Y-%m") == "2026-07"
    quotes = GpuQuote.objects.filter(pricing_kind="on-demand", usd_per_gpu_hour=Decimal("2.50"))
    assert set(quotes.values_list("sku__slug", flat=True)) == set(HardwareSku.objects.values_list("slug", flat=True))
    assert all(q.quoted_on.strftime("%Y-%m") == "2026-07" and "assumption" in q.source.lower() for q in quotes)


@pytest.mark.django_db
def test_reloading_updates_and_never_duplicates():
    call_command("load_catalog")
    counts = (
        HardwareSku.objects.count(),
        ModelSpec.objects.count(),
        GpuQuote.objects.count(),
        ApiPrice.objects.count(),
    )
    HardwareSku.objects.filter(slug="h100-sxm-80gb").update(hbm_gb=1)
    call_command("load_catalog")
    again = (
        HardwareSku.objects.count(),
        ModelSpec.objects.count(),
        GpuQuote.objects.count(),
        ApiPrice.objects.count(),
    )
    assert again == counts
    assert HardwareSku.objects.get(slug="h100-sxm-80gb").hbm_gb == 80


@pytest.mark.django_db
def test_a_bad_catalogue_fails_loudly_and_loads_nothing(tmp_path):
    for name in ("skus.json", "models.json", "gpu_quotes.json", "api_prices.json"):
        (tmp_path / name).write_text((CATALOG_DIR / name).read_text())
    models = json.loads((tmp_path / "models.json").read_text())
    models[-1]["layer_groups"] = [{"kind": "full", "count": 4}]
    (tmp_path / "models.json").write_text(json.dumps(models))
    with pytest.raises(CommandError, match=r"models.json\[\d+\].*kv_heads"):
        call_command("load_catalog", "--dir", str(tmp_path))
    assert not HardwareSku.objects.exists()  # all or nothing


def test_catalogue_dates_parse():
    for q in json.loads((CATALOG_DIR / "gpu_quotes.json").read_text()):
        date.fromisoformat(q["quoted_on"])


@pytest.mark.django_db
def test_a_skus_scaleup_domain_reaches_the_engine_and_the_api(viewer_api):
    """GB300 NVL72: 4 GPUs a tray, 72 on one NVLink domain (skus.json cites NVIDIA's product page)."""
    call_command("load_catalog", stdout=StringIO())
    sku = HardwareSku.objects.get(slug="gb300-288gb")
    assert (sku.gpus_per_node, sku.scaleup_domain_gpus) == (4, 72)
    assert sku.to_engine().scaleup_domain == 72
    body = viewer_api.get("/api/v1/skus/gb300-288gb/").json()
    assert body["scaleup_domain_gpus"] == 72
