"""Tunable factors of the throughput model, their documented defaults, and the hardware rates they scale.

Pure Python, no Django. Units: seconds (``_s``), bytes per second, FLOP/s, GB/s (decimal, 1e9 bytes)
where a name ends in ``_gbps``. Sources for every default: docs/throughput.md, "Efficiency factors".

* ``memory_bandwidth_efficiency`` 0.8: the fraction of peak HBM bandwidth that decode kernels
  (GEMV-shaped weight reads, paged attention, state updates) sustain. MooreThreads SimuMax's
  spec-based H100 config (``configs/system/h100_nvlink.json``) uses 0.85 for memory-bound
  kernels; 0.8 leaves room for the small kernels between them.
* ``compute_efficiency`` 0.6: model FLOPs utilisation of dense tensor-core peak. SimuMax's H100
  config: matmul 0.70, fp8 matmul 0.65, grouped (MoE) matmul 0.60, attention forward 0.72.
* ``link_efficiency`` 0.7: fraction of the per-direction link or NIC bandwidth a collective
  achieves (SimuMax: inter-node 0.7; NCCL all-reduce 0.55 and all-to-all 0.5 of the 900 GB/s
  bidirectional NVLink figure, i.e. about 0.7 of the 450 GB/s one direction).
* ``network_gbps`` 50: scale-out bandwidth per GPU, one direction (one 400 Gb/s NDR InfiniBand
  or 400 GbE NIC per GPU, as in DGX/HGX H100 and B200 systems; SimuMax inter-node 50 GB/s).
* ``link_latency_s`` 8 us and ``network_latency_s`` 35 us per collective (SimuMax: NVLink
  all-reduce 8 us, InfiniBand 35 us).
* ``step_overhead_s`` 0.3 ms per forward step: CUDA-graph replay, input preparation and sampling
  (top-k/top-p, about ten small kernels) left on the critical path once the CPU scheduler runs one
  step ahead (SGLang's overlap scheduler, v0.4 blog 2024-12-04; vLLM's async scheduling). The
  kernels of the layers are counted one by one (``kernel_launch_s``), no longer folded in here.
* ``kernel_launch_s`` 3 us per kernel inside a CUDA graph, ``eager_kernel_launch_s`` 8 us per
  kernel launched eagerly: NVIDIA Developer Blog "Getting Started with CUDA Graphs" (A. Gray,
  2019): short kernels took 3.4 us each in a graph, 3.8 us back to back in a stream and 9.6 us with
  a launch each; issue 13 / the seeds: eager PyTorch launches cost 5-10 us per kernel. Charged per
  kernel on top of its roofline time (launch gap, ramp-up and tail a roofline does not see).
* ``cuda_graphs`` True and ``cuda_graph_max_batch``: decode steps of at most that many sequences per
  rank replay a captured graph, larger ones launch eagerly. ``None`` takes SGLang 0.5.23's default
  (``arg_groups/memory_hook.py``, by GPU memory: < 20 GiB 8; < 35 GiB 48 (160 at tp >= 4); < 60 GiB
  32 (160); < 90 and < 160 GiB 256 (512 at tp >= 4); larger 512), which matches vLLM 0.11.0's cap
  (``config/scheduler.py``: ``cuda_graph_sizes = [min(2 x max_num_seqs, 512)]``).
* ``overlap`` True: engines that run expert parallelism with DeepEP overlap the all-to-all with
  compute (SGLang two-batch overlap, ``--enable-two-batch-overlap``; DeepEP's hook-based
  overlap); the model then hides the all-to-all behind the step's work when each rank holds at
  least two sequences to split.
* ``gemm_tile_tokens`` 64: rows of one grouped-GEMM tile (DeepGEMM's masked decode layout and
  CUTLASS grouped GEMMs use BLOCK_M 64-128): an expert that receives ``m`` tokens computes
  ``ceil(m / 64) x 64`` rows, so few tokens per expert waste tensor-core work (the efficiency of
  the expert GEMMs is not flat: ``m / (ceil(m / 64) x 64)`` of ``compute_efficiency``).
* ``scaleup_domain_gpus``: GPUs that share the scale-up link (NVLink/Infinity Fabric), to override
  the SKU's own (``Accelerator.scaleup_domain``: its ``scaleup_domain_gpus``, else
  ``gpus_per_node``). A GB300 NVL72 rack is one 72-GPU domain of 4-GPU trays; the catalogue says so.
* ``prefill_chunk_tokens``: chunked-prefill size; defaults to the runtime's per-step token budget
  (vLLM's ``max_num_batched_tokens``: 8192 on GPUs of 70 GiB and more, else 2048).
* ``eplb_imbalance`` 0.11: with EPLB's redundant experts (``Layout.redundant_experts`` > 0) the busiest
  expert-parallel rank still receives ``1 + eplb_imbalance`` times the mean routed tokens, and every decode
  step waits for it at the combine. TensorRT-LLM tech blog 4 ("Scaling Expert Parallelism in TensorRT-LLM,
  Part 1", Table 1: DeepSeek-R1 decode on 32 GB200, local batch 256, imbalance ratio ``(max - mean) / mean``
  of the tokens each rank receives, averaged over layers and iterations): 0.109 with EPLB at EP32 and 288
  slots, 0.115 at EP36 and 288 slots (1.564 without EPLB). Layouts without redundant experts keep uniform
  routing: the no-EPLB figure is one dataset's, which the post calls dataset-sensitive.
* ``compute_format``: which tensor-core rate the weights run at (``bf16``, ``fp8``, ``fp4``); ``None``
  picks it from the weight format (``compute_rate_format``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import EngineInputError
from ..gpus import is_datacentre_blackwell
from ..limits import (
    MAX_BATCH,
    MAX_CONTEXT_TOKENS,
    MAX_GPUS,
    MAX_RATE,
    MAX_RATIO,
    MAX_STEP_SECONDS,
    MIN_EFFICIENCY,
    MIN_RATE,
    int_error,
)
from ..spec import Accelerator
from ..units import GB

COMPUTE_FORMATS: tuple[str, ...] = ("bf16", "fp8", "fp4")

DEFAULT_MEMORY_BANDWIDTH_EFFICIENCY: float = 0.8
DEFAULT_COMPUTE_EFFICIENCY: float = 0.6
DEFAULT_LINK_EFFICIENCY: float = 0.7
DEFAULT_NETWORK_GBPS: float = 50.0
DEFAULT_LINK_LATENCY_S: float = 8e-6
DEFAULT_NETWORK_LATENCY_S: float = 35e-6
DEFAULT_STEP_OVERHEAD_S: float = 3e-4
DEFAULT_KERNEL_LAUNCH_S: float = 3e-6
DEFAULT_EAGER_KERNEL_LAUNCH_S: float = 8e-6
DEFAULT_GEMM_TILE_TOKENS: int = 64
#: (max - mean) / mean of the routed tokens per EP rank with EPLB: TensorRT-LLM tech blog 4, Table 1 (0.109 at
#: EP32, 0.115 at EP36, both 288 slots for DeepSeek-R1's 256 experts), their mean to two places.
DEFAULT_EPLB_IMBALANCE: float = 0.11
#: Scale-up bandwidth assumed when a SKU states none (``interconnect_gbps == 0``): PCIe Gen4 x16,
#: 64 GB/s bidirectional, the slowest path any multi-GPU server has.
FALLBACK_INTERCONNECT_GBPS: float = 64.0

#: Weight formats whose matmuls run at each tensor-core rate when ``compute_format`` is ``None``.
#: fp8/int8 checkpoints are W8A8; NVFP4 is W4A4; MXFP4 is W4A8 (Kimi K3 ships MXFP4 weights with
#: MXFP8 activations; vLLM/FlashInfer's MXFP4 MoE kernels on Blackwell run mxfp4 x mxfp8);
#: int4/int2 (GPTQ/AWQ-style) are weight-only and run at the bf16 rate.
_WANTS: dict[str, str] = {
    "bf16": "bf16",
    "fp16": "bf16",
    "fp8": "fp8",
    "int8": "fp8",
    "mxfp4": "fp8",
    "nvfp4": "fp4",
    "int4": "bf16",
    "int2": "bf16",
}


@dataclass(frozen=True, slots=True)
class ThroughputOptions:
    """Efficiency factors and fabric figures of the throughput model (defaults documented above)."""

    memory_bandwidth_efficiency: float = DEFAULT_MEMORY_BANDWIDTH_EFFICIENCY
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY
    link_efficiency: float = DEFAULT_LINK_EFFICIENCY
    network_gbps: float = DEFAULT_NETWORK_GBPS
    scaleup_domain_gpus: int | None = None
    link_latency_s: float = DEFAULT_LINK_LATENCY_S
    network_latency_s: float = DEFAULT_NETWORK_LATENCY_S
    step_overhead_s: float = DEFAULT_STEP_OVERHEAD_S
    prefill_chunk_tokens: int | None = None
    compute_format: str | None = None
    kernel_launch_s: float = DEFAULT_KERNEL_LAUNCH_S
    eager_kernel_launch_s: float = DEFAULT_EAGER_KERNEL_LAUNCH_S
    cuda_graphs: bool = True
    cuda_graph_max_batch: int | None = None
    overlap: bool = True
    gemm_tile_tokens: int = DEFAULT_GEMM_TILE_TOKENS
    eplb_imbalance: float = DEFAULT_EPLB_IMBALANCE

    def errors(self) -> dict[str, list[str]]:
        """Field errors (empty when every option is usable); a fresh dict the caller may extend.

        Memoised per options object (frozen; kept alive by the memo, so its id is not reused): every
        estimate checks its options several times, mostly the same ``DEFAULT_OPTIONS``."""
        hit = _ERRORS_MEMO.get(id(self))
        if hit is None or hit[0] is not self:
            if len(_ERRORS_MEMO) >= 256:
                _ERRORS_MEMO.clear()
            hit = _ERRORS_MEMO[id(self)] = (self, self._errors())
        return {name: list(messages) for name, messages in hit[1].items()}

    def _errors(self) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        for name in ("memory_bandwidth_efficiency", "compute_efficiency", "link_efficiency"):
            value = getattr(self, name)
            if not _number(value) or not MIN_EFFICIENCY <= value <= 1:
                errors[name] = [f"Must be a fraction from {MIN_EFFICIENCY:g} to 1."]
        if not _number(self.network_gbps) or not MIN_RATE <= self.network_gbps <= MAX_RATE:
            errors["network_gbps"] = [f"Must be a number of GB/s from {MIN_RATE:g} to {MAX_RATE:,g}."]
        for name in (
            "link_latency_s",
            "network_latency_s",
            "step_overhead_s",
            "kernel_launch_s",
            "eager_kernel_launch_s",
        ):
            value = getattr(self, name)
            if not _number(value) or not 0 <= value <= MAX_STEP_SECONDS:
                errors[name] = [f"Must be a number of seconds from 0 to {MAX_STEP_SECONDS:g}."]
        if not _number(self.eplb_imbalance) or not 0 <= self.eplb_imbalance <= MAX_RATIO:
            errors["eplb_imbalance"] = [f"Must be a ratio from 0 to {MAX_RATIO:g}."]
        for name in ("cuda_graphs", "overlap"):
            if not isinstance(getattr(self, name), bool):
                errors[name] = ["Must be true or false."]
        for name, high in (
            ("scaleup_domain_gpus", MAX_GPUS),
            ("prefill_chunk_tokens", MAX_CONTEXT_TOKENS),
            ("cuda_graph_max_batch", MAX_BATCH),
            ("gemm_tile_tokens", MAX_BATCH),
        ):
            value = getattr(self, name)
            if value is not None and int_error(value, 1, high):
                errors[name] = [int_error(value, 1, high)]
        if self.compute_format is not None and self.compute_format not in COMPUTE_FORMATS:
            errors["compute_format"] = [f"Unknown compute format; use one of {', '.join(COMPUTE_FORMATS)}."]
        return errors

    def check(self) -> None:
        """Raise ``EngineInputError`` unless every option is usable."""
        errors = self.errors()
        if errors:
            raise EngineInputError(errors)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_ERRORS_MEMO: dict[int, tuple[ThroughputOptions, dict[str, list[str]]]] = {}
DEFAULT_OPTIONS = ThroughputOptions()


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


#: Grouped (MoE expert) GEMM efficiency on NVIDIA Blackwell (SM100: B200, GB200, B300, GB300), as a fraction
#: of the dense tensor-core peak of the rate the experts compute at, where the Hopper figure is SimuMax's
#: grouped matmul 0.60 (``compute_efficiency``). Measured, not fitted:
#:
#: * ``fp4`` 0.40: FlashInfer's CuTe DSL NVFP4 masked grouped GEMM (``grouped_gemm_nt_masked``, the kernel SGLang
#:   runs NVFP4 MoE decode with on GB200: LMSYS GB200 Part II, 2025-09-25), benchmarked at DeepSeek-V3's expert
#:   shapes in flashinfer-ai/flashinfer#2503 (merged 2026-02-05): 4 groups of 2,048 rows, gate-up n 4,096 k 7,168:
#:   3,846 TFLOPS, down n 7,168 k 2,048: 3,143 TFLOPS (1,536 rows: 3,851 / 3,045). Time-weighted over the two
#:   GEMMs (gate-up does 2/3 of the FLOPs): 3,588 TFLOPS = 0.40 of B200's 9,000 dense FP4 (the PR names no GPU;
#:   B200 assumed, the GPU FlashInfer's Blackwell kernels are benchmarked on; on a GB200 it would be 0.36).
#: * ``fp8`` 0.42: the same curve through LMSYS GB200 Part II's kernel comparison ("GEMM is up to 1.9x faster" in
#:   NVFP4 than in FP8, MoE gate-up / down and o_proj): FP8 at 3,588 / 1.9 = 1,888 TFLOPS = 0.42 of 4,500.
#: * ``bf16`` 0.39: FlashInfer's SM100 BF16 CuTe DSL MegaMoE (flashinfer-ai/flashinfer#4386, merged 2026-08-19,
#:   commit d3ff85a96; ``moe_ep_benchmark`` 2026-08-10, ``e2e_pipelined`` p50), 8 x B200 at EP8, DeepSeek-V3's
#:   geometry (256 experts, top-8, hidden 7,168, intermediate 2,048), 8,192 tokens per rank (2,048 rows per local
#:   expert): 6,504.4 us for 2 x 8,192 x 8 x 7,168 x 3 x 2,048 = 5.772e12 FLOPs = 887 TFLOPS = 0.39 of 2,250. The
#:   timed region is the whole MoE layer (dispatch, gate-up, down, combine, pipelined), so the GEMMs alone are at
#:   least this efficient. The same table's MXFP8 column, 3,288.5 us = 1,755 TFLOPS = 0.39 of 4,500, agrees with
#:   the ``fp8`` figure within 7%.
#:
#: All are taken relative to ``DEFAULT_COMPUTE_EFFICIENCY`` so that moving ``compute_efficiency`` (sensitivity)
#: moves them too. The curve flattens from ~1,000 rows per group (3,526 / 2,569 TFLOPS at 1,024), the decode
#: regime of wide-EP DeepSeek (768-1,408 sequences per GPU over 48 ranks: 1,000-1,900 rows per expert); smaller
#: groups are the tile model's (``gemm_tile_tokens``) business.
BLACKWELL_GROUPED_GEMM_EFFICIENCY: dict[str, float] = {"fp4": 0.40, "fp8": 0.42, "bf16": 0.39}


def grouped_gemm_efficiency(accelerator: Accelerator, rate_format: str, options: ThroughputOptions) -> float:
    """Efficiency of the MoE expert (grouped) GEMMs at ``rate_format`` on ``accelerator``: on Blackwell the
    measured ``BLACKWELL_GROUPED_GEMM_EFFICIENCY`` scaled by ``compute_efficiency / DEFAULT_COMPUTE_EFFICIENCY``,
    elsewhere ``compute_efficiency``."""
    measured = BLACKWELL_GROUPED_GEMM_EFFICIENCY.get(rate_format) if is_datacentre_blackwell(accelerator.name) else None
    if measured is None:
        return options.compute_efficiency
    if options.compute_efficiency == DEFAULT_COMPUTE_EFFICIENCY:
        return measured
    return min(1.0, options.compute_efficiency * measured / DEFAULT_COMPUTE_EFFICIENCY)


#: Absorbed MLA decode attention on NVIDIA Blackwell (SM100: B200, GB200, B300, GB300), by KV-cache dtype, as
#: ``(rate the kernel computes at, fraction of that dense peak)``, where Hopper keeps FlashMLA's 0.67 of bf16
#: (``decode.MLA_ATTENTION_EFFICIENCY``). Measured, not fitted: flashinfer-ai/flashinfer#2743 (merged 2026-03-27,
#: commit 31b63bc3d; measured 2026-03-11 on "NVIDIA Blackwell (SM100a)", B200 assumed as for #2503), DeepSeek-V3
#: MLA (128 heads, kv_lora_rank 512, rope 64), q_len 1, fixed length (every sequence 8,192 tokens), page 32,
#: CUPTI with CUDA graphs and a cold L2, the TRT-LLM-gen kernel (``trtllm_batch_decode_with_kv_cache_mla``,
#: SGLang's ``trtllm_mla`` backend on Blackwell; FlashInfer's CuTe DSL kernel is 3-5% faster at this batch):
#:
#: * FLOPs of one call: 2 x 128 heads x (2 x 512 + 64) x 256 sequences x 8,192 tokens = 5.841e11 (the FLOP
#:   count of ``benchmarks/bench_trtllm_gen_mla.py`` and of this model's MLA term).
#: * ``bf16`` KV, batch 256: 0.5106 ms: 1,144 TFLOPS = 0.51 of B200's 2,250 dense bf16 (batch 128: 0.2566 ms,
#:   1,138 TFLOPS: saturated). The kernel also streams 2.42 GB of KV (4.73 TB/s); the KV bytes stay in the
#:   step's memory term as on Hopper.
#: * ``fp8`` KV (FP8 query and KV, both attention GEMMs in FP8), batch 256: 0.2825 ms: 2,068 TFLOPS = 0.46 of
#:   B200's 4,500 dense fp8 (0.92 of its bf16 peak, which only the FP8 tensor-core rate allows).
#:
#: A kernel constant like the Hopper figure: not moved by ``compute_efficiency``. Other KV dtypes (int8) keep
#: the Hopper figure, for want of a measurement.
BLACKWELL_MLA_DECODE_EFFICIENCY: dict[str, tuple[str, float]] = {"bf16": ("bf16", 0.51), "fp8": ("fp8", 0.46)}
#: KV-cache dtypes by the MLA decode kernel family they run (fp16 runs the bf16 kernel: #2743's BF16/FP16).
_MLA_KV_FAMILY: dict[str, str] = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}


def mla_decode_efficiency(accelerator: Accelerator, kv_cache_dtype: str, hopper: float) -> tuple[str, float]:
    """``(rate format, efficiency)`` of the absorbed MLA decode attention on ``accelerator`` with a
    ``kv_cache_dtype`` cache: on data-centre Blackwell the measured ``BLACKWELL_MLA_DECODE_EFFICIENCY`` of its KV
    dtype (fp8 at the fp8 rate when the SKU has one), elsewhere (and for other dtypes) ``hopper`` of bf16."""
    family = _MLA_KV_FAMILY.get(kv_cache_dtype)
    if family is None or not is_datacentre_blackwell(accelerator.name):
        return "bf16", hopper
    rate, efficiency = BLACKWELL_MLA_DECODE_EFFICIENCY[family]
    if rate == "fp8" and not accelerator.fp8_tflops:
        return "bf16", hopper
    return rate, efficiency


def cuda_graph_max_batch(accelerator: Accelerator, tp: int, options: ThroughputOptions) -> int:
    """Largest decode batch per rank that replays a CUDA graph (0 when graphs are off).

    ``options.cuda_graph_max_batch``, else SGLang 0.5.23's default by GPU memory
    (``sglang/srt/arg_groups/memory_hook.py``), the same 512 cap as vLLM 0.11.0 on large GPUs.
    """
    if not options.cuda_graphs:
        return 0
    if options.cuda_graph_max_batch is not None:
        return options.cuda_graph_max_batch
    gib = accelerator.hbm_gb * 1e9 / 2**30
    if gib < 20:
        return 8
    if gib < 35:
        return 160 if tp >= 4 else 48
    if gib < 60:
        return 160 if tp >= 4 else 32
    if gib < 160:
        return 512 if tp >= 4 else 256
    return 512


def compute_rate_format(accelerator: Accelerator, weight_format: str, override: str | None = None) -> str:
    """The tensor-core rate (``bf16``/``fp8``/``fp4``) matmuls on ``weight_format`` weights run at.

    The wanted rate (``override``, else the table above) falls back to the next wider format the SKU
    has: fp4 -> fp8 -> bf16 (an A100 has neither fp8 nor fp4 and dequantises to bf16).
    """
    wanted = override or _WANTS.get(weight_format, "bf16")
    if wanted == "fp4" and accelerator.fp4_tflops:
        return "fp4"
    if wanted in ("fp4", "fp8") and accelerator.fp8_tflops:
        return "fp8"
    return "bf16"


def peak_flops(accelerator: Accelerator, rate_format: str) -> float:
    """Dense peak FLOP/s of ``accelerator`` at ``rate_format`` (TFLOPS x 1e12)."""
    tflops = {"fp4": accelerator.fp4_tflops, "fp8": accelerator.fp8_tflops}.get(rate_format) or accelerator.bf16_tflops
    return float(tflops) * 1e12


class Fabric:
    """Per-direction bandwidths (bytes/s, after ``link_efficiency``) and latencies of one SKU.

    ``group(size)`` gives the bandwidth and latency of a collective over ``size`` GPUs: the scale-up
    link inside the domain, the network (one NIC per GPU) when the group spans domains.
    """

    __slots__ = ("domain", "link_bw", "link_lat", "link_stated", "net_bw", "net_lat")

    def __init__(self, accelerator: Accelerator, options: ThroughputOptions):
        gbps = accelerator.interconnect_gbps
        self.link_stated = bool(gbps and gbps > 0)
        if not self.link_stated:
            gbps = FALLBACK_INTERCONNECT_GBPS
        self.link_bw = gbps / 2 * GB * options.link_efficiency
        self.net_bw = options.network_gbps * GB * options.link_efficiency
        self.link_lat = options.link_latency_s
        self.net_lat = options.network_latency_s
        # The SKU's own fabric (72 for an NVL72 rack) unless the options override it.
        self.domain = options.scaleup_domain_gpus or accelerator.scaleup_domain

    def group(self, size: int) -> tuple[float, float]:
        """``(bytes_per_s, latency_s)`` of a collective over ``size`` GPUs (slowest link it crosses)."""
        if size <= self.domain:
            return self.link_bw, self.link_lat
        return min(self.net_bw, self.link_bw), self.net_lat

    def all_to_all_s_per_byte(self, size: int) -> float:
        """Seconds per byte a GPU sends in an all-to-all over ``size`` ranks (intra and inter overlap)."""
        if size <= 1:
            return 0.0
        if size <= self.domain:
            return 1.0 / self.link_bw
        intra = (self.domain - 1) / (size - 1)
        return max(intra / self.link_bw, (1.0 - intra) / self.net_bw)

    def all_to_all_normal_s_per_byte(self, size: int, top_k: int) -> float:
        """Seconds per byte of one token copy in a prefill (DeepEP "normal") all-to-all over ``size`` ranks.

        DeepEP's normal kernels send a token once per remote scale-up domain over the network and fan it
        out over NVLink there (DeepEP README, "asymmetric-domain bandwidth forwarding"), so a token with
        ``top_k`` experts spread uniformly over ``n`` domains crosses the network
        ``(n - 1) x (1 - (1 - 1/n)^top_k)`` times instead of once per remote expert.
        """
        if size <= self.domain:
            return self.all_to_all_s_per_byte(size)
        n = size / self.domain
        remote = (n - 1) * (1 - (1 - 1 / n) ** top_k)
        k = max(1, top_k)
        return max(1.0 / self.link_bw, remote / k / self.net_bw)

    def notes(self, accelerator: Accelerator, options: ThroughputOptions) -> tuple[str, ...]:
        link = (
            f"scale-up link {accelerator.interconnect_gbps:g} GB/s bidirectional"
            if self.link_stated
            else f"scale-up link not stated: assumed {FALLBACK_INTERCONNECT_GBPS:g} GB/s bidirectional (PCIe Gen4 x16)"
        )
        return (
            f"Fabric: {link}, half of it one way, x {options.link_efficiency:g} efficiency, across a "
            f"{self.domain}-GPU scale-up domain; beyond it {options.network_gbps:g} GB/s per GPU one way "
            f"(network). Collective latency {options.link_latency_s * 1e6:g} us in the domain, "
            f"{options.network_latency_s * 1e6:g} us across it.",
        )
