"""Prefill of one prompt on one replica (chunked), and the KV transfer of disaggregated serving.

Pure Python, no Django. Units: seconds, bytes, FLOPs, tokens. Formulas: docs/throughput.md, "Prefill".

The prompt's ``P`` tokens, of which ``P0`` come from the prefix cache, are processed in chunks of
``c`` tokens (``ThroughputOptions.prefill_chunk_tokens``, default the runtime's per-step token
budget). Under load every data-parallel rank prefills its own chunk in the same step, so a step
handles ``dp x c`` tokens. Per step, stage and GPU:

* FLOPs = 2 x dense active x c / (tp x pp) + 2 x routed active x c x dp / (tp x dp x pp) + the
  chunk's share of the attention: per layer ``coef x heads / tp x pairs`` with
  ``pairs = (P(P+1) - P0(P0+1)) / 2`` for full and MLA layers (quadratic), the window-capped sum for
  sliding layers, and ``P - P0`` for linear layers (linear);
* bytes = dense weights + the experts ``dp x c`` tokens touch + the prefix KV read + the chunk's KV
  written + the state read and written;
* time = max(bytes / bandwidth, FLOPs / rate) + tp all-reduces + MoE all-to-all + stage hops.

Prefill time of one prompt (its first token): the first chunk crosses all ``pp`` stages, each later
chunk follows one stage behind: ``pp x stage + hops + overhead + (chunks - 1) x (stage + overhead)``.
The replica's prefill throughput is ``dp x c / (stage + overhead)`` tokens/s, and one request keeps
the replica busy ``(P - P0) / throughput`` seconds (what queueing is computed from).

KV transfer (disaggregated serving): the prompt's KV bytes (all layers, ``kv_cache_dtype``) plus the
linear-attention state, sent over the network from the prefill rank's ``tp x pp`` GPUs (one NIC
each). KV layers are sent as soon as they are computed (Mooncake, NIXL), so only the part not hidden
behind the prefill is exposed: ``max(kv / layers, kv - prefill x (layers - 1) / layers)``. A linear
layer's recurrent state is final only once the last chunk has passed it (every chunk overwrites it),
so the state streams behind the last chunk's pass alone:
``max(state / layers, state - last_chunk x (layers - 1) / layers)``, with ``last_chunk`` the time the
last chunk takes through the stages (``pp x stage``); the exposed transfer is the sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import EngineInputError
from ..formats import DEFAULT_KV_CACHE_DTYPE, DTYPE_BYTES
from ..sizing.memo import model_constants
from ..sizing.runtime import default_batch_tokens
from ..spec import Accelerator, Layout, ModelArch
from ..units import ceil_div
from .decode import DecodeModel, check_layout, decode_model, overlapped
from .options import DEFAULT_OPTIONS, ThroughputOptions
from .perf import distinct_experts, sliding_pairs


@dataclass(frozen=True, slots=True)
class PrefillEstimate:
    """Prefill of one prompt on one replica, with the KV transfer it would need if disaggregated."""

    model: str
    accelerator: str
    layout: Layout
    prompt_tokens: int
    cached_tokens: int
    chunk_tokens: int
    chunks: int
    time_s: float
    step_time_s: float
    compute_time_s: float
    memory_time_s: float
    communication_time_s: float
    overhead_s: float
    bound: str
    flops_per_gpu: float
    replica_tokens_per_s: float
    busy_s_per_request: float
    kv_transfer_bytes: int
    kv_transfer_s: float
    kv_transfer_exposed_s: float
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "accelerator": self.accelerator,
            "layout": self.layout.as_dict(),
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "chunk_tokens": self.chunk_tokens,
            "chunks": self.chunks,
            "time_ms": self.time_s * 1e3,
            "step_time_ms": self.step_time_s * 1e3,
            "compute_time_ms": self.compute_time_s * 1e3,
            "memory_time_ms": self.memory_time_s * 1e3,
            "communication_time_ms": self.communication_time_s * 1e3,
            "overhead_ms": self.overhead_s * 1e3,
            "bound": self.bound,
            "flops_per_gpu": self.flops_per_gpu,
            "replica_tokens_per_s": self.replica_tokens_per_s,
            "busy_ms_per_request": self.busy_s_per_request * 1e3,
            "kv_transfer_bytes": self.kv_transfer_bytes,
            "kv_transfer_ms": self.kv_transfer_s * 1e3,
            "kv_transfer_exposed_ms": self.kv_transfer_exposed_s * 1e3,
            "assumptions": list(self.assumptions),
        }


class PrefillParts(NamedTuple):
    """Raw figures of one prompt's prefill (seconds, FLOPs, tokens/s, bytes); see ``PrefillEstimate``."""

    time_s: float
    step_s: float
    compute_s: float
    memory_s: float
    communication_s: float
    overhead_s: float
    chunks: int
    chunk_tokens: float
    flops_per_gpu: float
    replica_tokens_per_s: float
    busy_s: float
    transfer_bytes: float
    transfer_s: float
    exposed_s: float


class PrefillModel:
    """Prefill constants of one (model, accelerator, layout, KV dtype, options), built on a ``DecodeModel``."""

    __slots__ = ("attn", "chunk", "dm", "kv_token_gpu", "layers", "mla_share", "net_rate", "notes", "state_logical")

    def __init__(self, dm: DecodeModel, chunk_tokens: int | None = None):
        self.dm = dm
        self.notes: tuple[str, ...] | None = None
        self.chunk = chunk_tokens or dm.options.prefill_chunk_tokens or default_batch_tokens(dm.accelerator)
        tp, pp = dm.tp, dm.pp
        self.attn = tuple(
            (g.kind, ceil_div(g.count, pp) * max(1.0, g.heads / tp) * g.prefill, g.window) for g in dm.perf.groups
        )
        total = sum(per for _, per, _ in self.attn) or 1.0
        self.mla_share = sum(per for kind, per, _ in self.attn if kind == "mla") / total  # approximate split
        self.kv_token_gpu = dm.geometry.bytes_per_token_per_gpu
        self.layers = max(1, dm.perf.layers)
        self.net_rate = dm.fabric.net_bw * tp * pp
        self.state_logical = model_constants(dm.model).geometry(dm.kv_dtype, 1, 1)[1]

    def attn_flops(self, prompt: int, cached: int) -> float:
        """Attention FLOPs of the prompt's uncached tokens on one GPU of a stage (all chunks)."""
        full = (prompt * (prompt + 1) - cached * (cached + 1)) / 2
        flops = 0.0
        for kind, per, window in self.attn:
            if kind == "linear":
                flops += per * (prompt - cached)
            elif kind == "sliding":
                flops += per * (sliding_pairs(prompt, window) - sliding_pairs(cached, window))
            else:
                flops += per * full
        return flops

    def parts(self, prompt: int, cached: int, ranks: int | None = None) -> PrefillParts:
        """Prefill of one ``prompt``-token prompt with ``cached`` tokens from the prefix cache.

        ``ranks``: data-parallel ranks prefilling a chunk in the same step, each its own prompt. Default
        all ``dp`` (under load, the module docstring); ``1`` is one prompt on an idle replica (its idle
        TTFT, ``estimate.ThroughputResult.idle_ttft_s``): the experts then see one chunk's tokens, not
        ``dp`` chunks'. The same formulas either way; with ``dp = 1`` the two are equal."""
        dm = self.dm
        new = max(1, prompt - cached)
        chunks = math.ceil(new / self.chunk)
        c = new / chunks  # average chunk (the last one is usually shorter)
        dp, pp = dm.dp, dm.pp
        tokens = c * (dp if ranks is None else max(1, min(ranks, dp)))
        d = (dm.expert_read * distinct_experts(dm.e, dm.k, tokens) / dm.e) if dm.e else 0.0
        ctx = (cached + prompt) / 2
        mem = (
            dm.dense_read
            + d
            + dm.geometry.bytes_per_sequence_per_gpu(max(1, round(ctx)))
            + c * self.kv_token_gpu
            + 2 * dm.state_gpu
        )
        t_mem = mem / dm.bw
        fa = self.attn_flops(prompt, cached) / chunks
        fd, fe = dm.f_dense * c, dm.f_exp * tokens
        mla_share = self.mla_share
        t_attn = fa * (1 - mla_share) / dm.r_attn + fa * mla_share / dm.r_attn_mla
        t_exp = fe / dm.r_exp * (dm.tile_factor(tokens, distinct_experts(dm.e, dm.k, tokens)) if dm.e else 1.0)
        t_comp = fd / dm.r_dense + t_exp + t_attn
        comm_tp = dm.tp_ar_fixed_s + dm.tp_ar_s_per_seq * c
        comm_ep = 0.0
        if dm.a2a_s_per_token:
            comm_ep += dm.a2a_fixed_s + dm.a2a_prefill_s_per_token * c
        if dm.gather_s_per_token:
            comm_ep += dm.gather_fixed_s + dm.gather_s_per_token * tokens
        if dm.etp_s_per_token:
            comm_ep += dm.etp_fixed_s + dm.etp_s_per_token * c
        hops = dm.hop_fixed_s + dm.hop_s_per_seq * c if pp > 1 else 0.0
        roof = max(t_mem, t_comp)
        tbo = dm.overlap and c >= 2
        launch = dm.launch_s(math.inf, dm.kernels_stage, roof)[0]  # prefill: eager launches
        work = roof + launch
        stage = work + comm_ep + comm_tp
        if tbo:  # two micro-batches, every kernel launched twice; used where it pays
            tbo_work = roof + dm.launch_s(math.inf, 2 * dm.kernels_stage, roof)[0]
            stage = min(stage, overlapped(tbo_work, comm_ep) + comm_tp)
        comm = comm_tp + comm_ep
        over = dm.overhead
        time = pp * stage + hops + over + (chunks - 1) * (stage + over)
        cycles = pp + chunks - 1
        tok_s = tokens / (stage + over)
        busy = new / tok_s
        kv_bytes = dm.geometry.bytes_per_sequence(prompt)
        xfer_bytes = kv_bytes + self.state_logical
        xfer = xfer_bytes / self.net_rate + dm.fabric.net_lat
        kv_xfer = kv_bytes / self.net_rate + dm.fabric.net_lat
        share = (self.layers - 1) / self.layers
        exposed = max(kv_xfer / self.layers, kv_xfer - time * share)
        if self.state_logical:
            state_xfer = self.state_logical / self.net_rate
            last_chunk = pp * stage  # the last chunk's pass through every stage: the states become final
            exposed += max(state_xfer / self.layers, state_xfer - last_chunk * share)
        return PrefillParts(
            time_s=time,
            step_s=stage,
            compute_s=cycles * t_comp,
            memory_s=cycles * t_mem,
            communication_s=cycles * comm + hops,
            overhead_s=chunks * over + cycles * launch,
            chunks=chunks,
            chunk_tokens=c,
            flops_per_gpu=chunks * pp * (fd + fe + fa),
            replica_tokens_per_s=tok_s,
            busy_s=busy,
            transfer_bytes=xfer_bytes,
            transfer_s=xfer,
            exposed_s=exposed,
        )

    def assumptions(self) -> tuple[str, ...]:
        """The prefill's own assumption texts (built once: the model is read-only)."""
        if self.notes is None:
            self.notes = self._assumptions()
        return self.notes

    def _assumptions(self) -> tuple[str, ...]:
        return (
            f"Prefill in chunks of {self.chunk} tokens per data-parallel rank; every rank prefills in the same "
            "step under load; prompt time = pp x stage + hops + overhead + (chunks - 1) x (stage + overhead).",
            "Attention FLOPs: quadratic in the prompt for full and MLA layers (causal, cached prefix skipped), "
            "window-capped for sliding layers, linear for linear-attention layers.",
            f"KV transfer (disaggregated): prompt KV + state over {self.dm.options.network_gbps:g} GB/s per GPU one "
            "way from the prefill rank's tp x pp GPUs, streamed layer by layer (only the unhidden part delays TTFT).",
        )


def prefill_model(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    options: ThroughputOptions = DEFAULT_OPTIONS,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
) -> PrefillModel:
    """A ``PrefillModel`` on ``decode_model(...)``, memoised the same way (read-only once built)."""
    key = ("prefill_model", accelerator, layout, kv_cache_dtype, options, weight_format, include_scale_overhead)
    return model_constants(model).text(
        key,
        lambda: PrefillModel(
            decode_model(model, accelerator, layout, kv_cache_dtype, options, weight_format, include_scale_overhead)
        ),
    )


def prefill(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout | None = None,
    prompt_tokens: int = 2048,
    *,
    cached_tokens: int = 0,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    options: ThroughputOptions = DEFAULT_OPTIONS,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
) -> PrefillEstimate:
    """Prefill time of one ``prompt_tokens`` prompt (``cached_tokens`` from the prefix cache) on one replica."""
    layout = layout or Layout()
    errors = options.errors()
    for name, value, low in (("prompt_tokens", prompt_tokens, 1), ("cached_tokens", cached_tokens, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            errors[name] = ["Must be a whole number of tokens" + (", at least 1." if low else ", zero or more.")]
    if "prompt_tokens" not in errors and "cached_tokens" not in errors and cached_tokens >= prompt_tokens:
        errors["cached_tokens"] = ["Must be below prompt_tokens (the last token is always computed)."]
    if kv_cache_dtype not in DTYPE_BYTES:
        errors["kv_cache_dtype"] = [f"Unknown KV cache dtype {kv_cache_dtype!r}."]
    if errors:
        raise EngineInputError(errors)
    check_layout(model, layout)
    pm = prefill_model(model, accelerator, layout, kv_cache_dtype, options, weight_format, include_scale_overhead)
    return prefill_of(pm, prompt_tokens, cached_tokens, pm.parts(prompt_tokens, cached_tokens))


def prefill_of(pm: PrefillModel, prompt_tokens: int, cached_tokens: int, p: PrefillParts) -> PrefillEstimate:
    """The ``PrefillEstimate`` of ``p = pm.parts(prompt_tokens, cached_tokens)``, inputs already checked
    (``prefill()`` checks them; ``estimate()`` has, and reuses the parts it timed)."""
    return PrefillEstimate(
        model=pm.dm.model.name,
        accelerator=pm.dm.accelerator.name,
        layout=pm.dm.layout,
        prompt_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
        chunk_tokens=pm.chunk,
        chunks=p.chunks,
        time_s=p.time_s,
        step_time_s=p.step_s,
        compute_time_s=p.compute_s,
        memory_time_s=p.memory_s,
        communication_time_s=p.communication_s,
        overhead_s=p.overhead_s,
        bound="compute" if p.compute_s >= p.memory_s else "memory",
        flops_per_gpu=p.flops_per_gpu,
        replica_tokens_per_s=p.replica_tokens_per_s,
        busy_s_per_request=p.busy_s,
        kv_transfer_bytes=int(p.transfer_bytes),
        kv_transfer_s=p.transfer_s,
        kv_transfer_exposed_s=p.exposed_s,
        assumptions=pm.assumptions() + pm.dm.assumptions()[1:],
    )
