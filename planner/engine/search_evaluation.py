"""Candidate evaluation for ``search()``: one call's state, each (SKU, KV dtype, layout) unit, the pairing.

Pure Python, no Django. :class:`_Search` walks the space (``search_space``) and keeps one light
record (:class:`_Rec`) per configuration, feasible or rejected with its reason; aggregated replicas
are checked against memory and both SLOs, and each feasible decode pool of a disaggregated
configuration gets the cheapest prefill pool that keeps TTFT, found by bisection. The module
docstring of ``search`` describes the space and the rules.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from .decode import DecodeModel
from .precompute import model_constants
from .prefill import PrefillModel
from .search_types import MODES, REASONS, SearchCancelled, design_concurrency
from .sizing import size
from .spec import Layout
from .throughput import aggregated_latency
from .throughput_model import cached_model_perf
from .units import GB, ceil_div


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
