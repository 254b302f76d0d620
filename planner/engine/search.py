"""Layout search: the cheapest serving configurations of a model for a workload, over SKUs and layouts.

Pure Python, no Django. Units: seconds internally, ms in ``to_dict()``, USD (float estimates; the
quoted price is echoed as a string), tokens. What is enumerated and how: docs/throughput.md, "Search".

For each SKU offer (accelerator + price per GPU-hour), KV dtype and replica layout
(``search_space.replica_layouts``), and each whole-node GPU count ``G`` (``search_space.gpu_counts``):

* **aggregated**: ``G / gpus-per-replica`` replicas share the workload's design concurrency ``C``;
  each runs ``B = ceil(C / replicas)`` sequences, which must fit in memory at the p95 context
  (``sizing.size``), and must meet the TTFT and TPOT SLOs (``throughput.aggregated_latency``);
* **disaggregated**: a decode pool (``G_d`` GPUs, its own layout) runs ``C`` sequences with no
  prefill interference and must fit and meet TPOT; it admits ``lambda = C / (output x TPOT)``
  requests per second, which a prefill pool (``G_p`` GPUs, its own layout, same SKU and KV dtype)
  must prefill within the TTFT SLO, KV transfer included (``throughput.disaggregated_ttft``);
  ``G_p + G_d`` must stay within the GPU cap. For each decode pool the cheapest sufficient prefill
  pool is found by bisection over the prefill pools' sustainable rates, so every (prefill, decode)
  pair within the cap is covered without being evaluated one by one.

Pruning: a layout whose weights alone exceed a GPU's usable memory is rejected (``does_not_fit``)
for every GPU count without evaluating throughput; it is counted in ``pruned_by_weights``, not in
``candidates_evaluated``.

Ranking: cost per million output tokens at the workload's volume (fleet USD per day / output tokens
per day), then TPOT. The result holds the Pareto frontier of cost vs TPOT, the top configurations
(the best, then the others with ``costs_more``), the near misses cheaper than the best with the reason
each lost (``does_not_fit``, ``misses_ttft``, ``misses_tpot``), and every rejection counted by reason
with examples.

``progress(done, total)`` is called at the start, every ``progress_every`` units of work (one unit =
one SKU x KV dtype x layout, over all GPU counts, plus one pairing unit per SKU x KV dtype) and at the
end; returning ``False`` raises ``SearchCancelled``.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from .decode import DecodeModel
from .errors import EngineInputError
from .formats import DTYPE_BYTES
from .pareto import pareto_front
from .precompute import check_model, model_constants
from .prefill import PrefillModel
from .search_space import DEFAULT_MAX_NODES, gpu_counts, replica_layouts
from .search_types import (
    MODES,
    REASONS,
    Candidate,
    PoolPlan,
    ProgressCallback,
    SearchCancelled,
    SearchResult,
    SkuOffer,
    Workload,
    design_concurrency,
)
from .sizing import DEFAULT_GPU_MEMORY_UTILIZATION, size
from .spec import Accelerator, Layout, ModelArch
from .throughput import SECONDS_PER_HOUR, aggregated_latency, parse_usd
from .throughput_model import cached_model_perf
from .throughput_options import DEFAULT_OPTIONS, ThroughputOptions
from .units import GB, ceil_div

__all__ = [
    "MODES",
    "REASONS",
    "Candidate",
    "PoolPlan",
    "SearchCancelled",
    "SearchResult",
    "SkuOffer",
    "Workload",
    "design_concurrency",
    "search",
]

# --------------------------------------------------------------------------- internals


class _Rec:
    """A configuration's figures, kept light until it is reported (a ``Candidate`` is built on demand)."""

    __slots__ = (
        "b", "detail", "gpus", "kv", "layout", "mem", "mode", "offer", "p_gpus", "p_layout", "p_mem", "p_step",
        "r", "share", "status", "step", "tpot", "ttft", "usd_hour", "xfer",
    )  # fmt: skip

    def __init__(self, offer: int, mode: str, kv: str, gpus: int, layout: Layout, r: int, b: int, mem: int, usd: float):
        self.offer, self.mode, self.kv, self.gpus, self.layout = offer, mode, kv, gpus, layout
        self.r, self.b, self.mem, self.usd_hour = r, b, mem, usd
        self.status, self.detail = "feasible", ""
        self.tpot: float | None = None
        self.ttft: float | None = None
        self.share: float | None = None
        self.xfer: float | None = None
        self.step: float | None = None
        self.p_layout: Layout | None = None
        self.p_gpus = self.p_mem = 0
        self.p_step: float | None = None

    def reject(self, status: str, detail: str) -> _Rec:
        self.status, self.detail = status, detail
        return self


class _Offer:
    """One SKU offer, resolved: price, per-SKU options, GPU counts and the layouts that fit the cap."""

    __slots__ = ("acc", "cap", "counts", "label", "layouts", "options", "price", "price_f")

    def __init__(self, offer: SkuOffer, options: ThroughputOptions, max_nodes: int, max_gpus: int | None, model):
        acc = offer.accelerator
        self.acc, self.label = acc, offer.label
        self.price = parse_usd(offer.usd_per_gpu_hour, "usd_per_gpu_hour")
        self.price_f = float(self.price)
        changes: dict[str, Any] = {}
        if offer.scaleup_domain_gpus is not None:
            changes["scaleup_domain_gpus"] = offer.scaleup_domain_gpus
        if offer.network_gbps is not None:
            changes["network_gbps"] = offer.network_gbps
        self.options = replace(options, **changes) if changes else options
        self.options.check()
        self.counts = gpu_counts(max(1, acc.gpus_per_node), max_nodes, max_gpus)
        self.cap = max(self.counts) if self.counts else 0
        self.layouts = replica_layouts(model, self.cap) if self.cap else []


def _coerce_offers(offers: Iterable[SkuOffer | tuple[Accelerator, Any]]) -> list[SkuOffer]:
    out = []
    for item in offers:
        if isinstance(item, SkuOffer):
            out.append(item)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Accelerator):
            out.append(SkuOffer(item[0], item[1]))
        else:
            raise EngineInputError.single("offers", "Each offer must be a SkuOffer or (Accelerator, USD per GPU-hour).")
    if not out:
        raise EngineInputError.single("offers", "Give at least one SKU with its price per GPU-hour.")
    return out


def _check(model: ModelArch, workload: Workload, modes, kv_dtypes, options, max_nodes, max_gpus, top_n, examples):
    check_model(model_constants(model))
    errors = {**workload.errors(), **options.errors()}
    limit = model.max_context_tokens
    if limit and "p95_context_tokens" not in errors and workload.p95_context_tokens > limit:
        errors["p95_context_tokens"] = [f"The model's maximum context is {limit} tokens."]
    if not modes or any(m not in MODES for m in modes):
        errors["modes"] = [f"Use one or both of {', '.join(MODES)}."]
    if not kv_dtypes or any(k not in DTYPE_BYTES for k in kv_dtypes):
        errors["kv_cache_dtypes"] = [f"Use KV dtypes among {', '.join(DTYPE_BYTES)}."]
    for name, value, low in (("max_nodes", max_nodes, 1), ("max_gpus", max_gpus, 1), ("top_n", top_n, 1)):
        if name == "max_gpus" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            errors[name] = ["Must be a positive whole number."]
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 0:
        errors["examples_per_reason"] = ["Must be a whole number, zero or more."]
    if errors:
        raise EngineInputError(errors)


def _gb(b: float) -> str:
    return f"{b / GB:,.1f} GB"


def _admission_detail(b: int, mem: int, context: int, fits: bool) -> str:
    if not fits:
        return f"not one sequence of {context:,} tokens fits beside the weights and runtime"
    return f"needs {b:,} sequences per replica at {context:,} tokens; memory admits {mem:,}"


def _wait(rate: float, busy: float) -> float:
    rho = rate * busy
    return math.inf if rho >= 1 else rho / (1 - rho) * busy


class _Search:
    """State of one ``search()`` call: the space, the records, the counters and the progress ticks."""

    def __init__(self, model, workload, prepared, modes, kv_dtypes, weight_format, scale, utilization, progress, every):
        self.model, self.w, self.prepared = model, workload, prepared
        self.kv_dtypes, self.weight_format, self.scale, self.utilization = kv_dtypes, weight_format, scale, utilization
        self.agg, self.disagg = "aggregated" in modes, "disaggregated" in modes
        self.modes = tuple(m for m in MODES if m in modes)
        self.perf = cached_model_perf(model, weight_format, scale)
        self.c = model_constants(model)
        self.expert_b, self.other_b = self.c.weights(weight_format, scale)[:2]
        self.C = design_concurrency(workload)
        self.tpot_slo, self.ttft_slo = workload.tpot_slo_ms / 1e3, workload.ttft_slo_ms / 1e3
        self.recs: list[_Rec] = []
        self.counts = dict.fromkeys(REASONS[:3], 0)
        self.enumerated = self.evaluated = self.pruned = self.pairs = 0
        self.decode_evals = self.prefill_evals = 0
        self.prefill_layouts: dict[tuple[int, str], dict[int, int]] = {}
        self.decode_pools: dict[tuple[int, str], list[_Rec]] = {}
        self.prefill_pools: dict[tuple[int, str], dict[int, tuple[Any, ...]]] = {}
        self.progress, self.every = progress, max(1, every)
        self.units = [(i, kv, lay) for i, o in enumerate(prepared) for kv in kv_dtypes for lay in o.layouts]
        self.total = len(self.units) + (len(prepared) * len(kv_dtypes) if self.disagg else 0)
        self.done = 0

    def tick(self, force: bool = False) -> None:
        if self.progress is None or not (force or self.done % self.every == 0):
            return
        if self.progress(self.done, self.total) is False:
            raise SearchCancelled(self.done, self.total)

    def keep(self, rec: _Rec) -> None:
        self.recs.append(rec)
        if rec.status != "feasible":
            self.counts[rec.status] += 1

    def run(self) -> None:
        self.tick(force=True)
        for i, kv, layout in self.units:
            self.done += 1
            self.unit(i, kv, layout)
            self.tick()
        if self.disagg:
            for i in range(len(self.prepared)):
                for kv in self.kv_dtypes:
                    self.done += 1
                    self.pair(i, kv)
                    self.tick()
        self.done = self.total
        self.tick(force=True)

    def unit(self, i: int, kv: str, layout: Layout) -> None:
        """Every GPU count of one (SKU, KV dtype, layout), in every mode."""
        o, w, C = self.prepared[i], self.w, self.C
        gpr = layout.gpus
        counts = [g for g in o.counts if g % gpr == 0]
        if not counts:
            return
        roles = len(self.modes)
        self.enumerated += len(counts) * (roles + int(self.disagg))  # + the prefill-pool role
        tp, pp, dp = layout.tp, layout.pp, layout.dp
        w_gpu = ceil_div(self.expert_b, tp * dp * pp) + ceil_div(self.other_b, tp * pp)
        usable = int(o.acc.hbm_bytes * self.utilization)
        if w_gpu > usable:  # prune: the weights alone do not fit; no throughput evaluated
            self.pruned += len(counts) * (roles + int(self.disagg))
            self.counts["does_not_fit"] += len(counts) * roles - 1
            g = counts[-1]
            rec = _Rec(i, self.modes[0], kv, g, layout, g // gpr, ceil_div(C, g // gpr), 0, g * o.price_f)
            self.keep(rec.reject("does_not_fit", f"weights {_gb(w_gpu)} per GPU exceed the usable {_gb(usable)}"))
            return
        sized = size(
            self.model, o.acc, layout=layout, context_tokens=w.p95_context_tokens, kv_cache_dtype=kv,
            weight_format=self.weight_format, include_scale_overhead=self.scale,
            gpu_memory_utilization=self.utilization,
        )  # fmt: skip
        mem = sized.max_concurrent_sequences_per_replica
        geo = self.c.geometry(kv, tp, pp)
        dm = DecodeModel(self.model, o.acc, layout, kv, o.options, self.weight_format, self.scale, self.perf, geo)
        pre = PrefillModel(dm).parts(w.mean_prompt_tokens, w.cached_tokens)
        self.prefill_evals += 1
        t_pre, chunks, busy, exposed = pre.time_s, pre.chunks, pre.busy_s, pre.exposed_s
        self.evaluated += len(counts) * (roles + int(self.disagg))
        for g in counts:
            r = g // gpr
            b = ceil_div(C, r)
            usd = g * o.price_f
            fits = b <= mem
            t_d = 0.0
            if fits:
                t_d = dm.time(b, w.mean_context_tokens)
                self.decode_evals += 1
            if self.agg:
                rec = _Rec(i, "aggregated", kv, g, layout, r, b, mem, usd)
                if not fits:
                    rec.reject("does_not_fit", _admission_detail(b, mem, w.p95_context_tokens, sized.fits))
                else:
                    tpot, ttft, _queue, share = aggregated_latency(t_d, b, w.mean_output_tokens, t_pre, busy, chunks)
                    rec.tpot, rec.ttft, rec.share, rec.step = tpot, ttft, share, t_d
                    if ttft > self.ttft_slo:
                        rec.reject("misses_ttft", f"TTFT {ttft * 1e3:,.0f} ms > {w.ttft_slo_ms:g} ms")
                    elif tpot > self.tpot_slo:
                        rec.reject("misses_tpot", f"TPOT {tpot * 1e3:,.1f} ms > {w.tpot_slo_ms:g} ms")
                self.keep(rec)
            if self.disagg:
                rec = _Rec(i, "disaggregated", kv, g, layout, r, b, mem, usd)
                if not fits:
                    self.keep(rec.reject("does_not_fit", _admission_detail(b, mem, w.p95_context_tokens, sized.fits)))
                elif t_d > self.tpot_slo:
                    rec.tpot = rec.step = t_d
                    self.keep(rec.reject("misses_tpot", f"decode pool TPOT {t_d * 1e3:,.1f} ms > {w.tpot_slo_ms:g} ms"))
                else:
                    rec.tpot = rec.step = t_d
                    self.decode_pools.setdefault((i, kv), []).append(rec)
                if mem >= 1:  # the same replicas as a prefill pool: the arrival rate it sustains within TTFT
                    slack = self.ttft_slo - t_pre - exposed
                    lam = 0.0
                    if slack > 0:
                        q = slack / busy
                        lam = r * q / (1 + q) / busy
                    pools = self.prefill_pools.setdefault((i, kv), {})
                    per_size = self.prefill_layouts.setdefault((i, kv), {})
                    per_size[g] = per_size.get(g, 0) + 1
                    if g not in pools or lam > pools[g][0]:
                        pools[g] = (lam, layout, r, mem, t_pre, exposed, busy)

    def pair(self, i: int, kv: str) -> None:
        """Give each feasible decode pool of (SKU, KV dtype) the cheapest prefill pool that keeps TTFT."""
        o, w, C = self.prepared[i], self.w, self.C
        pools = self.prefill_pools.get((i, kv), {})
        sizes = sorted(pools)
        best_lam: list[float] = []  # best sustainable rate among pools of at most sizes[n] GPUs
        best_at: list[int] = []
        top, at = -1.0, 0
        for g in sizes:
            if pools[g][0] > top:
                top, at = pools[g][0], g
            best_lam.append(top)
            best_at.append(at)
        for rec in self.decode_pools.get((i, kv), []):
            per_size = self.prefill_layouts.get((i, kv), {})
            self.pairs += sum(n for g, n in per_size.items() if g + rec.gpus <= o.cap)
            lam = C / (w.mean_output_tokens * rec.tpot)
            k = bisect.bisect_left(best_lam, lam)
            if k == len(best_lam) or best_lam[k] <= 0:
                rec.reject(
                    "misses_ttft",
                    f"no prefill pool of up to {o.cap} GPUs prefills {lam:,.2f} requests/s within {w.ttft_slo_ms:g} ms",
                )
            else:
                g_p = best_at[k]
                _lam, p_layout, p_r, p_mem, p_t, p_exp, p_busy = pools[g_p]
                rec.p_layout, rec.p_gpus, rec.p_mem, rec.p_step, rec.xfer = p_layout, g_p, p_mem, p_t, p_exp
                rec.ttft = _wait(lam / p_r, p_busy) + p_t + p_exp
                rec.usd_hour = (rec.gpus + g_p) * o.price_f
                if rec.gpus + g_p > o.cap:
                    rec.reject(
                        "does_not_fit",
                        f"decode pool {rec.gpus} GPUs + the cheapest sufficient prefill pool {g_p} GPUs exceed the "
                        f"cap of {o.cap}",
                    )
            self.keep(rec)


def search(
    model: ModelArch,
    workload: Workload,
    offers: Iterable[SkuOffer | tuple[Accelerator, Decimal | float | int | str]],
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_gpus: int | None = None,
    kv_cache_dtypes: Sequence[str] = ("bf16", "fp8"),
    modes: Sequence[str] = MODES,
    top_n: int = 10,
    examples_per_reason: int = 3,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    options: ThroughputOptions = DEFAULT_OPTIONS,
    progress: ProgressCallback | None = None,
    progress_every: int = 100,
) -> SearchResult:
    """Search SKUs x GPU counts x layouts x KV dtypes x serving modes for ``workload`` (module docstring).

    ``offers`` are ``SkuOffer``s or ``(Accelerator, usd_per_gpu_hour)`` pairs (price as ``Decimal``,
    ``float``, ``int`` or ``str``). GPU counts are whole nodes, ``1 .. max_nodes`` per SKU, capped at
    ``max_gpus``. ``progress(done, total)`` is called at the start, every ``progress_every`` units and
    at the end; returning ``False`` cancels (``SearchCancelled``). Raises ``EngineInputError`` for bad input.
    """
    started = time.perf_counter()
    modes, kv_dtypes = tuple(modes), tuple(kv_cache_dtypes)
    _check(model, workload, modes, kv_dtypes, options, max_nodes, max_gpus, top_n, examples_per_reason)
    prepared = [_Offer(o, options, max_nodes, max_gpus, model) for o in _coerce_offers(offers)]
    s = _Search(
        model, workload, prepared, modes, kv_dtypes, weight_format, include_scale_overhead,
        gpu_memory_utilization, progress, progress_every,
    )  # fmt: skip
    s.run()
    return _result(s, top_n, examples_per_reason, options, started)


# --------------------------------------------------------------------------- reporting


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


def _candidate(s: _Search, rec: _Rec, reason: str | None, detail: str | None = None) -> Candidate:
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
        usd_per_mtok=rec.usd_hour * 24 / (s.w.output_tokens_per_day / 1e6),
        usd_per_mtok_at_capacity=(rec.usd_hour / (tok_s * SECONDS_PER_HOUR) * 1e6) if tok_s else None,
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


def _distinct(recs: Iterable[_Rec], key: Callable[[_Rec], Any], n: int) -> list[_Rec]:
    """The first ``n`` records with distinct ``key`` (in the order given)."""
    seen: set[Any] = set()
    out: list[_Rec] = []
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


def _result(s: _Search, top_n: int, examples: int, options: ThroughputOptions, started: float) -> SearchResult:
    feasible = [r for r in s.recs if r.status == "feasible"]
    order = sorted(feasible, key=lambda r: (r.usd_hour, r.tpot))
    # top: the cheapest configuration of each (SKU, mode, layouts); the KV dtype that did best
    top_recs = _distinct(order, lambda r: (r.offer, r.mode, r.layout, r.p_layout), top_n)
    best = top_recs[0] if top_recs else None
    top = []
    for n, r in enumerate(top_recs):
        if n == 0:
            top.append(_candidate(s, r, None, r.detail or "the cheapest configuration that fits and meets both SLOs"))
            continue
        extra = r.usd_hour - best.usd_hour
        pct = extra / best.usd_hour * 100 if best.usd_hour else 0.0
        tie = f"; same cost, TPOT {r.tpot * 1e3:,.1f} vs {best.tpot * 1e3:,.1f} ms" if extra == 0 else ""
        top.append(_candidate(s, r, "costs_more", f"+{extra:,.2f} USD/hour vs the best (+{pct:.0f}%){tie}"))
    front = pareto_front(feasible, lambda r: r.usd_hour, lambda r: r.tpot)
    frontier = [_candidate(s, r, None if r is best else "costs_more") for r in front]
    # near misses: cheaper than the best but lost; fitting ones first, then the closest in cost
    limit = best.usd_hour if best else math.inf
    losers = sorted(
        (r for r in s.recs if r.status != "feasible" and r.usd_hour < limit),
        key=lambda r: (r.status == "does_not_fit", -r.usd_hour),
    )
    near = [_candidate(s, r, r.status) for r in _distinct(losers, lambda r: (r.offer, r.mode, r.gpus), top_n)]
    rejected: dict[str, tuple[int, tuple[Candidate, ...]]] = {}
    for reason in REASONS[:3]:
        group = sorted((r for r in s.recs if r.status == reason), key=lambda r: -r.usd_hour)
        picks = _distinct(group, lambda r: (r.offer, r.mode), examples)
        rejected[reason] = (s.counts[reason], tuple(_candidate(s, r, reason) for r in picks))
    rejected["costs_more"] = (max(0, len(feasible) - 1), tuple(top[1 : 1 + examples]))
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
        top=tuple(top),
        near_misses=tuple(near),
        rejected=rejected,
        options=options,
        assumptions=_assumptions(s, options),
        wall_time_s=time.perf_counter() - started,
    )


def _assumptions(s: _Search, options: ThroughputOptions) -> tuple[str, ...]:
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
        "Layout sizes are powers of two (tp; pp up to 8; dp; ep = 1, tp or tp x dp), validated like size(). "
        "Layouts whose weights alone exceed a GPU are pruned before any throughput evaluation.",
        f"Efficiency: memory bandwidth {options.memory_bandwidth_efficiency:g}, compute "
        f"{options.compute_efficiency:g}, links {options.link_efficiency:g}; communication is not overlapped with "
        "compute (no two-batch overlap).",
        "Evaluated candidates count each (SKU, KV dtype, layout, GPU count) once per role (aggregated replica, decode "
        "pool, prefill pool); (prefill, decode) pool pairs are matched by bisection, not evaluated one by one.",
    )
