"""`manage.py load_catalog`: every required preset, the seeds' figures, and idempotence."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from fleet.catalog_loader import CATALOG_DIR
from fleet.models import ApiPrice, GpuQuote, HardwareSku, ModelSpec, Provider

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


def _catalogue(name: str) -> list[dict]:
    return json.loads((CATALOG_DIR / name).read_text())


def test_every_api_price_is_dated_sourced_and_names_a_catalogue_provider_and_model():
    """Issue 26: each hosted-API price says when and where it was read, for which catalogue model, from a
    provider of providers.json (kind model-api); no cache discount listed: the hit price is the miss price,
    and the source says so."""
    providers = {p["name"]: p for p in _catalogue("providers.json")}
    models = {m["slug"] for m in _catalogue("models.json")}
    prices = _catalogue("api_prices.json")
    assert len({p["slug"] for p in prices}) == len(prices)
    for p in prices:
        assert p["provider"] in providers, p["slug"]
        assert providers[p["provider"]]["kind"] == "model-api" and providers[p["provider"]]["source"]
        assert p["model"] in models, p["slug"]
        date.fromisoformat(p["quoted_on"])
        hit, miss, out = (Decimal(p[k]) for k in ApiPrice.PRICES)
        assert 0 <= hit <= miss and out > 0, p["slug"]
        assert "commit" in p["source"] or "Seed article" in p["source"], p["slug"]
        if hit == miss:
            assert "no cache-hit discount" in p["source"], p["slug"]
    # Each priced model has at least one price from an inference provider beside its own lab's, where found.
    by_model: dict[str, set[str]] = {}
    for p in prices:
        by_model.setdefault(p["model"], set()).add(p["provider"])
    assert by_model["kimi-k3"] >= {"Moonshot AI", "Fireworks AI"}
    assert by_model["kimi-k2"] >= {"Moonshot AI", "Groq"} and by_model["deepseek-v3"] >= {"DeepSeek", "Together AI"}
    assert "OpenAI" not in by_model["gpt-oss-120b"]  # OpenAI sells no API for its open-weight model
    assert models - set(by_model) == {"kimi-linear-48b-a3b"}  # no public price found (README)


@pytest.mark.django_db
def test_the_api_prices_load_with_their_providers():
    call_command("load_catalog", stdout=StringIO())
    prices = _catalogue("api_prices.json")
    assert ApiPrice.objects.count() == len(prices)
    loaded = ApiPrice.objects.get(slug="deepseek-v3-deepseek")
    assert (loaded.provider, loaded.model.slug, loaded.quoted_on) == ("DeepSeek", "deepseek-v3", date(2025, 7, 12))
    kinds = dict(Provider.objects.filter(name__in={p["provider"] for p in prices}).values_list("name", "kind"))
    assert set(kinds.values()) == {"model-api"} and len(kinds) == len({p["provider"] for p in prices})
    assert Provider.objects.get(name="Groq").source.startswith("Hosted inference API")


@pytest.mark.django_db
def test_an_api_price_of_a_provider_missing_from_providers_json_fails(tmp_path):
    for name in ("skus.json", "models.json", "providers.json", "gpu_quotes.json", "api_prices.json"):
        (tmp_path / name).write_text((CATALOG_DIR / name).read_text())
    prices = json.loads((tmp_path / "api_prices.json").read_text())
    prices[1]["provider"] = "Nobody Inc"
    (tmp_path / "api_prices.json").write_text(json.dumps(prices))
    with pytest.raises(CommandError, match=r"api_prices.json\[1\]: provider 'Nobody Inc' is not in providers.json"):
        call_command("load_catalog", "--dir", str(tmp_path))
    assert not ApiPrice.objects.exists()
