"""The shape of the benchmark fleet: cluster templates with the deployments each serves (checked to
fit), providers, teams, workloads, and a realistic poll outcome."""

from __future__ import annotations

from typing import Any

# --------------------------------------------------------------------------------------------
# The fleet: cluster templates, each with the deployments it serves (all checked to fit)
# --------------------------------------------------------------------------------------------

#: (model slug, tp, pp, dp, ep, replicas, kv dtype, max_model_len or None, engine)
Recipe = tuple[str, int, int, int, int, int, str, int | None, str]

#: SKU slug, nodes, and the deployments of one cluster (the first five are used with 5 per cluster).
TEMPLATES: dict[str, tuple[str, int, list[Recipe]]] = {
    "h100": (
        "h100-sxm-80gb",
        4,
        [
            ("llama-3.1-70b", 4, 1, 1, 1, 2, "bf16", 32768, "vllm"),
            ("qwen3-32b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
            ("qwen3-32b", 1, 1, 1, 1, 4, "fp8", 8192, "vllm"),
            ("qwen3-14b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
            ("gpt-oss-120b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
            ("qwen2.5-7b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ],
    ),
    "h100-large": (
        "h100-sxm-80gb",
        8,
        [
            ("kimi-k3", 8, 1, 4, 32, 1, "fp8", 131072, "sglang"),
            ("qwen3-235b-a22b", 8, 1, 1, 8, 1, "fp8", None, "vllm"),
            ("llama-3.1-70b", 8, 1, 1, 1, 1, "fp8", None, "vllm"),
            ("qwen3-next-80b-a3b", 4, 1, 1, 1, 1, "bf16", None, "vllm"),
            ("qwen3-14b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ],
    ),
    "h200": (
        "h200-141gb",
        8,
        [
            ("kimi-k3", 8, 1, 2, 16, 1, "fp8", 131072, "sglang"),
            ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", 65536, "sglang"),
            ("qwen3-235b-a22b", 4, 1, 1, 4, 2, "bf16", None, "vllm"),
            ("llama-3.1-70b", 2, 1, 1, 1, 4, "bf16", None, "vllm"),
            ("kimi-linear-48b-a3b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
            ("qwen3-32b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ],
    ),
    "b200": (
        "b200-192gb",
        6,
        [
            ("kimi-k3", 8, 1, 2, 16, 1, "fp8", 262144, "sglang"),
            ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", None, "sglang"),
            ("kimi-k2", 8, 1, 1, 8, 1, "fp8", None, "sglang"),
            ("llama-3.1-70b", 1, 1, 1, 1, 4, "bf16", 32768, "vllm"),
            ("gpt-oss-120b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ],
    ),
    "gb300": (
        "gb300-288gb",
        6,
        [
            ("kimi-k3", 4, 1, 2, 8, 1, "fp8", 262144, "sglang"),
            ("deepseek-v3", 4, 1, 1, 4, 1, "fp8", None, "sglang"),
            ("gpt-oss-120b", 1, 1, 1, 1, 2, "bf16", None, "vllm"),
            ("llama-3.1-70b", 1, 1, 1, 1, 1, "bf16", None, "vllm"),
            ("qwen3-235b-a22b", 2, 1, 1, 2, 1, "bf16", None, "vllm"),
        ],
    ),
    "mi300x": (
        "mi300x-192gb",
        4,
        [
            ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", 65536, "sglang"),
            ("qwen3-235b-a22b", 4, 1, 1, 4, 1, "bf16", None, "vllm"),
            ("llama-3.1-70b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
            ("qwen3-32b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
            ("gpt-oss-120b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ],
    ),
    "mi355x": (
        "mi355x-288gb",
        4,
        [
            ("kimi-k3", 8, 1, 1, 8, 1, "fp8", 131072, "sglang"),
            ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", None, "sglang"),
            ("llama-3.1-70b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
            ("qwen3-235b-a22b", 2, 1, 1, 2, 2, "bf16", None, "vllm"),
            ("qwen3-next-80b-a3b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ],
    ),
    "a100": (
        "a100-sxm-80gb",
        4,
        [
            ("llama-3.1-70b", 4, 1, 1, 1, 2, "bf16", 32768, "vllm"),
            ("qwen3-32b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
            ("qwen3-14b", 1, 1, 1, 1, 2, "bf16", None, "vllm"),
            ("qwen2.5-7b", 1, 1, 1, 1, 2, "bf16", None, "vllm"),
            ("qwen3-32b", 2, 1, 1, 1, 1, "fp8", 16384, "vllm"),
        ],
    ),
    "l40s": (
        "l40s-48gb",
        2,
        [
            ("qwen3-14b", 1, 1, 1, 1, 4, "bf16", 16384, "vllm"),
            ("qwen2.5-7b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
            ("qwen3-32b", 2, 1, 1, 1, 2, "bf16", 16384, "vllm"),
            ("qwen2.5-7b", 1, 1, 1, 1, 2, "fp8", None, "llamacpp"),
            ("qwen3-14b", 1, 1, 1, 1, 2, "fp8", 16384, "vllm"),
        ],
    ),
}

#: Cluster i uses TEMPLATE_CYCLE[i % 20]: 35% H100, 20% H200, 10% B200, ...
TEMPLATE_CYCLE = (
    ["h100"] * 6
    + ["h100-large"] * 1
    + ["h200"] * 4
    + ["b200"] * 2
    + ["gb300"] * 1
    + ["mi300x"] * 2
    + ["mi355x"] * 1
    + ["a100"] * 2
    + ["l40s"] * 1
)
PROVIDERS = ("seed-assumption", "coreweave", "lambda", "nebius", "on-prem")
REGIONS = ("eu-west", "us-east", "us-west", "ap-south")
TEAMS = ("platform", "search", "assistants", "code", "research", "ads", "support", "data")

WORKLOADS = [
    dict(
        slug="chat-assistant",
        name="Chat assistant",
        team="assistants",
        requests_per_day=800_000,
        mean_prompt_tokens=2_500,
        mean_output_tokens=400,
        p95_context_tokens=16_384,
        prefix_cache_hit_rate=0.6,
        peak_concurrency=256,
        ttft_slo_ms=1_500,
        tpot_slo_ms=40,
    ),
    dict(
        slug="coding-agent",
        name="Coding agent",
        team="code",
        requests_per_day=200_000,
        mean_prompt_tokens=12_000,
        mean_output_tokens=600,
        p95_context_tokens=65_536,
        prefix_cache_hit_rate=0.9,
        peak_concurrency=256,
        ttft_slo_ms=2_000,
        tpot_slo_ms=50,
    ),
    dict(
        slug="batch-summaries",
        name="Batch summaries",
        team="data",
        requests_per_day=50_000,
        mean_prompt_tokens=8_000,
        mean_output_tokens=300,
        p95_context_tokens=32_768,
        prefix_cache_hit_rate=0.1,
        peak_concurrency=64,
        ttft_slo_ms=10_000,
        tpot_slo_ms=100,
    ),
    dict(
        slug="search-rerank",
        name="Search rerank",
        team="search",
        requests_per_day=2_000_000,
        mean_prompt_tokens=1_000,
        mean_output_tokens=20,
        p95_context_tokens=4_096,
        prefix_cache_hit_rate=0.3,
        peak_concurrency=128,
        ttft_slo_ms=300,
        tpot_slo_ms=30,
    ),
]

WHAT_IF_QUERY = (
    "model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16&kv_cache_dtype=fp8&context_tokens=131072&pool=unified"
)


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def check_templates() -> None:
    """Every recipe must be a valid layout that fits its cluster's SKU, and a cluster's deployments
    (its first five recipes) must fit in its GPUs; fail before storing anything otherwise."""
    from fleet.models import HardwareSku, ModelSpec
    from planner.engine import Layout, layout_errors, size

    skus = {s.slug: s for s in HardwareSku.objects.all()}
    models = {m.slug: m for m in ModelSpec.objects.all()}
    problems = []
    for name, (sku_slug, nodes, recipes) in TEMPLATES.items():
        sku = skus[sku_slug]
        total = nodes * sku.gpus_per_node
        used = 0
        for i, (model, tp, pp, dp, ep, replicas, kv, max_len, _engine) in enumerate(recipes):
            arch, layout = models[model].to_engine(), Layout(tp=tp, pp=pp, dp=dp, ep=ep)
            if i < 5:
                used += replicas * layout.gpus
            errors = layout_errors(layout, model=arch, available_gpus=total, replicas=replicas)
            if errors:
                problems.append(f"{name}/{model}: {errors}")
                continue
            result = size(
                arch,
                sku.to_engine(),
                gpus=replicas * layout.gpus,
                layout=layout,
                kv_cache_dtype=kv,
                context_tokens=max_len or arch.max_context_tokens,
                gpu_memory_utilization=0.9,
            )
            if not result.fits or result.max_concurrent_sequences < 1:
                problems.append(f"{name}/{model} tp{tp} pp{pp} dp{dp} ep{ep} does not fit on {sku_slug}")
        if used > total:
            problems.append(f"{name}: its first five deployments use {used} GPUs of {total}")
    if problems:
        raise SystemExit("bench data is wrong:\n  " + "\n  ".join(problems))


def outcome_template() -> dict[str, Any]:
    """A poll outcome as ``fleet.polling.PollOutcome.to_dict()`` stores it for a vLLM endpoint."""
    from fleet.polling.fake_vllm import VLLM_ITL_BUCKETS, VLLM_TTFT_BUCKETS

    ttft_le, itl_le = list(VLLM_TTFT_BUCKETS), list(VLLM_ITL_BUCKETS)

    def histogram(bounds: list[float], total: float, scale: float) -> dict[str, Any]:
        buckets = [[le, round(total * min(1.0, le / scale))] for le in bounds] + [["+Inf", total]]
        return {"buckets": buckets, "sum": total * scale / 2, "count": total}

    sources = {
        "requests_running": "vllm:num_requests_running",
        "requests_waiting": "vllm:num_requests_waiting",
        "kv_cache_usage": "vllm:kv_cache_usage_perc",
        "prefix_cache_queries": "vllm:prefix_cache_queries_total",
        "prefix_cache_hits": "vllm:prefix_cache_hits_total",
        "prompt_tokens": "vllm:prompt_tokens_total",
        "generation_tokens": "vllm:generation_tokens_total",
        "preemptions": "vllm:num_preemptions_total",
        "process_start_time_s": "process_start_time_seconds",
        "cache_capacity_tokens": "vllm:cache_config_info",
        "ttft": "vllm:time_to_first_token_seconds",
        "itl": "vllm:inter_token_latency_seconds",
    }
    snapshot = {
        "engine": "vllm",
        "scraped_at": 0.0,
        "shards": 1,
        "requests_running": 0.0,
        "requests_waiting": 0.0,
        "kv_cache_usage": 0.0,
        "kv_cache_usage_max": 0.0,
        "kv_cache_used_tokens": 0.0,
        "cache_capacity_tokens": 0,
        "prefix_cache_queries": 507288.0,
        "prefix_cache_hits": 213856.0,
        "reported_prefix_hit_rate": None,
        "prompt_tokens": 507288.0,
        "generation_tokens": 77136.0,
        "preemptions": 13.0,
        "ttft": histogram(ttft_le, 249.0, 0.5),
        "itl": histogram(itl_le, 7470.0, 0.1),
        "process_start_time_s": 0.0,
        "sources": sources,
    }
    return {
        "status": "up",
        "reason": "",
        "base_url": "",
        "engine": "vllm",
        "served_model_id": "",
        "detected_engine": "vllm",
        "model_ids": [],
        "max_model_len": None,
        "latencies_s": {"models": 0.015, "health": 0.003, "metrics": 0.022},
        "http_status": {"models": 200, "health": 200, "metrics": 200},
        "metrics_available": True,
        "snapshot": snapshot,
        "derived": {},
        "warnings": [],
        "polled_at": 0.0,
    }
