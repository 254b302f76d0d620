"""The throughput model against published measurements (tests/fixtures/throughput_anchors.json, issue 13).

Each test reads one anchor from the fixture (its source, setup and value, collected independently of the
model: docs/throughput_anchors.md), runs the model on the catalogue's datasheet rows at that setup and
asserts the ratio measured / predicted within a stated band. The model's constants come from their own
sources (docs/throughput.md, "Efficiency factors"), not from these anchors. Goal: +-25%
(``TOLERANCE``); an anchor the model cannot express exactly asserts a wider band and says why.
Ratios at the time of writing are in docs/throughput.md, "Published anchors".
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.sizing import size
from planner.engine.spec import Layout
from planner.engine.throughput.decode import MLA_ATTENTION_EFFICIENCY, decode_step
from planner.engine.throughput.estimate import IDLE_TTFT_DEFINITION, TTFT_DEFINITION, estimate
from planner.engine.throughput.options import (
    BLACKWELL_GROUPED_GEMM_EFFICIENCY,
    BLACKWELL_MLA_DECODE_EFFICIENCY,
    DEFAULT_EPLB_IMBALANCE,
    DEFAULT_OPTIONS,
    ThroughputOptions,
    grouped_gemm_efficiency,
    mla_decode_efficiency,
)
from planner.engine.throughput.prefill import prefill

ANCHORS = {a["id"]: a for a in json.loads((Path(__file__).parents[1] / "fixtures/throughput_anchors.json").read_text())}
H100 = reference.accelerator("h100-sxm-80gb")
H200 = reference.accelerator("h200-141gb")
B200 = reference.accelerator("b200-192gb")
GB300 = reference.accelerator("gb300-288gb")
GB200 = reference.accelerator("gb200-186gb")
#: +-25%: the goal of issue 13. Sources state hardware, layout, precision and lengths for these anchors, so the
#: remaining error is the model's (kernel fusion differences between engines, clocks, routing imbalance).
TOLERANCE = 1.25


def ratio(anchor_id: str, predicted: float) -> float:
    return ANCHORS[anchor_id]["value"] / predicted


def within(anchor_id: str, predicted: float, factor: float = TOLERANCE) -> bool:
    r = ratio(anchor_id, predicted)
    return 1 / factor <= r <= factor


def tpot_ms(model: str, acc, layout: Layout, context: int, **kw) -> float:
    return decode_step(reference.model(model), acc, layout, 1, context, **kw).time_s * 1e3


def test_qwen3_235b_tpot_at_one_request_on_8_b200():
    """SGLang v0.5.8.post1, 8 x B200 (HGX), TP8, bf16, 1,024 in / 1,024 out, concurrency 1: TPOT 6.7 ms
    (gist BenHamm/78563d0d...). Context: mean of a running sequence, 1,024 + 512. Model ~7.2 ms: 0.9 ms of
    weight reads, 1.5 ms of all-reduce latency (188 x 8 us), 94 layers x 16 kernels x 3 us. Within 25%."""
    assert within("gist-qwen3-235b-b200-tp8-bs1", tpot_ms("qwen3-235b-a22b", B200, Layout(tp=8), 1536))


def test_gpt_oss_120b_tpot_at_one_request_on_8_b200():
    """Same gist: gpt-oss-120b (mxfp4 experts), TP8 on 8 x B200, concurrency 1: TPOT 2.41 ms. Model ~2.7 ms
    (36 layers: launches dominate, the 5.7B active parameters read in 0.1 ms). Within 25%."""
    assert within("gist-gptoss120b-b200-tp8-bs1", tpot_ms("gpt-oss-120b", B200, Layout(tp=8), 1536))


def test_kimi_k2_mla_tpot_at_one_request_on_8_b200():
    """Same gist: Kimi-K2-Instruct (MLA + 384 experts, block-fp8 checkpoint; the table's 'BF16' cannot fit
    8 x 183 GB), TP8, concurrency 1: TPOT 7.54 ms. Model ~7.6 ms: 61 MLA layers of 29 kernels (11 MLA, 8 MoE,
    3 shared expert, 7 activation-quantisation kernels of W8A8). Within 25%."""
    assert within("gist-kimik2-b200-tp8-bs1", tpot_ms("kimi-k2", B200, Layout(tp=8), 1536))


def test_qwen3_next_hybrid_tpot_at_one_request_on_2_b200():
    """Same gist: Qwen3-Coder-Next (Qwen3-Next-80B-A3B's architecture: 36 gated-DeltaNet + 12 full layers,
    512 experts), TP2, bf16, concurrency 1: TPOT 4.53 ms. Model ~4.6 ms. Within 25%."""
    assert within("gist-qwen3-coder-next-b200-tp2-bs1", tpot_ms("qwen3-next-80b-a3b", B200, Layout(tp=2), 1536))


@pytest.mark.parametrize(("anchor", "tp"), [("vllm-kimik3-gb300-tp8-bs1", 8), ("vllm-kimik3-gb300-tp16-bs1", 16)])
def test_kimi_k3_tpot_at_one_request_on_gb300(anchor, tp):
    """vLLM K3 day-0 post (vllm.ai/blog/2026-07-27-k3): K3 (MXFP4 experts, bf16 rest), fp8 KV, TP8 / TP16 on
    GB300 NVL72 (one NVLink domain), 8,192 in / 1,024 out (range ratio 0.8), concurrency 1, no speculative
    decoding: 111 / 118 tok/s per user, TPOT 9.0 / 8.5 ms. Context 8,192 + 512. Model 10.6 / 9.2 ms: the
    93 layers' ~2,200 kernels (6.6 ms) weigh more than the 2.7 / 1.4 ms of weight reads. Within 25%."""
    assert within(anchor, tpot_ms("kimi-k3", GB300, Layout(tp=tp), 8704, kv_cache_dtype="fp8"))


def test_llama_70b_fp8_itl_and_ttft_on_2_h100():
    """NVIDIA NIM 1.8.0 benchmarks (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance): Llama-3.3-70B
    (Llama-3.1-70B's architecture) fp8, TP2 on 2 x H100, 5,000 in / 500 out, concurrency 1: ITL 18.58 ms,
    TTFT 406.77 ms. Model: ITL ~18.9 ms (13.5 ms of weight reads, 1.3 ms all-reduces, 80 layers x 14 kernels),
    TTFT ~372 ms (compute bound). Both within 25% (dense, H100; decode at one request and prefill)."""
    model = reference.model("llama-3.1-70b")
    step = decode_step(model, H100, Layout(tp=2), 1, 5250, weight_format="fp8")
    first = prefill(model, H100, Layout(tp=2), 5000, weight_format="fp8")
    assert within("nim-llama33-70b-h100-tp2-itl-c1", step.time_s * 1e3)
    assert within("nim-llama33-70b-h100-tp2-ttft-c1", first.time_s * 1e3)
    assert step.bound == "memory" and first.bound == "compute"


def _nim_llama_70b(batch: int):
    """The NIM 1.8.0 setup of the two TTFT-definition anchors: Llama-3.3-70B (Llama-3.1-70B's architecture) fp8,
    TP2 on 2 x H100, 5,000 in / 500 out, at ``batch`` sequences per replica."""
    return estimate(reference.model("llama-3.1-70b"), H100, Layout(tp=2), prompt_tokens=5000, output_tokens=500,
                    batch=batch, weight_format="fp8")  # fmt: skip


def test_idle_ttft_definition_against_nim_at_concurrency_1():
    """Definition tested: idle_single_request (``idle_ttft_ms``: the prompt's prefill alone on an idle replica).

    Source: NVIDIA NIM 1.8.0 benchmarks (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance), Llama-3.3-70B
    fp8, TP2 on 2 x H100, 5,000 in / 500 out, concurrency 1: TTFT 406.77 ms (fixture id
    nim-llama33-70b-h100-tp2-ttft-c1, tagged idle_single_request: a closed loop of one request always meets an
    idle replica). Model ~372 ms (compute bound), ratio ~1.09. Tolerance 25% (issue 13's goal): hardware, layout,
    precision and lengths are stated; the measurement is taken at the client, so HTTP and tokenisation (tens of
    ms, not modelled) sit inside the band, on the measured side."""
    anchor = "nim-llama33-70b-h100-tp2-ttft-c1"
    assert ANCHORS[anchor]["ttft_definition"] == IDLE_TTFT_DEFINITION.code
    r = _nim_llama_70b(1)
    assert within(anchor, r.idle_ttft_s * 1e3)
    assert ratio(anchor, r.idle_ttft_s * 1e3) > 1  # the client-side overhead is on the measured side


def test_mean_under_load_ttft_definition_against_nim_at_concurrency_25():
    """Definition tested: mean_under_load (``ttft_ms``: the mean at the arrival rate the batch implies =
    queueing + decode sharing + prefill).

    Source: the same NIM 1.8.0 table at concurrency 25: mean TTFT 688.69 ms (fixture id
    nim-llama33-70b-h100-tp2-ttft-c25, tagged mean_under_load; the row is read from a transcription of the
    page whose concurrency-1 and 250 rows equal the fixture's quotes: docs/throughput_anchors.md). Modelled
    at batch 25 (within what memory admits at 5,500 tokens): ~656 ms = queueing ~258 + decode sharing ~27 +
    prefill ~372, ratio ~1.05. Tolerance 25%: the queueing term, ~40% of this TTFT, is M/M/1 on Poisson
    arrivals, while genai-perf's closed loop of 25 equal requests arrives more regularly (M/D/1 would halve
    the wait): the queue's form alone moves the total by up to ~20%, inside the band.

    And the idle definition does not explain this measurement: the prefill alone is ~372 ms, ratio ~1.85,
    outside the band. The two definitions are told apart by the data, not only by their names."""
    anchor = "nim-llama33-70b-h100-tp2-ttft-c25"
    assert ANCHORS[anchor]["ttft_definition"] == TTFT_DEFINITION.code
    r = _nim_llama_70b(25)
    assert r.fits
    assert within(anchor, r.ttft_s * 1e3)
    assert not within(anchor, r.idle_ttft_s * 1e3)
    assert r.ttft_parts.queue_s > r.ttft_parts.decode_sharing_s > 0


def test_deepseek_v3_large_ep_decode_per_gpu_on_h100():
    """LMSYS 2025-05-05 (SGLang, 9 x 8 H100, EP72, DP attention, DeepEP low-latency, two-batch overlap, EPLB):
    22,282 output tokens/s per node at 256 sequences per GPU, KV length 2,000: 2,785 per GPU (decode at large
    batch, MLA, H100). Modelled as run: EP72 over 72 GPUs with 32 redundant experts (EPLB: 288 slots for 256
    experts, 4 per GPU, as the blog states), the busiest rank at EPLB's measured 1.11x of the mean routed tokens.
    Model: the all-to-all over InfiniBand overlapped with the work. ~2,525 (ratio ~1.10). Within 25%."""
    gpus = 72
    layout = Layout(tp=1, dp=gpus, ep=gpus, redundant_experts=32)
    step = decode_step(reference.model("deepseek-v3"), H100, layout, 256 * gpus, 2000)
    assert step.overlap_saved_s > 0
    assert within("sglang-dsv3-h100-decode-ep72", step.tokens_per_s / gpus)


def test_deepseek_v3_large_ep_prefill_per_gpu_on_h100():
    """Same post: prefill on 4 x 8 H100, EP32, DP attention, DeepEP normal dispatch, two-batch overlap: 54,543
    input tokens/s per node for 2,000-token prompts (6,818 per GPU). The tokens per step are not stated (the
    profile comparison uses 16,384 per device): chunk 16,384. Model ~7,200 per GPU. Within 25%."""
    layout = Layout(tp=1, dp=32, ep=32)
    p = prefill(
        reference.model("deepseek-v3"), H100, layout, 2000, options=ThroughputOptions(prefill_chunk_tokens=16384)
    )
    assert within("sglang-dsv3-h100-prefill-ep32", p.replica_tokens_per_s / layout.gpus)


def test_qwen3_next_hybrid_decode_at_concurrency_8_on_2_h200():
    """sglang#10404 (SGLang main, Sept 2025, tuned fused-MoE config): Qwen3-Next-80B-A3B bf16, TP2 on 2 x H200,
    1,000 in / 2,000 out, concurrency 8: 937.94 output tok/s (469 per GPU). Context: 1,000 + 1,000. The figure
    includes each request's prefill (8 x 1,000 tokens over 2,000 output tokens: a few %). Model ~513.
    Within 25%."""
    step = decode_step(reference.model("qwen3-next-80b-a3b"), H200, Layout(tp=2), 8, 2000)
    assert within("sglang-qwen3next-h200-tp2-conc8", step.tokens_per_s / 2)


def test_kimi_k2_large_ep_decode_on_h200_in_a_wider_band():
    """LMSYS/Mooncake 2025-07-17: Kimi K2 decode on 12 x 8 H200, EP96 with 96 redundant experts (EPLB),
    480 sequences per GPU, 2,000 in / 100 out: 4,000 output tok/s per decode GPU.

    Modelled as run: EP96 with 96 redundant experts (480 slots for 384 experts, 5 per GPU). Not within 25%:
    the all-to-all over InfiniBand (~151 ms of a ~178 ms step) dominates, where the model overlaps less of it
    than Mooncake/DeepEP do, and the batch 480 per GPU is the fixture's reading of an ambiguous table
    (docs/throughput_anchors.md). Model ~2,700 with EPLB's measured imbalance (the busiest rank's 1.11x of the
    routed tokens lengthens its all-to-all too; ~2,960 without), ratio ~1.48: asserted within 1.5 (the fixture's
    suggested factor for an inferred setup)."""
    gpus = 96
    layout = Layout(tp=1, dp=gpus, ep=gpus, redundant_experts=96)
    step = decode_step(reference.model("kimi-k2"), H200, layout, 480 * gpus, 2050)
    assert within("sglang-kimik2-h200-decode-1p1d", step.tokens_per_s / gpus, 1.5)
    assert ratio("sglang-kimik2-h200-decode-1p1d", step.tokens_per_s / gpus) > 1  # the model is pessimistic here


def test_kimi_k3_seed_sglang_disaggregated_per_gpu():
    """Seeds ('moe-serving-coordination', citing SGLang's Kimi K3 study): a disaggregated setup with chunked
    pipeline-parallel prefill and context-parallel decode reached 2,808 tokens/s per GPU. Hardware, node count,
    batch, lengths and whether the figure counts output or total tokens are not known.

    Checked as a class, not a point: a K3 decode pool on one GB300 NVL72 domain (64 GPUs, tp 4 x dp 16, ep 64,
    fp8 KV) at the batch memory admits for 4k-token contexts, context 3,000. Asserted within a factor of 2
    (the fixture's factor for an unstated setup; context parallelism is not modelled)."""
    model = reference.model("kimi-k3")
    layout = Layout(tp=4, dp=16, ep=64)
    batch = size(
        model, GB300, layout=layout, context_tokens=4096, kv_cache_dtype="fp8"
    ).max_concurrent_sequences_per_replica
    step = decode_step(model, GB300, layout, batch, 3000, kv_cache_dtype="fp8")
    assert within("seed-kimik3-sglang-disagg", step.tokens_per_s / layout.gpus, 2.0)


def test_anchor_coverage():
    """At least ten anchors within 25%, covering dense, MoE, MLA and hybrid, H100, H200, B200 and GB300."""
    tested = [
        "gist-qwen3-235b-b200-tp8-bs1", "gist-gptoss120b-b200-tp8-bs1", "gist-kimik2-b200-tp8-bs1",
        "gist-qwen3-coder-next-b200-tp2-bs1", "vllm-kimik3-gb300-tp8-bs1", "vllm-kimik3-gb300-tp16-bs1",
        "nim-llama33-70b-h100-tp2-itl-c1", "nim-llama33-70b-h100-tp2-ttft-c1", "nim-llama33-70b-h100-tp2-ttft-c25",
        "sglang-dsv3-h100-decode-ep72",
        "sglang-dsv3-h100-prefill-ep32", "sglang-qwen3next-h200-tp2-conc8",
    ]  # fmt: skip
    rows = [ANCHORS[i] for i in tested]
    assert len(rows) >= 10
    assert {r["model_kind"] for r in rows} == {"dense", "moe", "mla", "hybrid"}
    assert {r["hardware"]["catalogue_sku"] for r in rows} >= {
        "h100-sxm-80gb",
        "h200-141gb",
        "b200-192gb",
        "gb300-288gb",
    }


#: LMSYS's GB200 decode pool (Part I and II): 48 ranks of one NVL72 domain, DP attention, EP48 with EPLB's
#: 32 redundant experts (288 slots, 6 per GPU: the ``--ep-num-redundant-experts 32`` of the series' reproduction
#: commands, sgl-project/sglang#6017), 2,000-token inputs, contexts to ~2,050 tokens on average.
GB200_DECODE = Layout(tp=1, dp=48, ep=48, redundant_experts=32)
GB200_CONTEXT = 2050
#: Bytes of one token's MLA KV in DeepSeek-V3 (61 layers x (512 latent + 64 rope) x 2 B), bf16.
DSV3_BF16_KV_BYTES_PER_TOKEN = 61 * 576 * 2


#: +-35%: issue 25's bar for the published GB200 decode rows (the sources state hardware, layout, precision and
#: input length; the batch of the BF16-attention rows is the one memory admits, not stated), tighter than the
#: fixture's suggested 1.5, which is set from how completely the source states the setup, not from a model run.
GB200_TOLERANCE = 1.35


def _gb200_decode(
    batch_per_gpu: int,
    kv_cache_dtype: str,
    expert_weight_format: str | None = None,
    options: ThroughputOptions = DEFAULT_OPTIONS,
):
    """LMSYS's GB200 decode pool at ``batch_per_gpu`` sequences per rank; DeepSeek-V3's own fp8 checkpoint, its
    routed experts in ``expert_weight_format`` when given (the NVFP4 MoE of Part II's low-precision path)."""
    model = reference.model("deepseek-v3")
    if expert_weight_format is not None:
        model = replace(model, expert_weight_format=expert_weight_format)
    step = decode_step(
        model,
        GB200,
        GB200_DECODE,
        batch_per_gpu * GB200_DECODE.gpus,
        GB200_CONTEXT,
        kv_cache_dtype=kv_cache_dtype,
        options=options,
    )
    return step, step.tokens_per_s / GB200_DECODE.gpus


def test_gb200_admits_the_published_decode_layouts():
    """Memory admission of LMSYS's GB200 decode layout (Part II, 2025-09-25: 'the batch size is chosen to make KV
    cache roughly full (thus 768 for 4k ISL and 1408 for 2k ISL)', per rank: the only reading that fills a pool).

    Sized as the benchmark ran: EP48 + 32 redundant experts (each GPU holds 6 of 288 expert slots and a full copy
    of the attention weights), at the sequences' own context (2,000 in + up to 100 out), not the model's 163,840
    maximum. At bf16 KV the pool holds ~944 sequences of 2,100 tokens per GPU, so 768 at 2k fits; 1,408 at 2k and
    768 at 4k fit only with the FP8 KV cache (the 'FP8 attention' path), as arithmetic alone shows: at bf16 they
    would need 202.6 / 221.0 GB of KV per GPU, more than the 186 GB HBM."""
    model = reference.model("deepseek-v3")
    per_gpu = {
        (kv, ctx): size(model, GB200, layout=GB200_DECODE, context_tokens=ctx, kv_cache_dtype=kv)
        .max_concurrent_sequences_per_replica // GB200_DECODE.gpus
        for kv in ("bf16", "fp8") for ctx in (2100, 4200)
    }  # fmt: skip
    assert per_gpu["bf16", 2100] >= 768
    assert per_gpu["fp8", 2100] >= 1408 and per_gpu["fp8", 4200] >= 768
    assert per_gpu["bf16", 4200] < 768  # the 4k batch is not a bf16-KV batch ...
    assert GB200.hbm_bytes < 1408 * 2048 * DSV3_BF16_KV_BYTES_PER_TOKEN  # ... nor is the 2k one, by bytes alone
    assert GB200.hbm_bytes < 768 * 4096 * DSV3_BF16_KV_BYTES_PER_TOKEN


def test_blackwell_grouped_gemm_efficiency_is_the_measured_one():
    """The expert GEMMs' efficiency on Blackwell is the cited measurement (options.BLACKWELL_GROUPED_GEMM_EFFICIENCY:
    FlashInfer's NVFP4 masked grouped GEMM at DeepSeek-V3's shapes, flashinfer#2503, 3,588 TFLOPS = 0.40 of 9,000;
    FP8 1.9x slower, LMSYS GB200 Part II; BF16 MegaMoE at EP8 on 8 x B200, flashinfer#4386, 5.772e12 FLOPs in
    6,504.4 us = 887 TFLOPS = 0.39 of 2,250), not the Hopper simulator's 0.6; Hopper keeps ``compute_efficiency``,
    and the Blackwell figures follow ``compute_efficiency`` when it is moved."""
    megamoe_flops = 2 * 8192 * 8 * 7168 * 3 * 2048
    assert megamoe_flops / 6504.4e-6 / 2250e12 == pytest.approx(BLACKWELL_GROUPED_GEMM_EFFICIENCY["bf16"], abs=0.005)
    default = ThroughputOptions()
    assert grouped_gemm_efficiency(GB200, "fp4", default) == BLACKWELL_GROUPED_GEMM_EFFICIENCY["fp4"] == 0.40
    assert grouped_gemm_efficiency(B200, "fp8", default) == grouped_gemm_efficiency(GB300, "fp8", default) == 0.42
    assert grouped_gemm_efficiency(GB200, "bf16", default) == BLACKWELL_GROUPED_GEMM_EFFICIENCY["bf16"] == 0.39
    assert grouped_gemm_efficiency(H100, "bf16", default) == default.compute_efficiency
    assert grouped_gemm_efficiency(H100, "fp8", default) == grouped_gemm_efficiency(H200, "fp8", default) == 0.6
    assert grouped_gemm_efficiency(GB200, "fp8", ThroughputOptions(compute_efficiency=0.3)) == pytest.approx(0.21)


def test_blackwell_mla_decode_efficiency_is_the_measured_one():
    """The absorbed MLA decode kernel's efficiency on Blackwell is the cited measurement
    (options.BLACKWELL_MLA_DECODE_EFFICIENCY: TRT-LLM-gen MLA decode at DeepSeek-V3's shapes, flashinfer#2743, batch
    256 x 8,192 tokens: 5.841e11 FLOPs in 0.5106 ms with bf16 KV = 1,144 TFLOPS = 0.51 of 2,250; in 0.2825 ms with
    FP8 KV = 2,068 TFLOPS = 0.46 of 4,500 fp8), not FlashMLA's Hopper 0.67 of bf16; Hopper, and KV dtypes the
    measurement does not cover, keep the Hopper figure."""
    flops = 2 * 128 * (2 * 512 + 64) * 256 * 8192
    assert flops / 0.5106e-3 / 2250e12 == pytest.approx(BLACKWELL_MLA_DECODE_EFFICIENCY["bf16"][1], abs=0.005)
    assert flops / 0.2825e-3 / 4500e12 == pytest.approx(BLACKWELL_MLA_DECODE_EFFICIENCY["fp8"][1], abs=0.005)
    hopper = MLA_ATTENTION_EFFICIENCY
    assert mla_decode_efficiency(GB200, "bf16", hopper) == mla_decode_efficiency(B200, "fp16", hopper) == ("bf16", 0.51)
    assert mla_decode_efficiency(GB300, "fp8", hopper) == ("fp8", 0.46)
    assert mla_decode_efficiency(GB200, "fp8_e4m3", hopper) == ("fp8", 0.46)
    assert mla_decode_efficiency(GB200, "int8", hopper) == ("bf16", 0.67)
    assert mla_decode_efficiency(H200, "fp8", hopper) == mla_decode_efficiency(H100, "bf16", hopper) == ("bf16", 0.67)


@pytest.mark.parametrize(
    ("anchor", "batch_per_gpu", "kv", "experts", "measured_over_predicted"),
    [
        ("sglang-dsr1-gb200-decode-fp8attn-nvfp4", 1408, "fp8", "nvfp4", 0.746),
        ("sglang-dsr1-gb200-decode-bf16attn-fp8moe", 768, "bf16", None, 0.780),
    ],
)
def test_deepseek_decode_on_gb200_part_ii(anchor, batch_per_gpu, kv, experts, measured_over_predicted):
    """LMSYS 'Deploying DeepSeek on GB200 NVL72 with PD and Large Scale EP (Part II)', 2025-09-25
    (lmsys.org/blog/2025-09-25-gb200-part-2): DeepSeek V3/R1, 2,000-token inputs, 48 decode ranks (EP48, DP
    attention, 'in-distribution EPLB') of one GB200 NVL72: 13,386 output tok/s per GPU with FP8 attention (FP8 KV)
    and NVFP4 MoE (and o_proj) at 1,408 sequences per rank; 9,087 with BF16 attention and FP8 MoE, batch 'KV cache
    roughly full' (not stated; 768 per GPU here, the layout issue 25 names, within what bf16 KV admits).

    Modelled on gb200-186gb (datasheet row) with Blackwell's measured kernels: the expert GEMMs at the grouped-GEMM
    efficiency (fp4 0.40, fp8 0.42), the MLA decode attention at its KV dtype's (bf16 0.51 of bf16, FP8 0.46 of
    fp8: flashinfer#2743), and EPLB's measured residual imbalance (the busiest rank receives 1.11x the mean routed
    tokens: TensorRT-LLM tech blog 4, Table 1). DeepSeek-V3's own fp8 checkpoint; for the first row its routed
    experts in NVFP4 and the dense weights at fp8, which is what the post's mix costs (o_proj NVFP4, q_b_proj FP8,
    the rest bf16: per layer 117.4M / 4 + 37.7M / 2 + 31.9M + 44.0M shared expert = 124M bf16-equivalent FLOPs
    against 231M / 2 = 115.6M at fp8; 91M if the shared expert is NVFP4 too; NVFP4 everywhere would be 57.8M).
    Both steps are compute bound.

    Both rows are within issue 25's +-35% (ratios ~0.75 and ~0.78: the model still ~1.34x and ~1.28x optimistic,
    ratio pinned to 0.01 so a drift is seen). Without the imbalance the FP8-attention row was 0.72 (outside) and
    the BF16 row 0.75; what remains unmodelled is the attention kernel's per-sequence query and output traffic at
    2,050 tokens (measured at 8,192), the small kernels the post calls not yet optimised, and EPLB at 48 ranks of
    6 slots being less even than the 32-36 ranks of 8-9 slots measured (docs/throughput.md, "Published
    anchors")."""
    step, per_gpu = _gb200_decode(batch_per_gpu, kv, experts)
    assert step.bound == "compute"
    assert ratio(anchor, per_gpu) == pytest.approx(measured_over_predicted, abs=0.01)
    assert ratio(anchor, per_gpu) < 1
    assert within(anchor, per_gpu, GB200_TOLERANCE)  # issue 25's bar


def test_eplb_imbalance_is_the_measured_one_and_applies_where_eplb_runs():
    """The residual imbalance of EPLB (options.DEFAULT_EPLB_IMBALANCE) is TensorRT-LLM tech blog 4's Table 1
    (DeepSeek-R1 decode on 32 GB200, imbalance ratio (max - mean) / mean of the routed tokens each rank receives):
    0.109 at EP32 / 288 slots and 0.115 at EP36 / 288 slots, 0.11 to two places. It scales the expert GEMMs and the
    all-to-all of the busiest rank, linearly, and only on layouts that run EPLB (redundant experts, ep > 1)."""
    assert DEFAULT_EPLB_IMBALANCE == round((0.109 + 0.115) / 2, 2) == ThroughputOptions().eplb_imbalance
    model = reference.model("deepseek-v3")

    def parts(layout: Layout, imbalance: float):
        s = decode_step(
            model, GB200, layout, 768 * layout.gpus, GB200_CONTEXT, options=ThroughputOptions(eplb_imbalance=imbalance)
        )
        return s.compute_time_s, s.communication_time_s, s.memory_time_s

    even, measured, doubled = (parts(GB200_DECODE, r) for r in (0.0, DEFAULT_EPLB_IMBALANCE, 1.0))
    # linear in the imbalance: 0.11 of the extra a busiest rank with twice the mean tokens adds
    for i in (0, 1):
        assert measured[i] - even[i] == pytest.approx(DEFAULT_EPLB_IMBALANCE * (doubled[i] - even[i]), rel=1e-9)
        assert doubled[i] > even[i]
    assert measured[2] == even[2]  # the same experts are read: memory time does not move
    no_eplb = Layout(tp=1, dp=32, ep=32)  # 256 experts over 32 ranks, no replicas: routing stays uniform
    assert parts(no_eplb, 0.0) == parts(no_eplb, 1.0)
    note = next(a for a in decode_step(model, GB200, GB200_DECODE, 768 * 48, GB200_CONTEXT).assumptions if "EPLB" in a)
    assert "EPLB with 32 redundant experts: the busiest of the 48 expert-parallel ranks receives 1.11x" in note
    assert not any("EPLB with" in a for a in decode_step(model, GB200, no_eplb, 768 * 32, GB200_CONTEXT).assumptions)
    with pytest.raises(EngineInputError) as exc:
        ThroughputOptions(eplb_imbalance=-0.1).check()
    assert "eplb_imbalance" in exc.value.errors


def test_deepseek_decode_on_gb200_part_i_in_the_fixture_band():
    """LMSYS 'Deploying DeepSeek on GB200 NVL72 with PD and Large Scale EP (Part I)', 2025-06-16
    (lmsys.org/blog/2025-06-16-gb200-part-1): 7,583 output tok/s per GPU, 12 decode trays (48 GPUs), 2,000-token
    inputs, FP8 GEMMs (Blackwell DeepGEMM), BF16 attention, no two-batch overlap, batch not stated. Modelled at
    768 per GPU, bf16 KV, as the Part II BF16-attention row but without two-batch overlap (``overlap=False``, as
    the post states): ratio ~0.67 (the model 1.5x optimistic; Part I ran three months before Part II's 9,087 on
    the same precision and pool, and the model has one kernel generation, Part II's). The batch decides the rest:
    at 384 per GPU the same model reads 0.74. Asserted within the fixture's factor 2.0 (batch unstated)."""
    step, per_gpu = _gb200_decode(768, "bf16", options=ThroughputOptions(overlap=False))
    assert step.bound == "compute" and step.overlap_saved_s == 0
    assert ratio("sglang-dsr1-gb200-decode-part1", per_gpu) == pytest.approx(0.668, abs=0.01)
    assert within("sglang-dsr1-gb200-decode-part1", per_gpu, 2.0)
    assert ratio("sglang-dsr1-gb200-decode-part1", per_gpu) < 1
