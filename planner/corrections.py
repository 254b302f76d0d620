"""Live speed correction service: fit a deployment's polls against the throughput model, store the
fit, and give speed estimates of a deployment with the latest fit applied.

- ``fit_for_deployment(slug, now=None)``: reads the last ``SPEED_CORRECTION_WINDOW_HOURS`` of the
  deployment's polls, predicts each busy poll's TPOT and TTFT at its running batch per replica
  (``requests_running / replicas``) with the engine's ``estimate(..., batch=b)`` for the deployment's
  request shape, fits with ``planner.engine.fit_correction`` (median of log observed / predicted,
  sides with fewer than ``SPEED_CORRECTION_MIN_SAMPLES`` usable polls left uncorrected) and stores a
  ``SpeedCorrection`` keyed by (deployment, window end): fitting the same window again replaces it.
- ``fit_all(now=None)``: the Celery task's work, every enabled deployment with enough busy polls.
- ``latest_for(deployment, now=None)`` (``latest_for_many`` for a list, in one query): the correction
  to use (the newest, if it was fitted for the deployment's current serving settings and is at most
  ``SPEED_CORRECTION_MAX_AGE_HOURS`` old), or None. ``calibration_of(correction, now)`` is its plain
  shape for results and APIs: ``{factor_decode, factor_prefill, samples, age_s, residual, ...}``.
- ``deployment_throughput(deployment, usd_per_gpu_hour=None)``: ``Deployment.throughput()`` with
  the correction applied when there is one (``Calibrated.result``, ``.calibration``), the
  SLO-limited batch searched again with the corrected times; ``corrected_throughput`` does the same
  with a correction the caller looked up (``latest_for_many``).

Domain errors: ``InputError`` (unknown deployment), ``EngineInputError`` (a deployment the engine
cannot model).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from fleet.errors import InputError
from fleet.models import Deployment
from fleet.models.polls import left_out_text, poll_distrust
from planner.engine import (
    EngineInputError,
    SpeedPrediction,
    SpeedSample,
    ThroughputResult,
    apply_correction,
    batch_of,
    fit_correction,
    prediction_of,
)
from planner.engine import SpeedCorrection as EngineCorrection
from planner.models import SpeedCorrection

log = logging.getLogger(__name__)


def window_hours() -> float:
    return float(settings.SPEED_CORRECTION_WINDOW_HOURS)


def min_samples() -> int:
    return int(settings.SPEED_CORRECTION_MIN_SAMPLES)


def serving_of(deployment: Deployment) -> dict[str, Any]:
    """What a fit is valid for: the model, the SKU and the serving settings (``Deployment.SERVING``)."""
    return {
        "model": deployment.model.slug,
        "sku": deployment.cluster.sku.slug,
        **{name: getattr(deployment, name) for name in Deployment.SERVING},
    }


def estimate_for(deployment: Deployment, *, batch: int | None = None, usd_per_gpu_hour: Any = None, model=None):
    """The engine's estimate for the deployment's request shape (``Deployment.throughput()``), optionally at
    a given ``batch`` per replica (``model``: a reused engine object)."""
    return deployment.throughput(usd_per_gpu_hour, batch=batch, model=model)


def _ms_to_s(value: float | None) -> float | None:
    return None if value is None else value / 1e3


def _deployment(slug: str) -> Deployment:
    found = Deployment.objects.select_related("cluster__sku", "model", "workload").filter(slug=slug).first()
    if found is None:
        raise InputError.single("deployment", f"No deployment {slug!r}.")
    return found


def fit_for_deployment(
    slug: str, now: datetime | None = None, *, hours: float | None = None, minimum: int | None = None
) -> SpeedCorrection | None:
    """Fit and store the correction of deployment ``slug`` over the polls of ``(now - hours, now]``.

    Returns the stored correction, or None when neither side has ``minimum`` usable polls (nothing is
    stored then). Idempotent: the same window end replaces its fit."""
    deployment = _deployment(slug)
    now = now or timezone.now()
    hours = window_hours() if hours is None else hours
    minimum = min_samples() if minimum is None else minimum
    polled = deployment.polls.filter(polled_at__gt=now - timedelta(hours=hours), polled_at__lte=now, status="up")
    rows, left_out = [], {}
    for running, itl, ttft, polled_model, interval in polled.values_list(
        "requests_running", "itl_p50_ms", "ttft_p50_ms", "outcome__served_model_id", "outcome__derived__interval_s"
    ):
        # Untrusted polls (``poll_distrust``: another served model id, rates over a gap) fit nothing.
        why = poll_distrust(
            "up",
            interval_s=interval if isinstance(interval, int | float) else None,
            poll_interval_s=deployment.poll_interval_s,
            polled_model_id=polled_model if isinstance(polled_model, str) else None,
            registered_model_id=deployment.served_model_id,
        )
        if why is not None:
            left_out[why] = left_out.get(why, 0) + 1
        else:
            rows.append((running, itl, ttft))
    samples = [
        SpeedSample(batch=batch_of(running, deployment.replicas), tpot_s=_ms_to_s(itl), ttft_s=_ms_to_s(ttft))
        for running, itl, ttft in rows
    ]
    engine_model = deployment.model.to_engine()

    def predict(batch: int, context: int | None) -> SpeedPrediction:
        return prediction_of(estimate_for(deployment, batch=batch, model=engine_model))

    fit = fit_correction(samples, predict, fitted_at=now, min_samples=minimum)
    if not (fit.decode_samples or fit.prefill_samples):
        return None
    with transaction.atomic():
        stored, _ = SpeedCorrection.objects.update_or_create(
            deployment=deployment,
            fitted_at=now,
            defaults={
                "window_hours": hours,
                "polls": len(rows),
                "ignored_polls": fit.ignored_samples,
                "decode_factor": fit.decode_factor,
                "decode_samples": fit.decode_samples,
                "decode_residual": fit.decode_residual,
                "prefill_factor": fit.prefill_factor,
                "prefill_samples": fit.prefill_samples,
                "prefill_residual": fit.prefill_residual,
                "serving": serving_of(deployment),
                "assumptions": list(fit.assumptions)
                + ([f"{left_out_text(left_out)}: not fitted."] if left_out else []),
            },
        )
    return stored


def fit_all(now: datetime | None = None) -> dict[str, int]:
    """Fit every enabled deployment with at least the minimum of busy polls in the window (the task).

    A deployment the engine cannot model is logged and skipped; a database error propagates (the task
    retries, and refitting a window replaces its fits)."""
    now = now or timezone.now()
    since = now - timedelta(hours=window_hours())
    busy = Q(polls__polled_at__gt=since, polls__polled_at__lte=now, polls__status="up", polls__requests_running__gt=0)
    slugs = list(
        Deployment.objects.filter(enabled=True)
        .annotate(busy=Count("polls", filter=busy))
        .filter(busy__gte=min_samples())
        .order_by("slug")
        .values_list("slug", flat=True)
    )
    fitted = skipped = failed = 0
    for slug in slugs:
        try:
            stored = fit_for_deployment(slug, now)
        except (EngineInputError, InputError) as exc:
            log.warning("speed correction of %s not fitted: %s", slug, exc)
            failed += 1
            continue
        fitted += stored is not None
        skipped += stored is None
    return {"candidates": len(slugs), "fitted": fitted, "too_few_samples": skipped, "not_modelled": failed}


def latest_for(deployment: Deployment, now: datetime | None = None) -> SpeedCorrection | None:
    """The correction to apply to ``deployment``'s speed, or None.

    The newest stored fit, provided it was fitted for the deployment's current model, SKU and serving
    settings (a changed layout, engine release or KV dtype makes it another deployment) and is at most
    ``SPEED_CORRECTION_MAX_AGE_HOURS`` old. This is the hook estimates call; its plain shape is
    ``calibration_of(correction, now)``."""
    if deployment.pk is None:
        return None
    now = now or timezone.now()
    latest = deployment.speed_corrections.filter(fitted_at__lte=now).order_by("-fitted_at", "-id").first()
    return _usable(latest, deployment, now)


def _oldest(now: datetime) -> datetime:
    return now - timedelta(hours=float(settings.SPEED_CORRECTION_MAX_AGE_HOURS))


def _usable(latest: SpeedCorrection | None, deployment: Deployment, now: datetime) -> SpeedCorrection | None:
    """``latest`` (the deployment's newest fit at ``now``) when it may be applied, else None."""
    if latest is None or latest.fitted_at < _oldest(now) or not same_serving(latest.serving, serving_of(deployment)):
        return None
    return latest


def same_serving(stored: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether a fit stored for ``stored`` serving settings holds for ``current``: equal settings, a setting
    left at its default (None) and one the stored fit predates (absent: added since) counting as the same."""

    def given(settings: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in settings.items() if v is not None}

    return given(stored or {}) == given(current)


def latest_for_many(deployments: list[Deployment], now: datetime | None = None) -> dict[int, SpeedCorrection]:
    """``latest_for`` of each deployment, keyed by its id (those without a usable correction left
    out), in one query: the fits of the last ``SPEED_CORRECTION_MAX_AGE_HOURS`` (an older newest fit
    is unusable anyway)."""
    now = now or timezone.now()
    by_id = {d.pk: d for d in deployments if d.pk is not None}
    newest: dict[int, SpeedCorrection] = {}
    rows = SpeedCorrection.objects.filter(deployment_id__in=by_id, fitted_at__lte=now, fitted_at__gte=_oldest(now))
    for fit in rows.defer("assumptions").order_by("deployment_id", "-fitted_at", "-id"):
        newest.setdefault(fit.deployment_id, fit)
    found = {pk: _usable(fit, by_id[pk], now) for pk, fit in newest.items()}
    return {pk: fit for pk, fit in found.items() if fit is not None}


def correction_for(
    deployment: Deployment | None, model_id: int, sku_id: int, layout: Any, kv_cache_dtype: str
) -> SpeedCorrection | None:
    """``deployment``'s latest correction (``latest_for``) when what is estimated is that deployment as it
    serves (same model, SKU, layout and KV dtype); ``None`` otherwise. Estimates and the what-if page call it."""
    if deployment is None:
        return None
    same = (
        model_id == deployment.model_id
        and sku_id == deployment.cluster.sku_id
        and layout == deployment.layout
        and kv_cache_dtype == deployment.kv_cache_dtype
    )
    return latest_for(deployment) if same else None


def to_engine(correction: SpeedCorrection, with_assumptions: bool = True) -> EngineCorrection:
    """The engine's ``SpeedCorrection`` of a stored one (``with_assumptions=False``: without its
    assumptions, which ``latest_for_many`` leaves unread: reading them is a query per correction)."""
    return EngineCorrection(
        decode_factor=correction.decode_factor,
        prefill_factor=correction.prefill_factor,
        decode_samples=correction.decode_samples,
        prefill_samples=correction.prefill_samples,
        decode_residual=correction.decode_residual,
        prefill_residual=correction.prefill_residual,
        fitted_at=correction.fitted_at,
        ignored_samples=correction.ignored_polls,
        assumptions=tuple(correction.assumptions) if with_assumptions else (),
    )


def calibration_of(correction: SpeedCorrection, now: datetime | None = None) -> dict[str, Any]:
    """The plain shape results and APIs carry under ``calibrated``: ``factor_decode``,
    ``factor_prefill``, ``samples`` (the larger side), ``age_s``, ``residual`` (decode's, else
    prefill's), and both sides' counts and residuals, the fit's time and window."""
    now = now or timezone.now()
    return {
        "factor_decode": correction.decode_factor,
        "factor_prefill": correction.prefill_factor,
        "samples": correction.samples,
        "age_s": max(0.0, (now - correction.fitted_at).total_seconds()),
        "residual": correction.decode_residual
        if correction.decode_residual is not None
        else correction.prefill_residual,
        "decode_samples": correction.decode_samples,
        "prefill_samples": correction.prefill_samples,
        "decode_residual": correction.decode_residual,
        "prefill_residual": correction.prefill_residual,
        "fitted_at": correction.fitted_at.isoformat(),
        "window_hours": correction.window_hours,
    }


@dataclass(frozen=True)
class Calibrated:
    """A deployment's speed: the result (corrected when ``calibration`` is set) and the correction used."""

    result: ThroughputResult
    calibration: dict[str, Any] | None = None

    @property
    def calibrated(self) -> bool:
        return self.calibration is not None


def correct(
    deployment: Deployment,
    result: ThroughputResult,
    correction: SpeedCorrection,
    now: datetime | None = None,
    usd_per_gpu_hour: Any = None,
) -> ThroughputResult:
    """``result`` (an estimate of ``deployment`` at its default batch) corrected; when the workload has
    SLOs, the batch is searched again so that the corrected TPOT and TTFT meet them."""
    now = now or timezone.now()
    engine_correction = to_engine(correction)
    age_s = max(0.0, (now - correction.fitted_at).total_seconds())
    w = deployment.workload
    slos = {"tpot_slo_ms": w.tpot_slo_ms if w else None, "ttft_slo_ms": w.ttft_slo_ms if w else None}

    def at(batch: int | None) -> ThroughputResult:
        base = result if batch is None else estimate_for(deployment, batch=batch, usd_per_gpu_hour=usd_per_gpu_hour)
        return apply_correction(base, engine_correction, age_s=age_s, **slos)

    fixed = at(None)
    if result.slo_limit is None:
        return fixed

    def ok(r: ThroughputResult) -> bool:
        return r.meets_tpot is not False and r.meets_ttft is not False

    lo, hi, best = 1, max(1, result.memory_limit), None
    while lo <= hi:  # TPOT and TTFT only grow with batch
        mid = (lo + hi) // 2
        candidate = at(mid)
        if ok(candidate):
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    limit = best.batch if best is not None else 0
    chosen = best or at(1)
    note = (
        f"SLO-limited concurrency with the corrected times: {limit} sequence(s) per replica (the model alone: "
        f"{result.slo_limit})."
    )
    return replace(
        chosen,
        slo_limit=limit,
        concurrency_limit=min(result.memory_limit, limit),
        assumptions=(chosen.assumptions[0], note, *chosen.assumptions[1:]),
    )


def deployment_throughput(
    deployment: Deployment, usd_per_gpu_hour: Any = None, now: datetime | None = None
) -> Calibrated:
    """``Deployment.throughput()`` with the latest correction applied when there is one."""
    return corrected_throughput(deployment, latest_for(deployment, now), usd_per_gpu_hour, now)


def corrected_throughput(
    deployment: Deployment,
    correction: SpeedCorrection | None,
    usd_per_gpu_hour: Any = None,
    now: datetime | None = None,
) -> Calibrated:
    """``Deployment.throughput()`` with ``correction`` (``latest_for``'s, looked up by the caller) applied."""
    result = deployment.throughput(usd_per_gpu_hour=usd_per_gpu_hour)
    if correction is None:
        return Calibrated(result)
    now = now or timezone.now()
    fixed = correct(deployment, result, correction, now, usd_per_gpu_hour)
    return Calibrated(fixed, calibration_of(correction, now))


def predicted_tpot_ms(deployment: Deployment, polls: list) -> list[float | None]:
    """The model's TPOT (ms) at each poll's running batch per replica (None for an idle poll, or when
    the engine cannot model the deployment), one estimate per distinct batch."""
    engine_model = None
    cache: dict[int, float | None] = {}
    values: list[float | None] = []
    for poll in polls:
        batch = batch_of(poll.requests_running, deployment.replicas) if poll.status == "up" else None
        if batch is None:
            values.append(None)
            continue
        if batch not in cache:
            try:
                engine_model = engine_model or deployment.model.to_engine()
                cache[batch] = estimate_for(deployment, batch=batch, model=engine_model).tpot_s * 1e3
            except EngineInputError:
                cache[batch] = None
        values.append(cache[batch])
    return values
