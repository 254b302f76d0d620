"""One decode step of a batch on one replica: memory, compute, communication, overhead.

Pure Python, no Django. Units: seconds, bytes, FLOPs; ``*_per_gpu`` figures are one GPU's share per
token cycle (all pipeline stages a token passes through). Formulas: docs/throughput.md, "Decode".

A replica is ``tp x pp x dp`` GPUs (``spec.Layout``). With ``B`` sequences at context ``L``:

* each data-parallel attention rank holds ``b = max(1, B / dp)`` sequences; the pipeline keeps
  ``m = min(pp, b)`` micro-batches in flight (``1 - m / pp`` of the stages idle: the bubble), so a
  stage processes ``b / m`` sequences per rank and ``B / m`` tokens across the replica's experts;
* per stage and GPU, memory bytes = dense active weights / (tp x pp) + the experts the micro-batch
  touches (``E x (1 - (1 - k/E)^tokens)`` of ``E`` per MoE layer) / (tp x dp x pp) + KV read
  (``b/m x kv bytes of one sequence at L``, MLA not split by tp) + state read and written
  (``2 x b/m x state``);
* FLOPs per stage and GPU = 2 x dense active x (b/m) / (tp x pp) + 2 x routed active x (B/m) /
  (tp x dp x pp) + attention (per cached token for full/MLA layers, window-capped for sliding, fixed
  for linear), each at the tensor-core rate its weights allow;
* with EPLB (``redundant_experts`` > 0, ``ep`` > 1) the busiest ep rank receives ``1 + eplb_imbalance``
  times the mean routed tokens (``options.eplb_imbalance``, TensorRT-LLM's measurement); its expert GEMMs and
  its share of the all-to-all set the step, so both are scaled by that factor;
* communication per stage: two tp all-reduces per layer, the MoE all-to-all (dispatch + combine) over
  ``ep`` ranks, or an all-gather + reduce-scatter over the ``tp x dp`` expert group when ``ep = 1``
  and ``dp > 1``; ``pp - 1`` activation hops between stages;
* stage time = max(memory / (HBM bandwidth x efficiency), compute) + communication; TPOT = ``pp x``
  stage time + the hops + one step overhead. Tokens/s of the replica = ``B / TPOT``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import EngineInputError
from ..formats import DEFAULT_KV_CACHE_DTYPE, DTYPE_BYTES
from ..sizing.kv_cache import KvGeometry
from ..sizing.memo import check_model, model_constants
from ..spec import Accelerator, Layout, ModelArch
from ..units import TB, ceil_div
from .options import (
    DEFAULT_OPTIONS,
    Fabric,
    ThroughputOptions,
    compute_rate_format,
    cuda_graph_max_batch,
    grouped_gemm_efficiency,
    mla_decode_efficiency,
    peak_flops,
)
from .perf import ModelPerf, cached_model_perf, distinct_experts

#: Bytes per element of activations on the wire: bf16 for all-reduces and MoE combine; MoE dispatch
#: goes in fp8 when the experts compute in fp8/fp4 (DeepEP's fp8 dispatch), else bf16.
ACTIVATION_BYTES: int = 2

#: Kernels one decode layer launches per micro-batch, by attention kind (pre-norm, projections, rope and
#: cache write, the attention kernel and its split-KV merge, output projection), read from the decode
#: paths of vLLM 0.11 / SGLang 0.5 model files: GQA full/sliding (``llama.py``/``qwen3_moe.py``: norm,
#: qkv, rope+cache, attention split + merge, o_proj) 6; MLA absorbed (``deepseek_v2.py``: norm, fused
#: q_a/kv_a, two norms, q_b, k absorb bmm, rope+cache, FlashMLA split + combine, v absorb bmm, o_proj)
#: 11; KDA / gated DeltaNet (``qwen3_next.py``/``kimi_linear.py``: norm, in_proj qkvz, in_proj ba,
#: conv1d update, gate, recurrent update, gated norm, out_proj) 8.
ATTENTION_KERNELS: dict[str, int] = {"full": 6, "sliding": 6, "mla": 11, "linear": 8}
#: GEMM groups of each attention kind that take an activation-quantisation kernel with W8A8 weights
#: (per-token-group fp8 quant before each block-fp8 GEMM in vLLM/SGLang).
ATTENTION_GEMMS: dict[str, int] = {"full": 2, "sliding": 2, "mla": 4, "linear": 2}
#: MLP kernels per layer: dense (norm, gate_up, act, down) 4; routed MoE (norm, router, top-k, align/sort,
#: grouped up, act, grouped down, combine) 8; each shared expert block (gate_up, act, down) 3.
DENSE_MLP_KERNELS: int = 4
MOE_KERNELS: int = 8
SHARED_EXPERT_KERNELS: int = 3
#: Attention compute efficiency per kind. MLA absorbed decode: FlashMLA README (deepseek-ai/FlashMLA,
#: H800 SXM5): 660 TFLOPS compute-bound of 989 bf16 = 0.67 (and 3,000 GB/s of 3,350 memory-bound, above
#: the default 0.8); on data-centre Blackwell the decode kernel's own measurement by KV dtype
#: (``options.BLACKWELL_MLA_DECODE_EFFICIENCY``), prefill MLA keeps this figure. Other kinds: ``compute_efficiency``.
MLA_ATTENTION_EFFICIENCY: float = 0.67


def layer_kernels(kind: str, moe: bool, shared_experts: int, w8a8: bool) -> int:
    """Kernels one decode layer of attention ``kind`` launches per micro-batch (tables above)."""
    n = ATTENTION_KERNELS.get(kind, ATTENTION_KERNELS["full"])
    gemms = ATTENTION_GEMMS.get(kind, 2)
    if moe:
        n += MOE_KERNELS + SHARED_EXPERT_KERNELS * min(1, shared_experts)
        gemms += 2 * min(1, shared_experts) + 1
    else:
        n += DENSE_MLP_KERNELS
        gemms += 2
    return n + (gemms if w8a8 else 0)


def overlapped(work_s: float, comm_s: float) -> float:
    """Time of ``work_s`` and ``comm_s`` run as two overlapped micro-batches (two-batch overlap).

    One micro-batch's compute hides the other's all-to-all; half of the shorter term is not hidden
    (pipeline fill and drain): ``max + min / 2``. Never below the slower term, never above the sum.
    """
    return max(work_s, comm_s) + min(work_s, comm_s) / 2


@dataclass(frozen=True, slots=True)
class DecodeStep:
    """One decode step (one output token for each of ``batch`` sequences) on one replica.

    ``time_s`` is the TPOT with no prefill sharing the GPUs; the parts are per token cycle:
    ``time_s = max-of(memory, compute) per stage, summed + communication_time_s + overhead_s``.
    """

    model: str
    accelerator: str
    layout: Layout
    batch: int
    context_tokens: int
    kv_cache_dtype: str
    time_s: float
    memory_time_s: float
    compute_time_s: float
    communication_time_s: float
    overhead_s: float
    bound: str
    micro_batches: float
    pipeline_bubble_fraction: float
    distinct_experts: float
    dense_weight_bytes_per_gpu: float
    expert_bytes_per_gpu: float
    kv_bytes_per_gpu: float
    state_bytes_per_gpu: float
    flops_per_gpu: float
    dense_compute_format: str
    expert_compute_format: str
    tokens_per_s: float
    assumptions: tuple[str, ...]
    launch_time_s: float = 0.0
    step_overhead_s: float = 0.0
    overlap_saved_s: float = 0.0
    cuda_graph: bool = True
    kernels_per_step: int = 0

    @property
    def bytes_per_gpu(self) -> float:
        """All bytes one GPU reads or writes in the step (weights, experts, KV, state)."""
        return (
            self.dense_weight_bytes_per_gpu
            + self.expert_bytes_per_gpu
            + self.kv_bytes_per_gpu
            + self.state_bytes_per_gpu
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "accelerator": self.accelerator,
            "layout": self.layout.as_dict(),
            "batch": self.batch,
            "context_tokens": self.context_tokens,
            "kv_cache_dtype": self.kv_cache_dtype,
            "time_ms": self.time_s * 1e3,
            "memory_time_ms": self.memory_time_s * 1e3,
            "compute_time_ms": self.compute_time_s * 1e3,
            "communication_time_ms": self.communication_time_s * 1e3,
            "overhead_ms": self.overhead_s * 1e3,
            "bound": self.bound,
            "micro_batches": self.micro_batches,
            "pipeline_bubble_fraction": self.pipeline_bubble_fraction,
            "distinct_experts": self.distinct_experts,
            "bytes_per_gpu": {
                "dense_weights": self.dense_weight_bytes_per_gpu,
                "experts": self.expert_bytes_per_gpu,
                "kv": self.kv_bytes_per_gpu,
                "state": self.state_bytes_per_gpu,
                "total": self.bytes_per_gpu,
            },
            "flops_per_gpu": self.flops_per_gpu,
            "compute_formats": {"dense": self.dense_compute_format, "experts": self.expert_compute_format},
            "tokens_per_s": self.tokens_per_s,
            "launch_time_ms": self.launch_time_s * 1e3,
            "step_overhead_ms": self.step_overhead_s * 1e3,
            "overlap_saved_ms": self.overlap_saved_s * 1e3,
            "cuda_graph": self.cuda_graph,
            "kernels_per_step": self.kernels_per_step,
            "assumptions": list(self.assumptions),
        }


def check_layout(model: ModelArch, layout: Layout) -> None:
    """Raise ``EngineInputError`` for a model-level problem or a layout the engines refuse."""
    c = model_constants(model)
    check_model(c)
    errors = c.layout_errors(layout)
    if errors:
        raise EngineInputError(errors)


class DecodeModel:
    """Everything a decode step depends on besides batch and context, for fast repeated evaluation.

    Built once per (model, accelerator, layout, KV dtype, options); ``parts(batch, context)`` is
    plain arithmetic. ``decode_step()`` wraps it in a ``DecodeStep`` with assumptions.
    """

    __slots__ = (
        "a2a_fixed_s",
        "a2a_prefill_s_per_token",
        "a2a_s_per_token",
        "accelerator",
        "attn_ctx",
        "attn_fixed",
        "attn_mla",
        "bw",
        "dense_fmt",
        "dense_read",
        "dp",
        "e",
        "eplb",
        "etp_fixed_s",
        "etp_s_per_token",
        "expert_fmt",
        "expert_read",
        "f_dense",
        "f_exp",
        "fabric",
        "gather_fixed_s",
        "gather_s_per_token",
        "geometry",
        "graph_max",
        "hop_fixed_s",
        "hop_s_per_seq",
        "hot",
        "k",
        "kernels_stage",
        "kv_dtype",
        "layout",
        "model",
        "notes",
        "options",
        "overhead",
        "overlap",
        "perf",
        "pp",
        "r_attn",
        "r_attn_mla",
        "r_attn_mla_decode",
        "r_dense",
        "r_exp",
        "sliding",
        "state_gpu",
        "tile",
        "tp",
        "tp_ar_fixed_s",
        "tp_ar_s_per_seq",
    )

    def __init__(
        self,
        model: ModelArch,
        accelerator: Accelerator,
        layout: Layout,
        kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
        options: ThroughputOptions = DEFAULT_OPTIONS,
        weight_format: str | None = None,
        include_scale_overhead: bool = True,
        perf: ModelPerf | None = None,
        geometry: tuple[KvGeometry, int, int, tuple[str, ...]] | None = None,
    ):
        perf = perf or cached_model_perf(model, weight_format, include_scale_overhead)
        tp, pp, dp, ep = layout.tp, layout.pp, layout.dp, layout.ep
        self.model, self.accelerator, self.layout, self.options, self.perf = model, accelerator, layout, options, perf
        self.kv_dtype, self.tp, self.pp, self.dp = kv_cache_dtype, tp, pp, dp
        self.notes: tuple[str, ...] | None = None
        geo = geometry or model_constants(model).geometry(kv_cache_dtype, tp, pp)
        self.geometry, self.state_gpu = geo[0], geo[2]
        self.bw = accelerator.hbm_bandwidth_tbps * TB * options.memory_bandwidth_efficiency
        self.dense_read = perf.dense_bytes / (tp * pp)
        self.expert_read = perf.expert_bytes / (tp * dp * pp)
        self.e, self.k = perf.n_experts, perf.top_k
        self.f_dense = 2.0 * perf.dense_active_params / (tp * pp)
        self.f_exp = 2.0 * perf.routed_active_params / (tp * dp * pp)
        eff = options.compute_efficiency
        self.dense_fmt = compute_rate_format(accelerator, perf.dense_format, options.compute_format)
        self.expert_fmt = compute_rate_format(accelerator, perf.expert_format, options.compute_format)
        self.r_dense = peak_flops(accelerator, self.dense_fmt) * eff
        # the expert GEMMs at their own measured efficiency on Blackwell (options.BLACKWELL_GROUPED_GEMM_EFFICIENCY)
        self.r_exp = peak_flops(accelerator, self.expert_fmt) * grouped_gemm_efficiency(
            accelerator, self.expert_fmt, options
        )
        self.r_attn = peak_flops(accelerator, "bf16") * eff
        self.r_attn_mla = peak_flops(accelerator, "bf16") * MLA_ATTENTION_EFFICIENCY  # prefill (and Hopper)
        # the absorbed MLA decode kernel at its measured efficiency on Blackwell, by KV dtype
        # (options.BLACKWELL_MLA_DECODE_EFFICIENCY)
        mla_fmt, mla_eff = mla_decode_efficiency(accelerator, kv_cache_dtype, MLA_ATTENTION_EFFICIENCY)
        self.r_attn_mla_decode = peak_flops(accelerator, mla_fmt) * mla_eff
        # attention FLOPs per sequence on one GPU of a stage: per context token (full), MLA per context
        # token (its own kernel efficiency), fixed (linear), sliding (coef, window)
        attn_ctx = attn_mla = attn_fixed = 0.0
        sliding: list[tuple[float, int]] = []
        kernels = 0
        w8a8 = self.dense_fmt == "fp8" and perf.dense_format in ("fp8", "int8")
        for g in perf.groups:
            per = ceil_div(g.count, pp) * max(1.0, g.heads / tp) * g.decode
            if g.kind == "linear":
                attn_fixed += per
            elif g.kind == "sliding":
                sliding.append((per, g.window))
            elif g.kind == "mla":
                attn_mla += per
            else:
                attn_ctx += per
            kernels += ceil_div(g.count, pp) * layer_kernels(g.kind, perf.is_moe, model.n_shared_experts, w8a8)
        self.attn_ctx, self.attn_mla, self.attn_fixed, self.sliding = attn_ctx, attn_mla, attn_fixed, tuple(sliding)
        self.kernels_stage = kernels + (2 * ceil_div(perf.layers, pp) if tp > 1 else 0)  # + the all-reduces
        if perf.is_moe and ep > 1:
            self.kernels_stage += 2 * ceil_div(perf.moe_layers, pp)  # dispatch + combine
        self.graph_max = cuda_graph_max_batch(accelerator, tp, options)
        self.overlap = options.overlap and perf.is_moe and ep > 1
        # EPLB's residual imbalance: the step waits for the ep rank that receives the most routed tokens
        self.eplb = perf.is_moe and ep > 1 and bool(layout.redundant_experts)
        self.hot = 1.0 + options.eplb_imbalance if self.eplb else 1.0
        self.tile = options.gemm_tile_tokens
        # communication, per stage and micro-batch (seconds = fixed + per-sequence/per-token terms)
        fabric = self.fabric = Fabric(accelerator, options)
        layers_stage = ceil_div(perf.layers, pp)
        moe_stage = ceil_div(perf.moe_layers, pp) if perf.moe_layers else 0
        msg_per_seq = perf.hidden * ACTIVATION_BYTES
        if tp > 1:
            bw, lat = fabric.group(tp)
            self.tp_ar_fixed_s = 2 * layers_stage * lat
            self.tp_ar_s_per_seq = 2 * layers_stage * 2 * (tp - 1) / tp * msg_per_seq / bw
        else:
            self.tp_ar_fixed_s = self.tp_ar_s_per_seq = 0.0
        self.a2a_fixed_s = self.a2a_s_per_token = self.gather_fixed_s = self.gather_s_per_token = 0.0
        self.a2a_prefill_s_per_token = self.etp_fixed_s = self.etp_s_per_token = 0.0
        if perf.is_moe and ep > 1:
            dispatch = 1 if self.expert_fmt in ("fp8", "fp4") else ACTIVATION_BYTES
            fanout = min(self.k, ep) * (ep - 1) / ep
            per_token = fanout * perf.hidden * (dispatch + ACTIVATION_BYTES) / tp  # a rank's tokens split over tp
            lat = fabric.group(ep)[1]
            self.a2a_fixed_s = moe_stage * 2 * lat
            self.a2a_s_per_token = moe_stage * per_token * fabric.all_to_all_s_per_byte(ep)
            self.a2a_prefill_s_per_token = moe_stage * per_token * fabric.all_to_all_normal_s_per_byte(ep, self.k)
            etp = layout.expert_tp
            if etp > 1:
                # expert tensor parallelism: each of an ep rank's experts is split over its etp GPUs, whose
                # partial outputs are all-reduced (ring: 2 (etp - 1) / etp of the message) for the k / ep of
                # every token's routed hits that land on the rank (SGLang moe_tp, TensorRT-LLM moe_tp_size)
                bw_e, lat_e = fabric.group(etp)
                self.etp_fixed_s = moe_stage * lat_e
                self.etp_s_per_token = (
                    moe_stage * 2 * (etp - 1) / etp * perf.hidden * ACTIVATION_BYTES * min(self.k, ep) / ep / bw_e
                )
                self.kernels_stage += 2 * moe_stage
        elif perf.is_moe and dp > 1:
            group = tp * dp
            bw, lat = fabric.group(group)
            self.gather_fixed_s = moe_stage * 2 * lat
            self.gather_s_per_token = moe_stage * 2 * (group - 1) / group * msg_per_seq / bw
        if pp > 1:
            bw, lat = fabric.group(tp * dp * pp)
            self.hop_fixed_s = (pp - 1) * lat
            self.hop_s_per_seq = (pp - 1) * msg_per_seq / bw
        else:
            self.hop_fixed_s = self.hop_s_per_seq = 0.0
        self.overhead = options.step_overhead_s

    def attn_flops(self, context: float) -> float:
        """Attention FLOPs of one sequence at ``context`` tokens on one GPU of a stage."""
        flops = (self.attn_ctx + self.attn_mla) * context + self.attn_fixed
        for per, window in self.sliding:
            flops += per * min(context, window)
        return flops

    def attn_time(self, context: float) -> float:
        """Seconds of attention compute of one sequence at ``context`` on one GPU of a stage (per kind)."""
        other = self.attn_flops(context) - self.attn_mla * context
        return other / self.r_attn + self.attn_mla * context / self.r_attn_mla_decode

    def tile_factor(self, tokens: float, distinct: float) -> float:
        """Rows computed / rows needed of the expert GEMMs, ``max(tile, m + tile / 2) / m`` with ``m`` the mean
        tokens per expert: at least one tile per expert, and the last tile of an expert half empty on average,
        because the experts' token counts spread around the mean (routing is never uniform). Padding the mean
        itself (``ceil(m / tile) x tile``) would make throughput drop each time the mean crosses a tile."""
        if not distinct or tokens <= 0:
            return 1.0
        m = tokens * self.k / distinct
        return max(self.tile, m + self.tile / 2) / m

    def launch_s(self, rank_batch: float, kernels: float, work_s: float) -> tuple[float, bool]:
        """``(seconds added by kernel launches, CUDA graph used)`` for a stage of ``kernels`` kernels.

        In a graph each kernel adds ``kernel_launch_s`` to the GPU timeline; eagerly the CPU issues each
        in ``eager_kernel_launch_s`` while the GPU runs ahead, so a stage takes at least
        ``kernels x eager`` (and never less than it would in a graph).
        """
        o = self.options
        graph_time = kernels * o.kernel_launch_s
        if rank_batch <= self.graph_max:
            return graph_time, True
        return max(graph_time, kernels * o.eager_kernel_launch_s - work_s), False

    def parts(self, batch: float, context: int) -> tuple[float, ...]:
        """``(time, memory, compute, communication, overhead, m, D, dense, experts, kv, state, flops,
        launch, step overhead, overlap saved, graph, kernels)``.

        Times in seconds per token cycle; bytes and FLOPs per GPU per token cycle.
        """
        pp = self.pp
        b = batch / self.dp if batch > self.dp else 1.0
        m = pp if b >= pp else b
        rank_mb = b / m
        tokens_mb = batch / m if batch > self.dp else batch
        d = distinct_experts(self.e, self.k, tokens_mb) if self.e else 0.0
        experts = self.expert_read * d / self.e if self.e else 0.0
        kv = rank_mb * self.geometry.bytes_per_sequence_per_gpu(context)
        state = rank_mb * 2 * self.state_gpu
        mem_bytes = self.dense_read + experts + kv + state
        t_mem = mem_bytes / self.bw
        fd = self.f_dense * rank_mb
        fe = self.f_exp * tokens_mb
        fa = self.attn_flops(context) * rank_mb
        t_exp = fe / self.r_exp * (self.tile_factor(tokens_mb, d) if self.e else 1.0) * self.hot
        t_comp = fd / self.r_dense + t_exp + self.attn_time(context) * rank_mb
        comm_tp = self.tp_ar_fixed_s + self.tp_ar_s_per_seq * rank_mb
        comm_ep = (
            (self.a2a_fixed_s + self.a2a_s_per_token * rank_mb * self.hot if self.a2a_s_per_token else 0.0)
            + (self.gather_fixed_s + self.gather_s_per_token * tokens_mb if self.gather_s_per_token else 0.0)
            + (self.etp_fixed_s + self.etp_s_per_token * rank_mb * self.hot if self.etp_s_per_token else 0.0)
        )
        tbo = self.overlap and rank_mb >= 2
        kernels = self.kernels_stage
        roof = max(t_mem, t_comp)
        launch, graph = self.launch_s(rank_mb, kernels, roof)
        work = roof + launch
        stage_serial = work + comm_tp + comm_ep
        if tbo:
            # two micro-batches launch every kernel twice; an operator enables it where it pays (SGLang's
            # --enable-two-batch-overlap is set for large-batch EP decode), so the faster of the two
            tbo_work = roof + self.launch_s(rank_mb, 2 * self.kernels_stage, roof)[0]
            stage = min(overlapped(tbo_work, comm_ep) + comm_tp, stage_serial)
        else:
            stage = stage_serial
        hops = self.hop_fixed_s + self.hop_s_per_seq * rank_mb if pp > 1 else 0.0
        time = pp * stage + hops + self.overhead
        if tbo:
            # A rank with one sequence cannot split it in two: a larger batch never steps faster than that
            # serial step (keeps TPOT non-decreasing in the batch).
            time = max(time, self.parts(self.dp * m, context)[0])
        return (
            time,
            pp * t_mem,
            pp * t_comp,
            pp * (comm_tp + comm_ep) + hops,
            self.overhead + pp * launch,
            m,
            d,
            pp * self.dense_read,
            pp * experts,
            pp * kv,
            pp * state,
            pp * (fd + fe + fa),
            pp * launch,
            self.overhead,
            max(0.0, pp * stage_serial + hops + self.overhead - time),
            graph,
            pp * kernels,
        )

    def time(self, batch: float, context: int) -> float:
        """TPOT in seconds at ``batch`` sequences and ``context`` tokens (no prefill sharing the GPUs)."""
        return self.parts(batch, context)[0]

    def assumptions(self) -> tuple[str, ...]:
        """The step's assumption texts (built once: the model is read-only)."""
        if self.notes is None:
            self.notes = self._assumptions()
        return self.notes

    def _assumptions(self) -> tuple[str, ...]:
        o, acc, perf = self.options, self.accelerator, self.perf
        notes = [
            f"Decode step = max(memory time, compute time) + communication + {o.step_overhead_s * 1e3:g} ms overhead; "
            f"memory at {acc.hbm_bandwidth_tbps:g} TB/s x {o.memory_bandwidth_efficiency:g}, compute at "
            f"{o.compute_efficiency:g} of dense peak (dense weights at the {self.dense_fmt} rate, experts at "
            f"{self.expert_fmt}, attention at bf16).",
            *perf.notes,
        ]
        e_eff = grouped_gemm_efficiency(acc, self.expert_fmt, o)
        if perf.is_moe and e_eff != o.compute_efficiency:
            notes.append(
                f"Expert (grouped) GEMMs at {e_eff:.2g} of the {self.expert_fmt} peak on Blackwell (FlashInfer's NVFP4 "
                "masked grouped GEMM at DeepSeek-V3's shapes, flashinfer#2503; FP8 1.9x slower, LMSYS GB200 Part II; "
                "BF16 MegaMoE at EP8, flashinfer#4386)."
            )
        mla_fmt, mla_eff = mla_decode_efficiency(acc, self.kv_dtype, MLA_ATTENTION_EFFICIENCY)
        if self.attn_mla and (mla_fmt, mla_eff) != ("bf16", MLA_ATTENTION_EFFICIENCY):
            notes.append(
                f"MLA decode attention at {mla_eff:.2g} of the {mla_fmt} peak on Blackwell with a {self.kv_dtype} KV "
                "cache (TRT-LLM-gen MLA decode at DeepSeek-V3's shapes, flashinfer#2743); prefill MLA keeps FlashMLA's "
                f"{MLA_ATTENTION_EFFICIENCY:g} of bf16."
            )
        if self.eplb:
            notes.append(
                f"EPLB with {self.layout.redundant_experts} redundant experts: the busiest of the {self.layout.ep} "
                f"expert-parallel ranks receives {self.hot:.2f}x the mean routed tokens (eplb_imbalance "
                f"{o.eplb_imbalance:g}; the default 0.11 is TensorRT-LLM tech blog 4, Table 1: 0.109-0.115 with EPLB, "
                "DeepSeek-R1 decode on 32 GB200), so its expert GEMMs and all-to-all set the step."
            )
        if perf.is_moe:
            routing = "" if self.eplb else " (uniform routing, no EPLB)"
            notes.append(
                f"Experts read per step: E x (1 - (1 - k/E)^tokens) distinct experts per MoE layer{routing}; all "
                "layers counted as MoE layers for communication."
            )
        notes.extend(self.fabric.notes(acc, o))
        if self.pp > 1:
            notes.append(
                f"Pipeline: {self.pp} stages, min(pp, sequences per rank) micro-batches in flight; a token crosses "
                "every stage, so TPOT = pp x stage time (idle stages are the bubble)."
            )
        if self.dp > 1:
            notes.append(
                f"Data-parallel attention: {self.dp} ranks each hold batch / dp sequences and a full copy of the "
                "dense weights (split by tp); experts are shared by all ranks."
            )
        return tuple(notes)


def check_step(batch: Any, context: Any, kv_cache_dtype: str, options: ThroughputOptions) -> None:
    """Raise ``EngineInputError`` for a bad batch, context, KV dtype or option (all problems at once)."""
    errors = options.errors()
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        errors["batch"] = ["Must be a positive whole number of sequences."]
    if isinstance(context, bool) or not isinstance(context, int) or context < 1:
        errors["context_tokens"] = ["Must be a positive whole number of tokens."]
    if kv_cache_dtype not in DTYPE_BYTES:
        errors["kv_cache_dtype"] = [f"Unknown KV cache dtype {kv_cache_dtype!r}."]
    if errors:
        raise EngineInputError(errors)


def decode_model(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    options: ThroughputOptions = DEFAULT_OPTIONS,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
) -> DecodeModel:
    """A ``DecodeModel`` memoised per model on the other inputs (it is read-only once built): a
    router or a page timing the same deployments at many batches and prompts builds each once
    (``bench/bench_route.py``: three builds per estimate before)."""
    key = ("decode_model", accelerator, layout, kv_cache_dtype, options, weight_format, include_scale_overhead)
    return model_constants(model).text(
        key,
        lambda: DecodeModel(model, accelerator, layout, kv_cache_dtype, options, weight_format, include_scale_overhead),
    )


def decode_step(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout | None = None,
    batch: int = 1,
    context_tokens: int = 2048,
    *,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    options: ThroughputOptions = DEFAULT_OPTIONS,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
) -> DecodeStep:
    """Time of one decode step for ``batch`` sequences at ``context_tokens`` on one replica.

    Raises ``EngineInputError`` for a bad batch, context, KV dtype, option or layout (the same layout
    rules as ``size()``). Memory admission is not checked here: see ``throughput.estimate``.
    """
    layout = layout or Layout()
    check_step(batch, context_tokens, kv_cache_dtype, options)
    check_layout(model, layout)
    dm = decode_model(model, accelerator, layout, kv_cache_dtype, options, weight_format, include_scale_overhead)
    return step_of(dm, batch, context_tokens)


def step_of(dm: DecodeModel, batch: int, context_tokens: int) -> DecodeStep:
    """The ``DecodeStep`` of ``dm`` at ``batch`` sequences and ``context_tokens``, inputs already checked
    (``decode_step()`` checks them; ``estimate()`` has, once for all its steps)."""
    layout = dm.layout
    t, mem, comp, comm, over, m, d, dense, experts, kv, state, flops, launch, step_o, saved, graph, kern = dm.parts(
        batch, context_tokens
    )
    return DecodeStep(
        model=dm.model.name,
        accelerator=dm.accelerator.name,
        layout=layout,
        batch=batch,
        context_tokens=context_tokens,
        kv_cache_dtype=dm.kv_dtype,
        time_s=t,
        memory_time_s=mem,
        compute_time_s=comp,
        communication_time_s=comm,
        overhead_s=over,
        bound="memory" if mem >= comp else "compute",
        micro_batches=m,
        pipeline_bubble_fraction=1 - m / layout.pp,
        distinct_experts=d,
        dense_weight_bytes_per_gpu=dense,
        expert_bytes_per_gpu=experts,
        kv_bytes_per_gpu=kv,
        state_bytes_per_gpu=state,
        flops_per_gpu=flops,
        dense_compute_format=dm.dense_fmt,
        expert_compute_format=dm.expert_fmt,
        tokens_per_s=batch / t,
        assumptions=dm.assumptions(),
        launch_time_s=launch,
        step_overhead_s=step_o,
        overlap_saved_s=saved,
        cuda_graph=bool(graph),
        kernels_per_step=int(kern),
    )
