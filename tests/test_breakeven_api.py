"""POST /api/v1/breakeven/: the seeds' money figures over HTTP, prices from records, errors as 400s."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from priced import acme_quoting_the_seeds_rate

from fleet.models import GpuQuote, Provider, Workload

URL = "/api/v1/breakeven/"
SEED_PRICES = {
    "input_cache_hit_usd_per_mtok": "0.30",
    "input_cache_miss_usd_per_mtok": "3.00",
    "output_usd_per_mtok": "15.00",
}


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("gpus", "hours", "gpu_hours", "rent"),
    [
        (1, 24, "720.00", "1800.00"),
        (8, 4, "960.00", "2400.00"),
        (8, 24, "5760.00", "14400.00"),
        (32, 24, "23040.00", "57600.00"),
    ],
)
def test_seed_money_table(viewer_api, gpus, hours, gpu_hours, rent):
    body = {
        "gpus": gpus,
        "hours_per_day": hours,
        "usd_per_gpu_hour": "2.50",
        "monthly_input_tokens": 0,
        "monthly_output_tokens": 1_000_000,
        **SEED_PRICES,
    }
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200, r.json()
    assert (r.json()["gpu_hours"], r.json()["monthly_rent_usd"]) == (gpu_hours, rent)


def seed_assumption(sku: str = "h100-sxm-80gb") -> GpuQuote:
    """The seeds' 2.50 USD per GPU-hour for ``sku``: an assumption (no provider), never in force."""
    return GpuQuote.objects.get(sku__slug=sku, provider__isnull=True)


@pytest.mark.django_db
def test_rent_buys_960m_output_tokens_from_the_quote_and_price_records(viewer_api, catalog):
    """The seeds' case: priced on the seeds' assumption because the request picks it (never in force),
    and every figure says so."""
    body = {
        "gpus": 8,
        "sku": "h100-sxm-80gb",
        "gpu_quote": seed_assumption().pk,
        "on": "2026-08-01",
        "api_price": "kimi-k3-api",
        "monthly_input_tokens": 0,
        "monthly_output_tokens": 100_000_000,
    }
    r = viewer_api.post(URL, body, format="json").json()
    assert r["monthly_rent_usd"] == "14400.00"
    assert r["breakeven_output_tokens_per_month"] == 960_000_000  # ~32M a day
    assert r["breakeven_output_tokens_per_month"] // 30 == 32_000_000
    assert r["cheaper"] == "api"
    (quote,) = r["quotes_used"]
    assert (quote["sku"], quote["usd_per_gpu_hour"], quote["quoted_on"]) == ("h100-sxm-80gb", "2.5000", "2026-07-17")
    assert quote["basis"] == "assumption" and r["price_basis"] == "assumption"
    assert any("an assumption no provider quoted" in a for a in r["assumptions"])
    assert r["api_price_used"]["quoted_on"] == "2026-07-17" and r["api_price_used"]["output_usd_per_mtok"] == "15.0000"


@pytest.mark.django_db
def test_a_sku_alone_is_priced_at_its_price_in_force_never_the_seeds_assumption(viewer_api, catalog):
    """Without a pick, the SKU's price in force on 2026-08-01: no provider quoted the fleet, so the
    cheapest public list price in force that day (Nebius's H100 at 2.95 USD, read 2026-05-18; the
    cheaper Hyperstack and RunPod rows are dated later): 8 x 2.95 x 720 h = 16,992 USD."""
    body = {"gpus": 8, "sku": "h100-sxm-80gb", "on": "2026-08-01", "api_price": "kimi-k3-api",
            "monthly_input_tokens": 0, "monthly_output_tokens": 100_000_000}  # fmt: skip
    r = viewer_api.post(URL, body, format="json").json()
    (quote,) = r["quotes_used"]
    assert (quote["provider"], quote["usd_per_gpu_hour"], quote["basis"]) == ("Nebius", "2.9500", "list")
    assert r["monthly_rent_usd"] == "16992.00"
    assert "Priced at 2.95 USD per GPU-hour: Nebius's on-demand public list price of 2026-05-18." in r["assumptions"]


@pytest.mark.django_db
def test_download_of_1_5_tb_at_1_gb_per_s_is_25_minutes(viewer_api):
    body = {
        "gpus": 32,
        "usd_per_gpu_hour": "2.50",
        "monthly_input_tokens": 0,
        "monthly_output_tokens": 1,
        "weights_bytes": 1_500_000_000_000,
        "download_gbytes_per_s": 1,
        **SEED_PRICES,
    }
    r = viewer_api.post(URL, body, format="json").json()
    assert r["download_minutes"] == "25.00"
    # 32 GPUs bill while downloading: 32 x 2.50 USD/h x 25/60 h = 33.33 USD (to the cent).
    assert Decimal(r["download_usd"]) == (Decimal(32) * Decimal("2.50") * 25 / 60).quantize(Decimal("0.01"))


@pytest.mark.django_db
def test_a_cache_heavy_workload_moves_the_mix_breakeven_out(viewer_api, platform_api):
    # 8 x 2.50 USD always on = 14,400 USD. Prompts 20x the output. 90% hits: blended input
    # 0.9 x 0.30 + 0.1 x 3.00 = 0.57 USD/M; API per output Mtok = 15 + 20 x 0.57 = 26.4 USD, so
    # breakeven = 14,400 / 26.4 = 545.45M output tokens. 0% hits: 15 + 20 x 3 = 75 -> 192M.
    common = {
        "slug": "w",
        "name": "w",
        "team": "t",
        "requests_per_day": 10_000,
        "mean_prompt_tokens": 20_000,
        "mean_output_tokens": 1_000,
        "p95_context_tokens": 30_000,
        "peak_concurrency": 10,
        "ttft_slo_ms": 2000,
        "tpot_slo_ms": 50,
    }
    platform_api.post("/api/v1/workloads/", {**common, "prefix_cache_hit_rate": 0.9}, format="json")
    platform_api.post("/api/v1/workloads/", {**common, "slug": "cold", "prefix_cache_hit_rate": 0.0}, format="json")
    assert Workload.objects.count() == 2
    base = {"gpus": 8, "usd_per_gpu_hour": "2.50", **SEED_PRICES}
    agent = viewer_api.post(URL, {**base, "workload": "w"}, format="json").json()
    cold = viewer_api.post(URL, {**base, "workload": "cold"}, format="json").json()
    assert agent["breakeven_output_tokens_per_month_mix"] == 545_454_545
    assert cold["breakeven_output_tokens_per_month_mix"] == 192_000_000
    # The workload's own volume: 10,000 x 1,000 x 30 = 300M output tokens a month.
    assert Decimal(agent["monthly_api_usd"]) == Decimal(300) * Decimal("26.4")


@pytest.mark.django_db
def test_beyond_capacity_the_api_wins_at_every_volume(viewer_api):
    body = {
        "gpus": 8,
        "usd_per_gpu_hour": "2.50",
        "monthly_input_tokens": 0,
        "monthly_output_tokens": 100_000_000,
        "capacity_output_tokens_per_month": 500_000_000,
        **SEED_PRICES,
    }
    r = viewer_api.post(URL, body, format="json").json()
    assert r["cheaper"] == "api" and r["api_wins_at_every_volume"] is True
    assert "every volume" in r["verdict"]


@pytest.mark.django_db
def test_an_expired_quote_is_not_used(viewer_api, catalog):
    # acme's own B200 quote ended on 31 July; the catalogue's B200 list prices start on 26 August.
    GpuQuote.objects.create(
        sku=seed_assumption("b200-192gb").sku, provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("1.00"), quoted_on=date(2026, 7, 1), valid_until=date(2026, 7, 31),
    )  # fmt: skip
    body = {
        "gpus": 8,
        "sku": "b200-192gb",
        "on": "2026-08-15",
        "api_price": "kimi-k3-api",
        "monthly_input_tokens": 0,
        "monthly_output_tokens": 1,
    }
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 400 and "sku" in r.json() and "2026-08-15" in r.json()["sku"][0]
    assert "unpriced" in r.json()["sku"][0]  # never the expired 1.00, never the seeds' assumption


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"usd_per_gpu_hour": "2.5", "monthly_input_tokens": 0, "monthly_output_tokens": 1}, "gpus"),
        ({"gpus": 8, "monthly_input_tokens": 0, "monthly_output_tokens": 1}, "usd_per_gpu_hour"),
        ({"gpus": 8, "usd_per_gpu_hour": "2.5", "monthly_output_tokens": 1}, "monthly_input_tokens"),
        (
            {"gpus": 8, "usd_per_gpu_hour": "-1", "monthly_input_tokens": 0, "monthly_output_tokens": 1},
            "usd_per_gpu_hour",
        ),
        (
            {
                "gpus": 8,
                "usd_per_gpu_hour": "2.5",
                "monthly_input_tokens": 0,
                "monthly_output_tokens": 1,
                "cache_hit_rate": 1.5,
            },
            "cache_hit_rate",
        ),
        (
            {
                "gpus": 8,
                "usd_per_gpu_hour": "2.5",
                "monthly_input_tokens": 0,
                "monthly_output_tokens": 1,
                "hours_per_day": 25,
            },
            "hours_per_day",
        ),
        (
            {
                "gpus": 8,
                "usd_per_gpu_hour": "2.5",
                "monthly_input_tokens": 0,
                "monthly_output_tokens": 1,
                "workload": "nope",
            },
            "workload",
        ),
    ],
)
def test_bad_input_is_a_400_with_the_field(viewer_api, body, field):
    full = {**SEED_PRICES, **body} if "api_price" not in body else body
    r = viewer_api.post(URL, full, format="json")
    assert r.status_code == 400, r.content
    assert field in r.json()


@pytest.mark.django_db
def test_prices_are_required_unless_a_stored_price_is_named(viewer_api):
    r = viewer_api.post(
        URL,
        {"gpus": 8, "usd_per_gpu_hour": "2.5", "monthly_input_tokens": 0, "monthly_output_tokens": 1},
        format="json",
    )
    assert r.status_code == 400 and set(SEED_PRICES) <= set(r.json())


@pytest.mark.django_db
def test_a_deployment_gives_gpus_price_and_capacity_from_the_throughput_model(viewer_api, catalog):
    from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec

    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    cluster = Cluster.objects.create(
        slug="c", name="C", sku=sku, nodes=1, provider=acme_quoting_the_seeds_rate(sku), team="t"
    )
    d = Deployment.objects.create(
        slug="llama",
        cluster=cluster,
        model=ModelSpec.objects.get(slug="llama-3.1-70b"),
        tp=4,
        replicas=2,
        kv_cache_dtype="fp8",
    )
    body = {
        "deployment": "llama",
        "on": "2026-08-01",
        "api_price": "kimi-k3-api",
        "monthly_input_tokens": 0,
        "monthly_output_tokens": 100_000_000,
    }
    r = viewer_api.post(URL, body, format="json").json()
    assert r["gpu_hours"] == "5760.00"  # 2 replicas x tp 4 = 8 GPUs always on
    speed = d.throughput()
    expected = speed.tokens_per_s_replica * 2 * 720 * 3600
    assert r["capacity_output_tokens_per_month"] == pytest.approx(expected, rel=1e-6)
    assert r["api_wins_at_every_volume"] in (True, False)
    assert any("throughput model" in a for a in r["assumptions"])
    unit = r["unit_economics"]
    per_usd_hour = speed.tokens_per_s_replica * 2 / (8 * 2.5)  # tokens/s of the deployment per USD-hour
    assert float(unit["tokens_per_s_per_usd_hour"]) == pytest.approx(per_usd_hour, rel=1e-3)


@pytest.mark.django_db
def test_capacity_of_an_unregistered_layout_and_storage_cost(viewer_api, catalog):
    from fleet.models import HardwareSku, ModelSpec
    from planner.engine.spec import Layout
    from planner.engine.throughput import estimate

    body = {
        "gpus": 8,
        "sku": "h100-sxm-80gb",
        "on": "2026-08-01",
        "api_price": "kimi-k3-api",
        "model": "llama-3.1-70b",
        "tp": 4,
        "monthly_input_tokens": 0,
        "monthly_output_tokens": 1_000_000,
        "storage_usd_per_gb_month": "0.10",
    }
    r = viewer_api.post(URL, body, format="json").json()
    speed = estimate(
        ModelSpec.objects.get(slug="llama-3.1-70b").to_engine(),
        HardwareSku.objects.get(slug="h100-sxm-80gb").to_engine(),
        Layout(tp=4),
    )
    assert r["capacity_output_tokens_per_month"] == pytest.approx(speed.tokens_per_s_replica * 2 * 720 * 3600, rel=1e-6)
    weights_gb = Decimal(ModelSpec.objects.get(slug="llama-3.1-70b").total_params * 2) / Decimal(10**9)
    assert Decimal(r["storage_usd_per_month"]) == (weights_gb * Decimal("0.10")).quantize(Decimal("0.01"))
    bad = viewer_api.post(URL, {**body, "gpus": 6}, format="json")
    assert bad.status_code == 400 and "tp" in bad.json()


def _catalogue_api_prices() -> list[dict]:
    import json

    from fleet.catalog_loader import CATALOG_DIR

    return json.loads((CATALOG_DIR / "api_prices.json").read_text())


@pytest.mark.django_db
@pytest.mark.parametrize("price", _catalogue_api_prices(), ids=lambda p: p["slug"])
def test_every_catalogue_api_price_compares_with_its_own_model(viewer_api, catalog, price):
    """Issue 26: every catalogue model with a price answers rent vs API on that price, the same model on
    both sides, at the price and date recorded."""
    body = {
        "gpus": 8,
        "usd_per_gpu_hour": "2.50",
        "model": price["model"],
        "api_price": price["slug"],
        "monthly_input_tokens": 1_000_000_000,
        "monthly_output_tokens": 100_000_000,
        "cache_hit_rate": 0.5,
    }
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200, r.json()
    r = r.json()
    assert r["models"]["same"] is True and r["models"]["rented"] == price["model"]
    used = r["api_price_used"]
    assert (used["slug"], used["provider"], used["quoted_on"]) == (price["slug"], price["provider"], price["quoted_on"])
    assert Decimal(used["output_usd_per_mtok"]) == Decimal(price["output_usd_per_mtok"])
    assert r["monthly_rent_usd"] == "14400.00" and Decimal(r["monthly_api_usd"]) > 0
    assert r["breakeven_output_tokens_per_month"] > 0 and r["cheaper"] in ("rent", "api")
