"""Evaluation of ``search()``'s space: the inputs checked and priced, each (SKU, KV dtype, layout) unit, the pairing.

Pure Python, no Django. ``check_search_inputs`` reports every input problem at once (errors keyed by the
REST API's field names, ``EngineInputError``) and ``PricedOffer`` resolves each SKU offer: its price,
per-SKU options, GPU counts and layouts. ``SearchRun`` walks the space (``search.space``) and keeps one
light ``Record`` per configuration, feasible or rejected with its reason; aggregated replicas are
checked against memory and both SLOs, and each feasible decode pool of a disaggregated configuration
gets the cheapest prefill pool that keeps TTFT, found by bisection. ``search.run`` describes the space
and the rules; ``search.report`` turns a finished run into the ``SearchResult``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..errors import EngineInputError
from ..formats import DTYPE_BYTES
from ..limits import MAX_GPUS, MAX_NODES, int_error
from ..sizing.admission import usable_bytes
from ..sizing.capacity import size
from ..sizing.memo import check_model, model_constants
from ..sizing.weights import per_gpu_shares
from ..spec import Accelerator, Layout, ModelArch, accelerator_errors
from ..throughput.decode import DecodeModel
from ..throughput.estimate import aggregated_latency, parse_usd, queue_wait_s
from ..throughput.options import ThroughputOptions
from ..throughput.perf import cached_model_perf
from ..throughput.prefill import PrefillModel
from ..units import GB, ceil_div
from .space import gpu_counts, replica_layouts
from .types import MODES, REJECTIONS, ProgressCallback, SearchCancelled, SkuOffer, Workload, design_concurrency


class PricedOffer:
    """One SKU offer, resolved: its price (``Decimal`` and ``float`` USD per GPU-hour), the options with the
    offer's overrides, the whole-node GPU counts up to the cap, and the replica layouts that fit the cap."""

    __slots__ = ("acc", "cap", "counts", "label", "layouts", "options", "price", "price_f")

    def __init__(
        self, offer: SkuOffer, options: ThroughputOptions, max_nodes: int, max_gpus: int | None, model: ModelArch
    ):
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


def coerce_offers(offers: Iterable[SkuOffer | tuple[Accelerator, Any]]) -> list[SkuOffer]:
    """``SkuOffer``s from offers or ``(Accelerator, USD per GPU-hour)`` pairs; ``EngineInputError`` on ``offers``."""
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
    errors: dict[str, list[str]] = {}
    for n, offer in enumerate(out):
        for key, messages in accelerator_errors(offer.accelerator, speed=True).items():
            errors[f"offers.{n}.{key}"] = messages
    if errors:
        raise EngineInputError(errors)
    return out


def check_search_inputs(
    model: ModelArch,
    workload: Workload,
    modes: Sequence[str],
    kv_dtypes: Sequence[str],
    options: ThroughputOptions,
    max_nodes: int,
    max_gpus: int | None,
    top_n: int,
    examples: int,
) -> None:
    """Raise one ``EngineInputError`` listing every bad input of ``search()`` (the REST API's field names)."""
    check_model(model_constants(model))
    errors = {**workload.errors(), **options.errors()}
    limit = model.max_context_tokens
    if limit and "p95_context_tokens" not in errors and workload.p95_context_tokens > limit:
        errors["p95_context_tokens"] = [f"The model's maximum context is {limit} tokens."]
    if not modes or any(m not in MODES for m in modes):
        errors["modes"] = [f"Use one or both of {', '.join(MODES)}."]
    if not kv_dtypes or any(k not in DTYPE_BYTES for k in kv_dtypes):
        errors["kv_cache_dtypes"] = [f"Use KV dtypes among {', '.join(DTYPE_BYTES)}."]
    for name, value, high in (
        ("max_nodes", max_nodes, MAX_NODES),
        ("max_gpus", max_gpus, MAX_GPUS),
        ("top_n", top_n, 1000),
    ):
        if name == "max_gpus" and value is None:
            continue
        message = int_error(value, 1, high)
        if message:
            errors[name] = [message]
    message = int_error(examples, 0, 1000)
    if message:
        errors["examples_per_reason"] = [message]
    if errors:
        raise EngineInputError(errors)


class Record:
    """A configuration's figures, kept light until it is reported (``search.report`` builds a ``Candidate``).

    ``offer`` indexes ``SearchRun.prepared``; ``gpus``/``layout``/``r`` (replicas)/``b`` (sequences per
    replica)/``mem`` (what memory admits per replica) describe the decode or aggregated pool, ``p_*`` the
    prefill pool of a disaggregated configuration. Times in seconds (``tpot``, ``ttft``, ``step``,
    ``p_step``, ``xfer``: exposed KV transfer), ``usd_hour`` the fleet's USD per hour (float estimate).
    ``status`` is ``feasible`` or a rejection reason, with ``detail`` saying why.
    """

    __slots__ = (
        "b",
        "detail",
        "gpus",
        "kv",
        "layout",
        "mem",
        "mode",
        "offer",
        "p_gpus",
        "p_layout",
        "p_mem",
        "p_step",
        "r",
        "share",
        "status",
        "step",
        "tpot",
        "ttft",
        "usd_hour",
        "xfer",
    )

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

    def reject(self, status: str, detail: str) -> Record:
        """Mark the configuration rejected for ``status`` (one of ``REJECTIONS``); returns itself."""
        self.status, self.detail = status, detail
        return self


def _gb(b: float) -> str:
    return f"{b / GB:,.1f} GB"


def _admission_detail(b: int, mem: int, context: int, fits: bool) -> str:
    if not fits:
        return f"not one sequence of {context:,} tokens fits beside the weights and runtime"
    return f"needs {b:,} sequences per replica at {context:,} tokens; memory admits {mem:,}"


class SearchRun:
    """State of one ``search()`` call: the space, the records, the counters and the progress ticks.

    ``run()`` evaluates every unit (one SKU x KV dtype x layout over all GPU counts) and then, for
    disaggregated serving, pairs decode pools with prefill pools; ``search.report.build_result`` reads
    ``recs``, ``counts`` and the counters afterwards.
    """

    def __init__(
        self,
        model: ModelArch,
        workload: Workload,
        prepared: list[PricedOffer],
        modes: Sequence[str],
        kv_dtypes: Sequence[str],
        weight_format: str | None,
        scale: bool,
        utilization: float,
        progress: ProgressCallback | None,
        every: int,
    ):
        self.model, self.w, self.prepared = model, workload, prepared
        self.kv_dtypes, self.weight_format, self.scale, self.utilization = kv_dtypes, weight_format, scale, utilization
        self.agg, self.disagg = "aggregated" in modes, "disaggregated" in modes
        self.modes = tuple(m for m in MODES if m in modes)
        self.perf = cached_model_perf(model, weight_format, scale)
        self.c = model_constants(model)
        self.expert_b, self.other_b = self.c.weights(weight_format, scale)[:2]
        self.C = design_concurrency(workload)
        self.tpot_slo, self.ttft_slo = workload.tpot_slo_ms / 1e3, workload.ttft_slo_ms / 1e3
        self.recs: list[Record] = []
        self.counts = dict.fromkeys(REJECTIONS, 0)
        self.enumerated = self.evaluated = self.pruned = self.pairs = 0
        self.decode_evals = self.prefill_evals = 0
        self.prefill_layouts: dict[tuple[int, str], dict[int, int]] = {}
        self.decode_pools: dict[tuple[int, str], list[Record]] = {}
        self.prefill_pools: dict[tuple[int, str], dict[int, tuple[Any, ...]]] = {}
        self.progress, self.every = progress, max(1, every)
        self.units = [(i, kv, lay) for i, o in enumerate(prepared) for kv in kv_dtypes for lay in o.layouts]
        self.total = len(self.units) + (len(prepared) * len(kv_dtypes) if self.disagg else 0)
        self.done = 0

    def tick(self, force: bool = False) -> None:
        """Report progress every ``every`` units (or now, with ``force``); raise ``SearchCancelled`` on ``False``."""
        if self.progress is None or not (force or self.done % self.every == 0):
            return
        if self.progress(self.done, self.total) is False:
            raise SearchCancelled(self.done, self.total)

    def keep(self, rec: Record) -> None:
        """Store a finished record and count its rejection reason."""
        self.recs.append(rec)
        if rec.status != "feasible":
            self.counts[rec.status] += 1

    def run(self) -> None:
        """Evaluate every unit, then pair the disaggregated pools; progress from 0 to ``total``."""
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
        expert_gpu, other_gpu = per_gpu_shares(self.expert_b, self.other_b, layout, self.model.n_routed_experts)
        w_gpu = expert_gpu + other_gpu
        usable = usable_bytes(o.acc.driver_hbm_bytes, self.utilization)
        if w_gpu > usable:  # prune: the weights alone do not fit; no throughput evaluated
            self.pruned += len(counts) * (roles + int(self.disagg))
            self.counts["does_not_fit"] += len(counts) * roles - 1
            g = counts[-1]
            rec = Record(i, self.modes[0], kv, g, layout, g // gpr, ceil_div(C, g // gpr), 0, g * o.price_f)
            self.keep(rec.reject("does_not_fit", f"weights {_gb(w_gpu)} per GPU exceed the usable {_gb(usable)}"))
            return
        sized = size(
            self.model,
            o.acc,
            layout=layout,
            context_tokens=w.p95_context_tokens,
            kv_cache_dtype=kv,
            weight_format=self.weight_format,
            include_scale_overhead=self.scale,
            gpu_memory_utilization=self.utilization,
        )
        mem = sized.max_concurrent_sequences_per_replica
        geo = self.c.geometry(kv, layout.tp, layout.pp)
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
                rec = Record(i, "aggregated", kv, g, layout, r, b, mem, usd)
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
                rec = Record(i, "disaggregated", kv, g, layout, r, b, mem, usd)
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
                rec.ttft = queue_wait_s(lam / p_r, p_busy) + p_t + p_exp
                rec.usd_hour = (rec.gpus + g_p) * o.price_f
                if rec.gpus + g_p > o.cap:
                    rec.reject(
                        "does_not_fit",
                        f"decode pool {rec.gpus} GPUs + the cheapest sufficient prefill pool {g_p} GPUs exceed the "
                        f"cap of {o.cap}",
                    )
            self.keep(rec)
