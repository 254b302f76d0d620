"""Decisions: recorded by finance and admin only, append-only, frozen against later price changes."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import GpuQuote, HardwareSku, Provider, Workload
from planner.models import Decision, ImmutableRecordError

URL = "/api/v1/decisions/"


@pytest.fixture
def workload(db):
    call_command("load_catalog", stdout=StringIO())
    return Workload.objects.create(
        slug="coding-agent",
        name="Coding agent",
        team="dev-tools",
        requests_per_day=50_000,
        mean_prompt_tokens=20_000,
        mean_output_tokens=800,
        p95_context_tokens=64_000,
        prefix_cache_hit_rate=0.9,
        peak_concurrency=200,
        ttft_slo_ms=2000,
        tpot_slo_ms=50,
    )


def _body(tier=3, note="API is cheaper at our volume"):
    return {
        "workload": "coding-agent",
        "tier": tier,
        "note": note,
        # Priced on the seeds' assumption, picked (it is never in force): the seeds' figures.
        "breakeven": {"gpus": 8, "sku": "h100-sxm-80gb", "on": "2026-08-01", "api_price": "kimi-k3-api",
                      "gpu_quote": GpuQuote.objects.get(sku__slug="h100-sxm-80gb", provider__isnull=True).pk},
    }  # fmt: skip


@pytest.mark.django_db
def test_finance_records_a_decision_with_frozen_inputs(finance_api, workload):
    r = finance_api.post(URL, _body(), format="json")
    assert r.status_code == 201, r.json()
    d = r.json()
    assert d["tier"] == 3 and d["tier_label"] == "Hosted API with our own gateway"
    assert d["decided_by_name"] == "user-finance" and d["is_current"] is True
    assert d["figures"]["monthly_rent_usd"] == "14400.00"
    inputs = d["inputs"]
    assert inputs["quotes_used"][0]["quoted_on"] == "2026-07-17"
    assert inputs["api_price"]["quoted_on"] == "2026-07-17"
    assert inputs["workload"]["requests_per_day"] == 50_000 and inputs["workload"]["prefix_cache_hit_rate"] == 0.9
    assert inputs["sku"]["hbm_gb"] == 80
    assert r["Location"].endswith(f"/api/v1/decisions/{d['id']}/")


@pytest.mark.django_db
def test_viewer_and_platform_cannot_record(viewer_api, platform_api, workload):
    assert viewer_api.post(URL, _body(), format="json").status_code == 403
    assert platform_api.post(URL, _body(), format="json").status_code == 403
    assert viewer_api.get(URL).status_code == 200
    assert not Decision.objects.exists()


@pytest.mark.django_db
def test_decisions_cannot_be_edited_or_deleted(finance_api, client_for, workload):
    d = finance_api.post(URL, _body(), format="json").json()
    admin = client_for("admin")
    for api in (finance_api, admin):
        assert api.put(f"{URL}{d['id']}/", _body(tier=1), format="json").status_code == 405
        assert api.patch(f"{URL}{d['id']}/", {"note": "x"}, format="json").status_code == 405
        assert api.delete(f"{URL}{d['id']}/").status_code == 405
    stored = Decision.objects.get()
    assert stored.tier == 3 and stored.note == "API is cheaper at our volume"
    with pytest.raises(ImmutableRecordError):
        stored.save()
    with pytest.raises(ImmutableRecordError):
        stored.delete()


@pytest.mark.django_db
def test_a_new_decision_supersedes_the_last(finance_api, workload):
    first = finance_api.post(URL, _body(), format="json").json()
    second = finance_api.post(URL, _body(tier=1, note="volume grew"), format="json").json()
    assert second["supersedes"] == first["id"]
    listed = {d["id"]: d["is_current"] for d in finance_api.get(f"{URL}?workload=coding-agent").json()["results"]}
    assert listed == {first["id"]: False, second["id"]: True}


@pytest.mark.django_db
def test_a_quote_added_later_does_not_change_a_recorded_decision(finance_api, workload):
    d = finance_api.post(URL, _body(), format="json").json()
    GpuQuote.objects.create(
        sku=HardwareSku.objects.get(slug="h100-sxm-80gb"),
        provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("1.10"),
        quoted_on=date(2026, 7, 25),
    )
    HardwareSku.objects.filter(slug="h100-sxm-80gb").update(hbm_gb=96)
    Workload.objects.filter(pk=workload.pk).update(requests_per_day=1)
    again = finance_api.get(f"{URL}{d['id']}/").json()
    assert again["figures"] == d["figures"] and again["inputs"] == d["inputs"]
    assert again["inputs"]["quotes_used"][0]["usd_per_gpu_hour"] == "2.5000"
    # The same comparison made now, at the SKU's price in force, uses the new quote (acme's 1.10).
    comparison = {**_body()["breakeven"], "workload": "coding-agent"}
    comparison.pop("gpu_quote")
    fresh = finance_api.post("/api/v1/breakeven/", comparison, format="json")
    assert fresh.json()["monthly_rent_usd"] == "6336.00"


@pytest.mark.django_db
def test_bad_decision_input_is_a_400(finance_api, workload):
    r = finance_api.post(URL, {**_body(), "tier": 5}, format="json")
    assert r.status_code == 400 and "tier" in r.json()
    r = finance_api.post(URL, {**_body(), "tier": 4}, format="json")  # buy, but buying was not costed
    assert r.status_code == 400 and r.json()["tier"][0].startswith("Buying was not costed")
    r = finance_api.post(URL, {**_body(), "breakeven": {"gpus": 8}}, format="json")
    assert r.status_code == 400 and r.json()["breakeven.usd_per_gpu_hour"] == [
        "Give an inline rate, a deployment or a SKU whose price in force is used."
    ]
    r = finance_api.post(URL, {**_body(), "breakeven": {"gpus": "many"}}, format="json")
    assert r.status_code == 400 and "breakeven.gpus" in r.json()  # a type error, from the serializer


@pytest.mark.django_db
def test_a_decision_on_a_throughput_estimate_carries_its_band(finance_api, workload):
    """A comparison whose capacity comes from the throughput model (an unregistered layout) freezes that
    estimate's TPOT and sensitivity band into the decision; the band contains the frozen TPOT and its
    tokens/s band brackets the capacity the comparison used. Without an estimate there is no band."""
    body = _body()
    body["breakeven"] = {**body["breakeven"], "model": "llama-3.1-70b", "tp": 4}
    r = finance_api.post(URL, body, format="json")
    assert r.status_code == 201, r.json()
    frozen = r.json()["inputs"]["throughput"]
    band = frozen["sensitivity"]
    assert band["tpot_ms"]["low"] <= frozen["tpot_ms"] <= band["tpot_ms"]["high"]
    assert band["tpot_ms"]["central"] == pytest.approx(frozen["tpot_ms"], rel=1e-12)
    assert frozen["layout"] == {"tp": 4, "pp": 1, "dp": 1, "ep": 1}
    # 8 GPUs = 2 replicas of tp 4, 30 days x 24 h: the capacity the comparison priced.
    capacity = r.json()["figures"]["capacity_output_tokens_per_month"]
    assert capacity == pytest.approx(frozen["tokens_per_s_replica"] * 2 * 720 * 3600, rel=1e-6)
    assert band["most_influential"] and band["spread"] == 0.2
    plain = finance_api.post(URL, _body(), format="json").json()
    assert plain["inputs"]["throughput"] is None
