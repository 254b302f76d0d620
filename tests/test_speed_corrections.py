"""Live speed correction from stored polls: the service, the hourly task, the estimates that use it
(rent vs API), and the deployment page's plot and text."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.utils import timezone
from priced import acme_quoting_the_seeds_rate

from fleet.models import Cluster, Deployment, EndpointPoll, HardwareSku, ModelSpec, Workload
from fleet.tasks import TRANSIENT_ERRORS
from planner.corrections import (
    calibration_of,
    deployment_throughput,
    estimate_for,
    fit_for_deployment,
    latest_for,
)
from planner.engine import prediction_of
from planner.models import SpeedCorrection
from planner.tasks import fit_speed_corrections

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DECODE, PREFILL = 1.37, 1.6


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


def deployment(slug: str = "llama", replicas: int = 2, **extra) -> Deployment:
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    cluster, _ = Cluster.objects.get_or_create(
        slug="c",
        defaults={"name": "C", "sku": sku, "nodes": 4, "provider": acme_quoting_the_seeds_rate(sku), "team": "t"},
    )
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    return Deployment.objects.create(slug=slug, cluster=cluster, model=model, tp=4, replicas=replicas, **extra)


def add_polls(d: Deployment, n: int, *, at: datetime = NOW, decode: float = DECODE, prefill: float = PREFILL,
              noise: float = 0.0, seed: int = 1) -> list[int]:  # fmt: skip
    """``n`` busy polls 1 min apart before ``at``: running = batch x replicas, TPOT and TTFT p50 the model's at
    that batch per replica times ``decode`` (and ``prefill`` on the prefill part of TTFT), with noise."""
    rng = random.Random(seed)
    batches = []
    rows = []
    for i in range(n):
        b = rng.choice([1, 2, 4, 8, 16])
        p = prediction_of(estimate_for(d, batch=b))
        tpot = p.tpot_s * decode * math.exp(rng.gauss(0, noise))
        ttft = (p.prefill_s * prefill + p.ttft_decode_s * decode) * math.exp(rng.gauss(0, noise))
        rows.append(
            EndpointPoll(
                deployment=d, polled_at=at - timedelta(minutes=i), status="up", requests_running=b * d.replicas,
                itl_p50_ms=tpot * 1e3, ttft_p50_ms=ttft * 1e3, generation_tokens_per_s=b * d.replicas / tpot,
            )
        )  # fmt: skip
        batches.append(b)
    EndpointPoll.objects.bulk_create(rows)
    return batches


def add_idle(d: Deployment, n: int, at: datetime = NOW) -> None:
    EndpointPoll.objects.bulk_create(
        EndpointPoll(
            deployment=d, polled_at=at - timedelta(minutes=i, seconds=30), status="up", requests_running=0,
            itl_p50_ms=500.0, ttft_p50_ms=9000.0,
        )
        for i in range(n)
    )  # fmt: skip


@pytest.mark.django_db
def test_a_fit_from_stored_polls_recovers_the_factors_and_ignores_idle_and_old_polls(catalog):
    d = deployment()
    add_polls(d, 120, noise=0.05)
    add_idle(d, 40)
    add_polls(d, 30, at=NOW - timedelta(hours=25), decode=5.0, prefill=5.0)  # outside the 24 h window
    EndpointPoll.objects.create(deployment=d, polled_at=NOW - timedelta(seconds=5), status="down")
    fit = fit_for_deployment("llama", NOW)
    assert fit.decode_factor == pytest.approx(DECODE, rel=0.02)
    assert fit.prefill_factor == pytest.approx(PREFILL, rel=0.02)
    assert (fit.decode_samples, fit.prefill_samples, fit.polls, fit.ignored_polls) == (120, 120, 160, 40)
    assert 0.02 < fit.decode_residual < 0.08
    assert fit.fitted_at == NOW and fit.window_hours == 24
    assert fit.serving["tp"] == 4 and fit.serving["model"] == "llama-3.1-70b"
    # Idempotent: the same window end replaces its fit.
    again = fit_for_deployment("llama", NOW)
    assert SpeedCorrection.objects.filter(deployment=d).count() == 1 and again.pk == fit.pk


@pytest.mark.django_db
def test_untrusted_polls_fit_nothing_and_the_fit_says_so(catalog):
    d = deployment(served_model_id="meta-llama/Llama-3.1-70B-Instruct")
    add_polls(d, 120, noise=0.05)
    # 30 polls taken when the endpoint was registered under another served model id, 20 whose rates and
    # latencies average over an hour since the previous scrape (stale), both 5x slower: left out.
    two_hours_ago = NOW - timedelta(hours=2)
    add_polls(d, 30, at=two_hours_ago, decode=5.0, prefill=5.0, seed=2)
    hour = timedelta(hours=1)
    EndpointPoll.objects.filter(polled_at__lte=two_hours_ago, polled_at__gt=two_hours_ago - hour).update(
        outcome={"served_model_id": "another/model", "derived": {"interval_s": 15.0}}
    )
    five_hours_ago = NOW - timedelta(hours=5)
    add_polls(d, 20, at=five_hours_ago, decode=5.0, prefill=5.0, seed=3)
    EndpointPoll.objects.filter(
        polled_at__lte=five_hours_ago, polled_at__gt=five_hours_ago - timedelta(hours=1)
    ).update(outcome={"served_model_id": d.served_model_id, "derived": {"interval_s": 3600.0}})
    fit = fit_for_deployment("llama", NOW)
    assert fit.decode_factor == pytest.approx(DECODE, rel=0.02)
    assert fit.prefill_factor == pytest.approx(PREFILL, rel=0.02)
    assert (fit.decode_samples, fit.polls) == (120, 120)
    assert any(a.startswith("50 polls left out (30 polled when the deployment was registered for another served")
               for a in fit.assumptions)  # fmt: skip


@pytest.mark.django_db
def test_too_few_busy_polls_store_nothing(catalog, settings):
    settings.SPEED_CORRECTION_MIN_SAMPLES = 10
    d = deployment()
    add_polls(d, 9)
    add_idle(d, 50)
    assert fit_for_deployment("llama", NOW) is None
    assert not SpeedCorrection.objects.exists()
    from fleet.errors import InputError

    with pytest.raises(InputError) as exc:
        fit_for_deployment("nope", NOW)
    assert exc.value.errors == {"deployment": ["No deployment 'nope'."]}


@pytest.mark.django_db
def test_the_task_fits_every_deployment_with_enough_samples_once_per_window(catalog):
    busy, quiet = deployment("busy"), deployment("quiet")
    add_polls(busy, 15)
    add_polls(quiet, 4)
    add_idle(quiet, 30)
    summary = fit_speed_corrections.apply(kwargs={"window_end": NOW.isoformat()}).get()
    assert summary == {"candidates": 1, "fitted": 1, "too_few_samples": 0, "not_modelled": 0}
    fit_speed_corrections.apply(kwargs={"window_end": NOW.isoformat()}).get()  # a redelivery
    (stored,) = SpeedCorrection.objects.all()
    assert stored.deployment == busy and stored.decode_factor == pytest.approx(DECODE)
    assert fit_speed_corrections.name == "planner.fit_speed_corrections"
    assert fit_speed_corrections.autoretry_for == TRANSIENT_ERRORS and fit_speed_corrections.max_retries > 0


@pytest.mark.django_db
def test_a_database_blip_is_retried_and_the_fit_still_stored(catalog, monkeypatch):
    d = deployment()
    add_polls(d, 12)
    import planner.corrections as corrections

    real, calls = corrections.fit_for_deployment, []

    def flaky(slug, now=None, **kw):
        calls.append(slug)
        if len(calls) == 1:
            raise OperationalError("database is restarting")
        return real(slug, now, **kw)

    monkeypatch.setattr(corrections, "fit_for_deployment", flaky)
    monkeypatch.setattr(fit_speed_corrections, "retry_backoff", False)
    monkeypatch.setattr(fit_speed_corrections, "default_retry_delay", 0)
    fit_speed_corrections.apply(kwargs={"window_end": NOW.isoformat()})
    assert calls == ["llama", "llama"]
    assert SpeedCorrection.objects.get(deployment=d).decode_factor == pytest.approx(DECODE)


@pytest.mark.django_db
def test_latest_for_only_while_the_serving_settings_are_unchanged_and_fresh(catalog, settings):
    d = deployment()
    add_polls(d, 12)
    fit = fit_for_deployment("llama", NOW)
    assert latest_for(d, NOW + timedelta(hours=1)) == fit
    shape = calibration_of(fit, NOW + timedelta(hours=1))
    assert shape["factor_decode"] == pytest.approx(DECODE) and shape["samples"] == 12 and shape["age_s"] == 3600
    assert set(shape) >= {"factor_decode", "factor_prefill", "samples", "age_s", "residual"}
    settings.SPEED_CORRECTION_MAX_AGE_HOURS = 2
    assert latest_for(d, NOW + timedelta(hours=3)) is None
    d.kv_cache_dtype = "fp8"
    d.save()
    assert latest_for(d, NOW + timedelta(hours=1)) is None


@pytest.mark.django_db
def test_a_deployments_speed_is_calibrated_and_says_so(catalog):
    d = deployment()
    add_polls(d, 12)
    fit_for_deployment("llama", NOW)
    model = d.throughput(usd_per_gpu_hour="2.5")
    speed = deployment_throughput(d, usd_per_gpu_hour="2.5", now=NOW + timedelta(hours=2))
    assert speed.calibrated and speed.calibration["factor_decode"] == pytest.approx(DECODE)
    assert speed.result.batch == model.batch  # no SLO: the memory limit, as the model's
    assert speed.result.tpot_s == pytest.approx(model.tpot_s * DECODE)
    assert speed.result.usd_per_mtok == pytest.approx(model.usd_per_mtok * DECODE)
    assert speed.result.assumptions[0].startswith("Calibrated from live polls (fitted 2.0 h ago): TPOT x 1.370")
    assert not deployment_throughput(deployment("other")).calibrated


@pytest.mark.django_db
def test_the_slo_limited_batch_is_searched_again_with_the_corrected_times(catalog):
    w = Workload.objects.create(
        slug="chat", name="Chat", requests_per_day=1000, mean_prompt_tokens=2048, mean_output_tokens=256,
        p95_context_tokens=4096, peak_concurrency=10, ttft_slo_ms=60_000, tpot_slo_ms=60,
    )  # fmt: skip
    d = deployment(workload=w)
    # An SLO the model meets below its memory limit (whatever the step model's figures).
    w.tpot_slo_ms = estimate_for(d, batch=d.throughput().memory_limit).tpot_s * 1e3 * 0.7
    w.save()
    d.workload = w
    model = d.throughput()
    assert model.slo_limit is not None and model.meets_tpot and model.slo_limit < model.memory_limit
    add_polls(d, 12)
    fit_for_deployment("llama", NOW)
    speed = deployment_throughput(d, now=NOW).result
    assert speed.batch < model.batch and speed.slo_limit == speed.batch
    assert speed.tpot_s <= w.tpot_slo_ms / 1e3 < estimate_for(d, batch=speed.batch + 1).tpot_s * DECODE
    assert any("SLO-limited concurrency with the corrected times" in a for a in speed.assumptions)


@pytest.mark.django_db
def test_rent_vs_api_capacity_of_a_deployment_is_calibrated(catalog, viewer_api):
    from django.utils import timezone

    d = deployment()
    now = timezone.now()
    add_polls(d, 12, at=now)
    fit_for_deployment("llama", now)
    body = {"deployment": "llama", "on": "2026-08-01", "api_price": "kimi-k3-api", "monthly_input_tokens": 0,
            "monthly_output_tokens": 100_000_000}  # fmt: skip
    r = viewer_api.post("/api/v1/breakeven/", body, format="json").json()
    expected = d.throughput().tokens_per_s_replica / DECODE * 2 * 720 * 3600
    assert r["capacity_output_tokens_per_month"] == pytest.approx(expected, rel=1e-6)
    assert r["calibrated"]["factor_decode"] == pytest.approx(DECODE) and r["calibrated"]["samples"] == 12
    assert any("Calibrated from live polls" in a for a in r["assumptions"])
    other = deployment("fresh")
    r = viewer_api.post("/api/v1/breakeven/", {**body, "deployment": other.slug}, format="json").json()
    assert r["calibrated"] is None


@pytest.mark.django_db
def test_the_deployment_page_plots_predicted_against_observed_tpot_and_shows_the_correction(client, make_user, catalog):
    from django.utils import timezone

    client.force_login(make_user("v", "viewer"))
    d = deployment()
    now = timezone.now()
    batches = add_polls(d, 12, at=now)
    add_idle(d, 3, at=now)
    fit_for_deployment("llama", now)
    page = client.get("/deployments/llama/").content.decode()
    start = page.index('<script id="speed-data" type="application/json">') + len(
        '<script id="speed-data" type="application/json">'
    )
    data = json.loads(page[start : page.index("</script>", start)])
    observed, predicted, corrected = (s["values"] for s in data["series"])
    assert [s["label"] for s in data["series"]] == [
        "observed TPOT p50 (ms)", "predicted TPOT (model, ms)", "predicted x correction (ms)",
    ]  # fmt: skip
    assert len(observed) == 15 and predicted.count(None) == 3  # idle polls have no batch to predict for
    # Oldest first: the last busy poll added is the oldest one.
    oldest_busy = next(i for i, v in enumerate(predicted) if v is not None)
    assert predicted[oldest_busy] == pytest.approx(estimate_for(d, batch=batches[-1]).tpot_s * 1e3)
    for o, p, c in zip(observed, predicted, corrected, strict=True):
        if p is not None:
            assert c == pytest.approx(p * DECODE) and o == pytest.approx(c)
    assert 'id="decode-factor">1.370<' in page and "12</td>" in page
    assert "Live speed correction" in page


@pytest.mark.django_db
def test_the_page_says_when_there_is_no_correction(client, make_user, catalog):
    client.force_login(make_user("v", "viewer"))
    d = deployment()
    EndpointPoll.objects.create(deployment=d, polled_at=NOW, status="up", requests_running=2, itl_p50_ms=30.0)
    page = client.get("/deployments/llama/").content.decode()
    assert "No speed correction yet" in page and "predicted x correction" not in page


@pytest.mark.django_db
def test_the_estimate_api_applies_the_deployments_correction_and_says_so(catalog, viewer_api):
    """POST /api/v1/estimate/ with a deployment whose polls were generated at TPOT x 1.37: the estimate of that
    deployment as it serves is the model's TPOT x 1.37 and carries the fit; another layout is not calibrated."""
    d = deployment()
    add_polls(d, 12, at=timezone.now())
    fit_for_deployment("llama", timezone.now())
    plain = viewer_api.post("/api/v1/estimate/", {"model": "llama-3.1-70b", "sku": "h100-sxm-80gb", "tp": 4,
                                                   "batch": 4}, format="json").json()  # fmt: skip
    calibrated = viewer_api.post("/api/v1/estimate/", {"deployment": "llama", "batch": 4}, format="json").json()
    assert calibrated["calibrated"]["factor_decode"] == pytest.approx(DECODE)
    assert calibrated["tpot_ms"] == pytest.approx(plain["tpot_ms"] * DECODE, rel=1e-6)
    assert any(a.startswith("Calibrated from live polls") for a in calibrated["assumptions"])
    other = viewer_api.post("/api/v1/estimate/", {"deployment": "llama", "batch": 4, "tp": 2}, format="json").json()
    assert other["calibrated"] is None


@pytest.mark.django_db
def test_the_what_if_page_as_a_deployment_applies_its_correction(catalog, client, make_user):
    """What-if "as deployment llama" (tp 4 on H100, 2 replicas) with a correction fitted at TPOT x 1.37: the
    page's TPOT is the uncorrected one x 1.37 and says it is calibrated; without the deployment it is not."""
    d = deployment()
    add_polls(d, 12, at=timezone.now())
    fit_for_deployment("llama", timezone.now())
    client.force_login(make_user("v", "viewer"))
    base = "/what-if/?model=llama-3.1-70b&sku=h100-sxm-80gb&gpus=8&tp=4&context_tokens=8192"

    def tpot(url: str) -> tuple[float, str]:
        page = client.get(url, headers={"HX-Request": "true"}).content.decode()
        cell = page.split('<th>Time per output token</th><td class="num">')[1].split(" ms")[0]
        return float(cell), page

    plain, plain_page = tpot(base)
    calibrated, page = tpot(base + "&deployment=llama")
    assert 'id="whatif-calibrated"' in page and "Calibrated from live polls" in page
    assert 'id="whatif-calibrated"' not in plain_page
    assert calibrated == pytest.approx(plain * DECODE, abs=0.1)  # the page rounds to 0.1 ms
