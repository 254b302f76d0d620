"""``search()``'s result, assembled from the evaluated records: ranking, Pareto frontier, near misses, rejections.

Pure Python, no Django. Units: seconds in the records, ms in the reported ``Candidate``s, USD (float
estimates; the quoted price per GPU-hour is echoed as a string). ``pareto_front`` is the frontier of two
costs to minimise (USD per million tokens and TPOT).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..throughput.options import ThroughputOptions
from ..units import HOURS_PER_DAY, SECONDS_PER_HOUR, TOKENS_PER_MTOK
from .evaluation import Record, SearchRun
from .types import REJECTIONS, Candidate, PoolPlan, SearchResult, outcome_label

T = TypeVar("T")

#: The most feasible configurations a result draws beside its frontier (``SearchResult.points``).
MAX_CHART_POINTS = 500


def pareto_front(items: Iterable[T], x: Callable[[T], float], y: Callable[[T], float]) -> list[T]:
    """The items no other item beats on both ``x`` and ``y`` (lower is better), sorted by ``x``.

    Ties: of items with equal ``x`` only the lowest ``y`` is kept; an item is kept only when its ``y``
    is strictly below every cheaper item's.
    """
    front: list[T] = []
    best_y = float("inf")
    for item in sorted(items, key=lambda i: (x(i), y(i))):
        if y(item) < best_y:
            front.append(item)
            best_y = y(item)
    return front


_MODE_NOTES: dict[str, tuple[str, ...]] = {
    "aggregated": (
        "Aggregated: each replica runs its share of the design concurrency; TPOT = decode step / (1 - prefill "
        "share); TTFT = M/M/1 queueing on prefill work + prefill + one decode step per prefill chunk.",
    ),
    "disaggregated": (
        "Disaggregated: the decode pool runs the design concurrency alone (TPOT = decode step); the prefill pool "
        "(same SKU and KV dtype, its own layout) queues requests arriving at concurrency / (output x TPOT) and adds "
        "the KV transfer not hidden behind the prefill (prompt KV + state over the network, layer by layer).",
    ),
}


def _candidate(s: SearchRun, rec: Record, reason: str | None, detail: str | None = None) -> Candidate:
    o = s.prepared[rec.offer]
    gpus = rec.gpus + rec.p_gpus
    tok_s = s.C / rec.tpot if rec.tpot else None
    prefill = None
    if rec.p_layout is not None:
        p_step = None if rec.p_step is None else rec.p_step * 1e3
        prefill = PoolPlan(rec.p_layout, rec.p_gpus // rec.p_layout.gpus, rec.p_gpus, None, rec.p_mem, p_step)
    return Candidate(
        sku=o.label,
        mode=rec.mode,
        kv_cache_dtype=rec.kv,
        gpus=gpus,
        nodes=gpus // max(1, o.acc.gpus_per_node),
        usd_per_gpu_hour=str(o.price),
        usd_per_hour=rec.usd_hour,
        usd_per_mtok=rec.usd_hour * HOURS_PER_DAY / (s.w.output_tokens_per_day / TOKENS_PER_MTOK),
        usd_per_mtok_at_capacity=(rec.usd_hour / (tok_s * SECONDS_PER_HOUR) * TOKENS_PER_MTOK) if tok_s else None,
        tpot_ms=None if rec.tpot is None else rec.tpot * 1e3,
        ttft_ms=None if rec.ttft is None or math.isinf(rec.ttft) else rec.ttft * 1e3,
        output_tokens_per_s=tok_s,
        tokens_per_s_per_gpu=(tok_s / gpus) if tok_s else None,
        prefill_share=rec.share,
        kv_transfer_ms=None if rec.xfer is None else rec.xfer * 1e3,
        decode=PoolPlan(rec.layout, rec.r, rec.gpus, rec.b, rec.mem, None if rec.step is None else rec.step * 1e3),
        prefill=prefill,
        status=rec.status,
        reason=reason,
        detail=rec.detail if detail is None else detail,
        assumptions=_MODE_NOTES[rec.mode],
    )


def spread(items: list[T], keep: list[T], limit: int) -> list[T]:
    """``items`` thinned honestly: every one of ``keep`` (e.g. the frontier), and the others chosen evenly
    (in the order given) up to ``limit`` in all (all of them when they fit)."""
    if len(items) <= limit:
        return list(items)
    kept = {id(i) for i in keep}
    rest = [i for i in items if id(i) not in kept]
    room = max(0, limit - len(kept))
    chosen = {id(rest[k * len(rest) // room]) for k in range(room)} if room else set()
    return [i for i in items if id(i) in kept or id(i) in chosen]


def _point(s: SearchRun, rec: Record) -> tuple[float, float]:
    """A feasible configuration as the chart draws it: (TPOT ms, USD per million output tokens), 5 digits."""
    usd_mtok = rec.usd_hour * HOURS_PER_DAY / (s.w.output_tokens_per_day / TOKENS_PER_MTOK)
    return float(f"{rec.tpot * 1e3:.5g}"), float(f"{usd_mtok:.5g}")


def _distinct(recs: Iterable[Record], key: Callable[[Record], Any], n: int) -> list[Record]:
    """The first ``n`` records with distinct ``key`` (in the order given)."""
    seen: set[Any] = set()
    out: list[Record] = []
    if n <= 0:
        return out
    for r in recs:
        k = key(r)
        if k not in seen:
            seen.add(k)
            out.append(r)
            if len(out) >= n:
                break
    return out


def _dearer(r, best) -> str:
    """Why a feasible configuration other than the best lost: it costs more, or the same (a tie)."""
    return "same_cost" if r.usd_hour == best.usd_hour else "costs_more"


def build_result(s: SearchRun, top_n: int, examples: int, options: ThroughputOptions, started: float) -> SearchResult:
    """The ``SearchResult`` of a finished run: the best, the top ``top_n`` (one per SKU x mode x layouts), the
    Pareto frontier of cost vs TPOT, near misses cheaper than the best, and up to ``examples`` examples per
    rejection reason. ``started`` is the ``time.perf_counter()`` reading when the search began."""
    feasible = [r for r in s.recs if r.status == "feasible"]
    order = sorted(feasible, key=lambda r: (r.usd_hour, r.tpot))
    # top: the cheapest configuration of each (SKU, mode, layouts); the KV dtype that did best
    top_recs = _distinct(order, lambda r: (r.offer, r.mode, r.layout, r.p_layout), top_n)
    best = top_recs[0] if top_recs else None
    top = []
    for n, r in enumerate(top_recs):
        if n == 0:
            top.append(_candidate(s, r, None, r.detail or outcome_label(None)))
            continue
        extra = r.usd_hour - best.usd_hour
        pct = extra / best.usd_hour * 100 if best.usd_hour else 0.0
        if extra == 0:  # a tie on cost: the best won on TPOT (the sort's second key), not on price
            detail = f"same cost as the best; TPOT {r.tpot * 1e3:,.1f} vs {best.tpot * 1e3:,.1f} ms"
            top.append(_candidate(s, r, "same_cost", detail))
        else:
            top.append(_candidate(s, r, "costs_more", f"+{extra:,.2f} USD/hour vs the best (+{pct:.0f}%)"))
    front = pareto_front(feasible, lambda r: r.usd_hour, lambda r: r.tpot)
    frontier = [_candidate(s, r, None if r is best else _dearer(r, best)) for r in front]
    points = tuple(_point(s, r) for r in spread(order, front, MAX_CHART_POINTS))
    # near misses: cheaper than the best but lost; fitting ones first, then the closest in cost
    limit = best.usd_hour if best else math.inf
    losers = sorted(
        (r for r in s.recs if r.status != "feasible" and r.usd_hour < limit),
        key=lambda r: (r.status == "does_not_fit", -r.usd_hour),
    )
    near = [_candidate(s, r, r.status) for r in _distinct(losers, lambda r: (r.offer, r.mode, r.gpus), top_n)]
    rejected: dict[str, tuple[int, tuple[Candidate, ...]]] = {}
    for reason in REJECTIONS:
        group = sorted((r for r in s.recs if r.status == reason), key=lambda r: -r.usd_hour)
        picks = _distinct(group, lambda r: (r.offer, r.mode), examples)
        rejected[reason] = (s.counts[reason], tuple(_candidate(s, r, reason) for r in picks))
    ties = sum(1 for r in feasible if r is not best and best is not None and r.usd_hour == best.usd_hour)
    rejected["costs_more"] = (
        max(0, len(feasible) - 1 - ties),
        tuple(c for c in top[1:] if c.reason == "costs_more")[:examples],
    )
    rejected["same_cost"] = (ties, tuple(c for c in top[1:] if c.reason == "same_cost")[:examples])
    return SearchResult(
        model=s.model.name,
        workload=s.w,
        design_concurrency=s.C,
        skus=tuple(o.label for o in s.prepared),
        modes=s.modes,
        kv_cache_dtypes=s.kv_dtypes,
        max_gpus={o.label: o.cap for o in s.prepared},
        candidates_enumerated=s.enumerated,
        candidates_evaluated=s.evaluated,
        pruned_by_weights=s.pruned,
        disaggregated_pairs_covered=s.pairs,
        decode_evaluations=s.decode_evals,
        prefill_evaluations=s.prefill_evals,
        feasible=len(feasible),
        best=top[0] if top else None,
        frontier=tuple(frontier),
        points=points,
        top=tuple(top),
        near_misses=tuple(near),
        rejected=rejected,
        options=options,
        assumptions=_assumptions(s, options),
        wall_time_s=time.perf_counter() - started,
    )


def _assumptions(s: SearchRun, options: ThroughputOptions) -> tuple[str, ...]:
    w = s.w
    return (
        f"Design concurrency {s.C} sequences: the larger of the peak ({w.peak_concurrency}) and Little's law at the "
        f"SLOs on {w.requests_per_day:g} requests/day.",
        f"TPOT at the mean running context ({w.mean_context_tokens} tokens); memory admission at the p95 context "
        f"({w.p95_context_tokens} tokens); prefill of {w.mean_prompt_tokens} tokens, {w.cached_tokens} of them from "
        "the prefix cache.",
        "Cost per million output tokens = fleet USD per hour x 24 / (requests/day x mean output tokens / 1e6); "
        "usd_per_mtok_at_capacity divides by what the fleet produces at the design concurrency instead.",
        "GPU counts are whole nodes; replicas of one layout fill them. Disaggregated pools use the same SKU and KV "
        "dtype on separate nodes, and together stay within the GPU cap.",
        "Layout sizes are powers of two (tp; pp up to 8; dp; ep up to tp x dp, with etp = tp x dp / ep), "
        "validated like size(). "
        "Layouts whose weights alone exceed a GPU are pruned before any throughput evaluation.",
        "Speeds are the documented throughput model's, uncalibrated: a live correction fitted from polls belongs "
        "to one running deployment and is not carried to layouts that are not running.",
        f"Efficiency: memory bandwidth {options.memory_bandwidth_efficiency:g}, compute "
        f"{options.compute_efficiency:g}, links {options.link_efficiency:g}; communication is not overlapped with "
        "compute (no two-batch overlap).",
        "Evaluated candidates count each (SKU, KV dtype, layout, GPU count) once per role (aggregated replica, decode "
        "pool, prefill pool); (prefill, decode) pool pairs are matched by bisection, not evaluated one by one.",
    )
