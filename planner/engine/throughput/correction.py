"""Live correction: how far a deployment's observed speed is from the model's, and the model corrected.

A serving engine publishes, for each poll interval, the median time per output token (TPOT, vLLM's
inter-token latency) and the median time to first token (TTFT) at the batch it was running. Each
such poll is a ``SpeedSample``; the model's figures for the same batch are a ``SpeedPrediction``
(``prediction_of(estimate(..., batch=b))``). ``fit_correction`` turns them into one
``SpeedCorrection`` per deployment, with a factor for decode and one for prefill:

    decode_factor  = exp(median_i log(observed TPOT_i / predicted TPOT_i))
    prefill_factor = exp(median_i log(observed prefill_i / predicted prefill_i))

where a poll's prefill part is its TTFT less the decode steps the model interleaves with the
prefill chunks, those taken at the corrected decode speed: ``observed prefill = TTFT_obs -
decode_factor x ttft_decode_s``, ``predicted prefill = ttft_s - ttft_decode_s`` (queueing on the
prefill work + the prefill itself). So ``apply_correction`` of the fitted factors reproduces a
noise-free poll exactly.

Why the median of log ratios: the ratio is multiplicative (the model is "1.4x too fast", not "3 ms
too fast"), so logs make 2x and 0.5x equally far from 1; and a poll's percentiles are over a short
interval, with spikes (a restart, a burst of long prompts, a queue building) that a least-squares
fit would follow. The median ignores up to half the polls being outliers. The residual is the root
mean square of the log ratios about the fitted factor: 0.1 means a typical poll is about 10% off
the corrected model.

A poll is ignored for both fits when nothing was running (no batch to predict for) and, per side,
when its figure is missing, not positive or not finite, or (prefill) when the decode steps alone
already exceed the observed TTFT. Pure Python: no Django; the caller reads the polls and predicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from statistics import median
from typing import Any

from .estimate import ThroughputResult


@dataclass(frozen=True, slots=True)
class SpeedSample:
    """What one poll saw: the running batch per replica and the medians over its interval (seconds).

    ``context_tokens`` is the mean context of a running sequence when known (None: the request shape
    the predictor was built for). ``predicted`` may be given already (else ``fit_correction`` asks
    its ``predict``)."""

    batch: float | None
    tpot_s: float | None = None
    ttft_s: float | None = None
    context_tokens: int | None = None
    predicted: SpeedPrediction | None = None


@dataclass(frozen=True, slots=True)
class SpeedPrediction:
    """The model's figures at one batch: TPOT, TTFT and the part of TTFT that is decode steps
    interleaved with the prefill chunks (the rest, queueing + prefill, is the prefill part)."""

    tpot_s: float
    ttft_s: float
    ttft_decode_s: float = 0.0

    @property
    def prefill_s(self) -> float:
        return self.ttft_s - self.ttft_decode_s


def prediction_of(result: ThroughputResult) -> SpeedPrediction:
    """The figures of an ``estimate()`` that a correction is fitted against."""
    decode_part = result.ttft_parts.decode_sharing_s
    return SpeedPrediction(result.tpot_s, result.ttft_s, decode_part if math.isfinite(decode_part) else 0.0)


@dataclass(frozen=True, slots=True)
class SpeedCorrection:
    """Observed over predicted speed of one deployment, per side, with what the fit rests on.

    A factor above 1 means the deployment is slower than the model (times are multiplied by it).
    A side with no samples has factor 1.0 and residual None and is not applied."""

    decode_factor: float
    prefill_factor: float
    decode_samples: int
    prefill_samples: int
    decode_residual: float | None
    prefill_residual: float | None
    fitted_at: datetime | None
    ignored_samples: int = 0
    assumptions: tuple[str, ...] = ()

    @property
    def samples(self) -> int:
        return max(self.decode_samples, self.prefill_samples)

    def to_dict(self) -> dict[str, Any]:
        return {
            "decode_factor": self.decode_factor,
            "prefill_factor": self.prefill_factor,
            "decode_samples": self.decode_samples,
            "prefill_samples": self.prefill_samples,
            "decode_residual": self.decode_residual,
            "prefill_residual": self.prefill_residual,
            "fitted_at": None if self.fitted_at is None else self.fitted_at.isoformat(),
            "ignored_samples": self.ignored_samples,
            "assumptions": list(self.assumptions),
        }


Predictor = Callable[[int, int | None], SpeedPrediction]


def _usable(value: float | None) -> bool:
    return value is not None and not isinstance(value, bool) and math.isfinite(value) and value > 0


#: The furthest a poll may be from the model, either way (a factor of a million): beyond it the poll
#: is not a speed but a unit error or a stalled engine, and it would make the factor overflow.
MAX_LOG_RATIO: float = math.log(1e6)


def _log_ratio(observed: float, predicted: float) -> float | None:
    """``log(observed / predicted)`` of two positive finite figures, ``None`` beyond ``MAX_LOG_RATIO``.

    The log of the quotient, or where the quotient of a tiny and a huge float under- or overflows, the
    difference of their logs."""
    q = observed / predicted
    r = math.log(q) if 0 < q < math.inf else math.log(observed) - math.log(predicted)
    return r if abs(r) <= MAX_LOG_RATIO else None


def _fit(log_ratios: list[float]) -> tuple[float, float | None]:
    """``(factor, residual)``: exp of the median log ratio, RMS of the log ratios about it."""
    if not log_ratios:
        return 1.0, None
    centre = median(log_ratios)
    rms = math.sqrt(sum((r - centre) ** 2 for r in log_ratios) / len(log_ratios))
    return math.exp(centre), rms


def batch_of(running: float | None, replicas: int = 1) -> int | None:
    """Sequences per replica from a deployment-wide running count (None when nothing was running)."""
    if not _usable(running) or replicas < 1:
        return None
    return max(1, round(running / replicas))


def fit_correction(
    samples: Sequence[SpeedSample],
    predict: Predictor | None = None,
    *,
    fitted_at: datetime | None = None,
    min_samples: int = 1,
) -> SpeedCorrection:
    """Fit decode and prefill factors from ``samples`` (median of log observed / predicted).

    ``predict(batch, context_tokens)`` gives the model's figures for a sample without ``predicted``;
    it is called once per distinct (batch, context). Samples with no running batch are ignored. A
    side with fewer than ``min_samples`` usable samples is not fitted (factor 1, 0 samples; the
    assumptions say how many there were).
    """
    cache: dict[tuple[int, int | None], SpeedPrediction] = {}
    usable: list[tuple[SpeedSample, SpeedPrediction]] = []
    ignored = 0
    for s in samples:
        if not _usable(s.batch) or not (_usable(s.tpot_s) or _usable(s.ttft_s)):
            ignored += 1
            continue
        p = s.predicted
        if p is None:
            if predict is None:
                raise ValueError("A sample has no prediction and no predict function was given.")
            key = (max(1, round(s.batch)), s.context_tokens)
            p = cache.get(key) or cache.setdefault(key, predict(*key))
        usable.append((s, p))
    decode_logs = [_log_ratio(s.tpot_s, p.tpot_s) for s, p in usable if _usable(s.tpot_s) and _usable(p.tpot_s)]
    decode_logs = [r for r in decode_logs if r is not None]
    counts = {"Decode": len(decode_logs)}
    decode_logs = decode_logs if len(decode_logs) >= min_samples else []
    decode_factor, decode_residual = _fit(decode_logs)
    prefill_logs = []
    for s, p in usable:
        if not (_usable(s.ttft_s) and _usable(p.prefill_s)):
            continue
        observed = s.ttft_s - decode_factor * p.ttft_decode_s if _usable(p.ttft_decode_s) else s.ttft_s
        ratio = _log_ratio(observed, p.prefill_s) if _usable(observed) else None
        if ratio is not None:
            prefill_logs.append(ratio)
    counts["Prefill"] = len(prefill_logs)
    prefill_logs = prefill_logs if len(prefill_logs) >= min_samples else []
    prefill_factor, prefill_residual = _fit(prefill_logs)
    short = [
        f"{side}: {n} usable sample(s), fewer than {min_samples}: not corrected."
        for side, n in counts.items()
        if 0 < n < min_samples
    ]
    notes = (
        "Factors are exp(median log(observed / predicted)) over the polls with requests running: TPOT (median "
        "inter-token latency) for decode; TTFT less the interleaved decode steps for prefill (queueing + prefill).",
        f"{len(decode_logs)} decode and {len(prefill_logs)} prefill sample(s); {ignored} poll(s) ignored (idle "
        "or without figures).",
        *short,
    )
    return SpeedCorrection(
        decode_factor=decode_factor,
        prefill_factor=prefill_factor,
        decode_samples=len(decode_logs),
        prefill_samples=len(prefill_logs),
        decode_residual=decode_residual,
        prefill_residual=prefill_residual,
        fitted_at=fitted_at,
        ignored_samples=ignored,
        assumptions=notes,
    )


def describe_age(age_s: float | None) -> str:
    """``"fitted 3 h ago"``-style text (``"fitted at an unknown time"`` without an age)."""
    if age_s is None:
        return "fitted at an unknown time"
    if age_s < 120:
        return f"fitted {age_s:.0f} s ago"
    if age_s < 7200:
        return f"fitted {age_s / 60:.0f} min ago"
    if age_s < 172800:
        return f"fitted {age_s / 3600:.1f} h ago"
    return f"fitted {age_s / 86400:.1f} days ago"


def apply_correction(
    result: ThroughputResult,
    correction: SpeedCorrection,
    *,
    age_s: float | None = None,
    tpot_slo_ms: float | None = None,
    ttft_slo_ms: float | None = None,
) -> ThroughputResult:
    """``result`` with the correction applied (a new result; the model's own is unchanged).

    TPOT x decode_factor, so every token rate / decode_factor and USD per Mtok x decode_factor;
    TTFT = prefill_factor x (queueing + prefill) + decode_factor x (the interleaved decode steps), the
    same factors on ``ttft_parts`` (so the parts still sum to TTFT); queueing and idle TTFT (a prefill
    alone) x prefill_factor. A side with no samples keeps factor 1. ``meets_tpot``/``meets_ttft``
    are re-checked against the SLOs given (else kept); ``batch`` and the concurrency limits are the
    model's (a caller that picks the batch from the SLOs re-evaluates at other batches)."""
    d = correction.decode_factor if correction.decode_samples else 1.0
    p = correction.prefill_factor if correction.prefill_samples else 1.0
    tpot = result.tpot_s * d
    parts = result.ttft_parts.scaled(p, d)
    ttft = parts.total_s if math.isfinite(result.ttft_s) else result.ttft_s
    per_replica = result.tokens_per_s_replica / d
    meets_tpot, meets_ttft = result.meets_tpot, result.meets_ttft
    if tpot_slo_ms is not None:
        meets_tpot = tpot <= tpot_slo_ms / 1e3
    if ttft_slo_ms is not None:
        meets_ttft = ttft <= ttft_slo_ms / 1e3
    note = (
        f"Calibrated from live polls ({describe_age(age_s)}): TPOT x {d:.3f} (decode, {correction.decode_samples} "
        f"sample(s), residual {_residual(correction.decode_residual)}), prefill part of TTFT x {p:.3f} "
        f"({correction.prefill_samples} sample(s), residual {_residual(correction.prefill_residual)}); tokens/s "
        f"/ {d:.3f}, USD per Mtok x {d:.3f}."
    )
    return replace(
        result,
        tpot_s=tpot,
        ttft_s=ttft,
        ttft_parts=parts,
        idle_ttft_s=result.idle_ttft_s * p,
        queue_s=result.queue_s * p,
        tokens_per_s_replica=per_replica,
        tokens_per_s_per_gpu=result.tokens_per_s_per_gpu / d,
        tokens_per_s_per_user=result.tokens_per_s_per_user / d,
        meets_tpot=meets_tpot,
        meets_ttft=meets_ttft,
        tokens_per_usd=None if result.tokens_per_usd is None else result.tokens_per_usd / d,
        usd_per_mtok=None if result.usd_per_mtok is None else result.usd_per_mtok * d,
        assumptions=(note, *result.assumptions),
    )


def _residual(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
