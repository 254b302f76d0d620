"""Data types of the layout search: the workload, SKU offers, candidates and the result.

Pure Python, no Django. Units: tokens, milliseconds (``_ms``), USD (``usd_*``: float estimates; the
quoted price per GPU-hour is echoed as a string). See ``search.run`` and docs/throughput.md, "Search".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..limits import MAX_BATCH, MAX_CONTEXT_TOKENS, MAX_REQUESTS_PER_DAY, MAX_SLO_MS, int_error
from ..spec import Accelerator, Layout
from ..throughput.options import ThroughputOptions
from ..units import SECONDS_PER_DAY

MODES: tuple[str, ...] = ("aggregated", "disaggregated")
#: Why a configuration is not the pick: three rejections (a ``status``) then two losses of a feasible one.
REJECTIONS: tuple[str, ...] = ("does_not_fit", "misses_ttft", "misses_tpot")
REASONS: tuple[str, ...] = (*REJECTIONS, "costs_more", "same_cost")
#: The pick's outcome (``reason`` is ``None``) and a feasible configuration's ``status``.
BEST, FEASIBLE = "best", "feasible"
#: Every outcome in words, one sentence per code (no final stop: the prose around it punctuates); the
#: only place they are worded (pages show these, the API and CSV give each beside its code).
OUTCOMES: dict[str, str] = {
    BEST: "The cheapest that fits and meets both SLOs",
    FEASIBLE: "Fits and meets both SLOs",
    "does_not_fit": "Does not fit in GPU memory at the p95 context, or not within the GPU cap",
    "misses_ttft": "Misses the time-to-first-token SLO",
    "misses_tpot": "Misses the time-per-output-token SLO",
    "costs_more": "Meets both SLOs but costs more than the best",
    "same_cost": "Costs the same as the best but is slower",
}
ProgressCallback = Callable[[int, int], "bool | None"]


def outcome_label(code: str | None) -> str:
    """The sentence for an outcome code (``OUTCOMES``; ``None`` is the best)."""
    return OUTCOMES.get(code or BEST, code or BEST)


class SearchCancelled(Exception):
    """Raised by ``search()`` when the progress callback returns ``False``."""

    def __init__(self, done: int, total: int):
        self.done, self.total = done, total
        super().__init__(f"Search cancelled after {done} of {total} units of work.")


@dataclass(frozen=True, slots=True)
class Workload:
    """What the fleet must serve. Tokens per request are means; the p95 context sizes memory.

    ``peak_concurrency`` is the number of sequences decoding at once at peak; ``requests_per_day``
    sets the daily output volume the cost per million tokens is computed over. SLOs in milliseconds.
    """

    requests_per_day: float
    mean_prompt_tokens: int
    mean_output_tokens: int
    p95_context_tokens: int
    prefix_cache_hit_rate: float = 0.0
    peak_concurrency: int = 1
    ttft_slo_ms: float = 2000.0
    tpot_slo_ms: float = 50.0

    def errors(self) -> dict[str, list[str]]:
        """Field errors (empty when the workload is usable)."""
        errors: dict[str, list[str]] = {}
        rpd = self.requests_per_day
        if isinstance(rpd, bool) or not isinstance(rpd, int | float) or not math.isfinite(rpd) or rpd <= 0:
            errors["requests_per_day"] = ["Must be a positive number of requests."]
        elif rpd > MAX_REQUESTS_PER_DAY:
            errors["requests_per_day"] = [f"Must be at most {MAX_REQUESTS_PER_DAY:,.0f} requests a day."]
        for name, high in (
            ("mean_prompt_tokens", MAX_CONTEXT_TOKENS),
            ("mean_output_tokens", MAX_CONTEXT_TOKENS),
            ("p95_context_tokens", MAX_CONTEXT_TOKENS),
            ("peak_concurrency", MAX_BATCH),
        ):
            message = int_error(getattr(self, name), 1, high)
            if message:
                errors[name] = [message]
        hit = self.prefix_cache_hit_rate
        if isinstance(hit, bool) or not isinstance(hit, int | float) or not 0 <= hit < 1:
            errors["prefix_cache_hit_rate"] = ["Must be a fraction from 0 up to (not including) 1."]
        for name in ("ttft_slo_ms", "tpot_slo_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                errors[name] = ["Must be a positive number of milliseconds."]
            elif value > MAX_SLO_MS:
                errors[name] = [f"Must be at most {MAX_SLO_MS:,.0f} milliseconds."]
        return errors

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens served from the prefix cache (the last one is always computed)."""
        return min(self.mean_prompt_tokens - 1, int(self.mean_prompt_tokens * self.prefix_cache_hit_rate))

    @property
    def mean_context_tokens(self) -> int:
        """Mean context of a running sequence: prompt + half the output (where TPOT is evaluated)."""
        return self.mean_prompt_tokens + self.mean_output_tokens // 2

    @property
    def output_tokens_per_day(self) -> float:
        return self.requests_per_day * self.mean_output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests_per_day": self.requests_per_day,
            "mean_prompt_tokens": self.mean_prompt_tokens,
            "mean_output_tokens": self.mean_output_tokens,
            "p95_context_tokens": self.p95_context_tokens,
            "prefix_cache_hit_rate": self.prefix_cache_hit_rate,
            "peak_concurrency": self.peak_concurrency,
            "ttft_slo_ms": self.ttft_slo_ms,
            "tpot_slo_ms": self.tpot_slo_ms,
        }


def design_concurrency(workload: Workload) -> int:
    """Sequences the fleet must run at once: the peak, or more if the daily volume needs it.

    Little's law at the SLOs: ``requests_per_day / 86400 x (output x TPOT SLO + TTFT SLO)``, an upper
    bound on the average concurrency (a faster configuration needs fewer slots).
    """
    rate = workload.requests_per_day / SECONDS_PER_DAY
    slots = rate * (workload.mean_output_tokens * workload.tpot_slo_ms + workload.ttft_slo_ms) / 1e3
    return max(workload.peak_concurrency, math.ceil(slots))


@dataclass(frozen=True, slots=True)
class SkuOffer:
    """A SKU at a price. ``scaleup_domain_gpus`` (e.g. 72 for a GB300 NVL72 rack) and ``network_gbps``
    (per GPU, one way) override ``ThroughputOptions`` for this SKU; ``name`` defaults to the SKU's."""

    accelerator: Accelerator
    usd_per_gpu_hour: Decimal | float | int | str
    scaleup_domain_gpus: int | None = None
    network_gbps: float | None = None
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name or self.accelerator.name


@dataclass(frozen=True, slots=True)
class PoolPlan:
    """One pool of identical replicas: a layout, how many, and the work each one does.

    ``batch_per_replica`` is the sequences each decoding replica runs (``None`` for a prefill pool);
    ``memory_limit_per_replica`` what memory admits at the p95 context; ``latency_ms`` one decode step
    alone (decode and aggregated pools) or the prefill of one mean prompt (prefill pools).
    """

    layout: Layout
    replicas: int
    gpus: int
    batch_per_replica: int | None
    memory_limit_per_replica: int
    latency_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout.as_dict(),
            "replicas": self.replicas,
            "gpus": self.gpus,
            "batch_per_replica": self.batch_per_replica,
            "memory_limit_per_replica": self.memory_limit_per_replica,
            "latency_ms": self.latency_ms,
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    """One serving configuration and how it fared. ``status`` is ``feasible`` or a rejection reason;
    ``reason`` is why it is not the pick (``None`` for the best; ``costs_more`` for other feasible ones,
    ``same_cost`` for those that cost exactly what the best does and lost on TPOT)."""

    sku: str
    mode: str
    kv_cache_dtype: str
    gpus: int
    nodes: int
    usd_per_gpu_hour: str
    usd_per_hour: float
    usd_per_mtok: float
    usd_per_mtok_at_capacity: float | None
    tpot_ms: float | None
    ttft_ms: float | None
    output_tokens_per_s: float | None
    tokens_per_s_per_gpu: float | None
    prefill_share: float | None
    kv_transfer_ms: float | None
    decode: PoolPlan
    prefill: PoolPlan | None
    status: str
    reason: str | None
    detail: str
    assumptions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "sku": self.sku,
            "mode": self.mode,
            "kv_cache_dtype": self.kv_cache_dtype,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "usd_per_hour": self.usd_per_hour,
            "usd_per_mtok": self.usd_per_mtok,
            "usd_per_mtok_at_capacity": self.usd_per_mtok_at_capacity,
            "tpot_ms": self.tpot_ms,
            "ttft_ms": self.ttft_ms,
            "output_tokens_per_s": self.output_tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "prefill_share": self.prefill_share,
            "kv_transfer_ms": self.kv_transfer_ms,
            "decode": self.decode.to_dict(),
            "prefill": None if self.prefill is None else self.prefill.to_dict(),
            "status": self.status,
            "reason": self.reason,
            "detail": self.detail,
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Everything ``search()`` found. ``rejected`` maps a reason to ``(count, examples)``; ``points`` are
    feasible configurations to draw, ``(tpot_ms, usd_per_mtok)``: all of them, or when there are more than
    ``report.MAX_CHART_POINTS``, every one on the frontier and the others chosen evenly by cost."""

    model: str
    workload: Workload
    design_concurrency: int
    skus: tuple[str, ...]
    modes: tuple[str, ...]
    kv_cache_dtypes: tuple[str, ...]
    max_gpus: dict[str, int]
    candidates_enumerated: int
    candidates_evaluated: int
    pruned_by_weights: int
    disaggregated_pairs_covered: int
    decode_evaluations: int
    prefill_evaluations: int
    feasible: int
    best: Candidate | None
    frontier: tuple[Candidate, ...]
    points: tuple[tuple[float, float], ...]
    top: tuple[Candidate, ...]
    near_misses: tuple[Candidate, ...]
    rejected: dict[str, tuple[int, tuple[Candidate, ...]]]
    options: ThroughputOptions
    assumptions: tuple[str, ...]
    wall_time_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "workload": self.workload.to_dict(),
            "design_concurrency": self.design_concurrency,
            "skus": list(self.skus),
            "modes": list(self.modes),
            "kv_cache_dtypes": list(self.kv_cache_dtypes),
            "max_gpus": dict(self.max_gpus),
            "candidates_enumerated": self.candidates_enumerated,
            "candidates_evaluated": self.candidates_evaluated,
            "pruned_by_weights": self.pruned_by_weights,
            "disaggregated_pairs_covered": self.disaggregated_pairs_covered,
            "decode_evaluations": self.decode_evaluations,
            "prefill_evaluations": self.prefill_evaluations,
            "feasible": self.feasible,
            "best": None if self.best is None else self.best.to_dict(),
            "frontier": [c.to_dict() for c in self.frontier],
            "points": [list(p) for p in self.points],
            "top": [c.to_dict() for c in self.top],
            "near_misses": [c.to_dict() for c in self.near_misses],
            "rejected": {
                reason: {"count": count, "examples": [c.to_dict() for c in examples]}
                for reason, (count, examples) in self.rejected.items()
            },
            "options": self.options.to_dict(),
            "assumptions": list(self.assumptions),
            "wall_time_s": self.wall_time_s,
        }
