"""Benchmark of the pages: server time per page (median, p95) and SQL queries, on PostgreSQL.

Run from the repository root (PostgreSQL on 127.0.0.1:5432, user ``postgres``, trust auth):

    .venv/bin/python bench/bench_pages.py                          # 200 clusters, 1,000 deployments, 100,000 polls
    .venv/bin/python bench/bench_pages.py --repeat 50 --profile fleet-partial --profile spend

Plain script (no pytest). It creates a throwaway database ``fleetcap_bench_pages`` (dropped first if a
previous run left it, and dropped again at the end, also on error or Ctrl-C), points ``DATABASE_URL`` at it
and ``FLEETCAP_VAR_DIR`` at a new temporary folder BEFORE ``django.setup()``, runs ``migrate`` and
``load_catalog``, then bulk-creates a fleet:

* ``--clusters`` clusters over the catalogue's SKUs (H100, H200, B200, GB300, MI300X, MI355X, A100, L40S),
  2 to 16 nodes each, with one ``ClusterState`` each (registered between a year ago and this month);
* ``--deployments`` deployments spread round-robin over the clusters, each a layout that fits its cluster
  (checked with ``layout_errors`` and ``size()`` before anything is stored): Llama 3.1 70B tp 4 on 8-GPU
  H100 nodes, Qwen3 32B tp 1/2, Kimi K3 only where it fits (32 H100s at tp 8 x dp 4, or 8 to 16 H200, B200,
  GB300 or MI355X), DeepSeek V3 and Kimi K2 on the big ones, and so on; ``last_status`` / ``last_metrics``
  set as the poller leaves them; a third serve a workload;
* ``--polls`` ``EndpointPoll`` rows spread evenly over the deployments and the last 7 days, with the metric
  columns filled and a full ``outcome`` JSON of the shape the poller stores (about 3 KB, vLLM histograms);
* 4 workloads, ``--plans`` plans (one created with ``planner.plans.create_plan`` and run synchronously with
  ``execute_plan``, i.e. ``planner.engine.search.search`` once; the other done plans carry a copy of its
  result, the rest are queued, failed or cancelled), 3 decisions per workload through ``Decision.record``
  (figures and snapshot from ``planner.breakeven.run_breakeven``), and the catalogue's GPU quotes and API
  price. Then ``VACUUM ANALYZE`` (what autovacuum would do after such a load).

Each page is requested with ``django.test.Client`` as a logged-in viewer (``force_login``, ``HTTP_HOST`` =
``localhost``): 2 warm-up requests, then ``--repeat`` timed ones (wall time of ``client.get`` in this process,
i.e. URL resolving, middleware, view, queries and template rendering; no network, no WSGI server), and this
process's CPU time per request (the Django side only, less disturbed by other work on the machine). The SQL
query count comes from one more request inside ``CaptureQueriesContext``, not timed. ``DEBUG`` is off, as in
production, and the test environment is not set up (so templates are not instrumented).

The target (p95 under 100 ms for every page) is reported, not enforced: the exit status is 0 unless the
setup or a page fails. ``--profile NAME`` (repeatable) prints the top of a cProfile of 5 requests of that page.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import math
import os
import platform
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DB_NAME = "fleetcap_bench_pages"
SERVER_URL = "postgres://postgres@127.0.0.1:5432"
TARGET_P95_MS = 100.0
WARMUPS = 2

# --------------------------------------------------------------------------------------------
# The fleet: cluster templates, each with the deployments it serves (all checked to fit)
# --------------------------------------------------------------------------------------------

#: (model slug, tp, pp, dp, ep, replicas, kv dtype, max_model_len or None, engine)
Recipe = tuple[str, int, int, int, int, int, str, int | None, str]

#: SKU slug, nodes, and the deployments of one cluster (the first five are used with 5 per cluster).
TEMPLATES: dict[str, tuple[str, int, list[Recipe]]] = {
    "h100": ("h100-sxm-80gb", 4, [
        ("llama-3.1-70b", 4, 1, 1, 1, 2, "bf16", 32768, "vllm"),
        ("qwen3-32b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
        ("qwen3-32b", 1, 1, 1, 1, 4, "fp8", 8192, "vllm"),
        ("qwen3-14b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ("gpt-oss-120b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
        ("qwen2.5-7b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
    ]),
    "h100-large": ("h100-sxm-80gb", 8, [
        ("kimi-k3", 8, 1, 4, 32, 1, "fp8", 131072, "sglang"),
        ("qwen3-235b-a22b", 8, 1, 1, 8, 1, "fp8", None, "vllm"),
        ("llama-3.1-70b", 8, 1, 1, 1, 1, "fp8", None, "vllm"),
        ("qwen3-next-80b-a3b", 4, 1, 1, 1, 1, "bf16", None, "vllm"),
        ("qwen3-14b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
    ]),
    "h200": ("h200-141gb", 8, [
        ("kimi-k3", 8, 1, 2, 16, 1, "fp8", 131072, "sglang"),
        ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", 65536, "sglang"),
        ("qwen3-235b-a22b", 4, 1, 1, 4, 2, "bf16", None, "vllm"),
        ("llama-3.1-70b", 2, 1, 1, 1, 4, "bf16", None, "vllm"),
        ("kimi-linear-48b-a3b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ("qwen3-32b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
    ]),
    "b200": ("b200-192gb", 6, [
        ("kimi-k3", 8, 1, 2, 16, 1, "fp8", 262144, "sglang"),
        ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", None, "sglang"),
        ("kimi-k2", 8, 1, 1, 8, 1, "fp8", None, "sglang"),
        ("llama-3.1-70b", 1, 1, 1, 1, 4, "bf16", 32768, "vllm"),
        ("gpt-oss-120b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
    ]),
    "gb300": ("gb300-288gb", 6, [
        ("kimi-k3", 4, 1, 2, 8, 1, "fp8", 262144, "sglang"),
        ("deepseek-v3", 4, 1, 1, 4, 1, "fp8", None, "sglang"),
        ("gpt-oss-120b", 1, 1, 1, 1, 2, "bf16", None, "vllm"),
        ("llama-3.1-70b", 1, 1, 1, 1, 1, "bf16", None, "vllm"),
        ("qwen3-235b-a22b", 2, 1, 1, 2, 1, "bf16", None, "vllm"),
    ]),
    "mi300x": ("mi300x-192gb", 4, [
        ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", 65536, "sglang"),
        ("qwen3-235b-a22b", 4, 1, 1, 4, 1, "bf16", None, "vllm"),
        ("llama-3.1-70b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
        ("qwen3-32b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ("gpt-oss-120b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
    ]),
    "mi355x": ("mi355x-288gb", 4, [
        ("kimi-k3", 8, 1, 1, 8, 1, "fp8", 131072, "sglang"),
        ("deepseek-v3", 8, 1, 1, 8, 1, "fp8", None, "sglang"),
        ("llama-3.1-70b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ("qwen3-235b-a22b", 2, 1, 1, 2, 2, "bf16", None, "vllm"),
        ("qwen3-next-80b-a3b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
    ]),
    "a100": ("a100-sxm-80gb", 4, [
        ("llama-3.1-70b", 4, 1, 1, 1, 2, "bf16", 32768, "vllm"),
        ("qwen3-32b", 2, 1, 1, 1, 2, "bf16", None, "vllm"),
        ("qwen3-14b", 1, 1, 1, 1, 2, "bf16", None, "vllm"),
        ("qwen2.5-7b", 1, 1, 1, 1, 2, "bf16", None, "vllm"),
        ("qwen3-32b", 2, 1, 1, 1, 1, "fp8", 16384, "vllm"),
    ]),
    "l40s": ("l40s-48gb", 2, [
        ("qwen3-14b", 1, 1, 1, 1, 4, "bf16", 16384, "vllm"),
        ("qwen2.5-7b", 1, 1, 1, 1, 4, "bf16", None, "vllm"),
        ("qwen3-32b", 2, 1, 1, 1, 2, "bf16", 16384, "vllm"),
        ("qwen2.5-7b", 1, 1, 1, 1, 2, "fp8", None, "llamacpp"),
        ("qwen3-14b", 1, 1, 1, 1, 2, "fp8", 16384, "vllm"),
    ]),
}  # fmt: skip

#: Cluster i uses TEMPLATE_CYCLE[i % 20]: 35% H100, 20% H200, 10% B200, ...
TEMPLATE_CYCLE = (
    ["h100"] * 6 + ["h100-large"] * 1 + ["h200"] * 4 + ["b200"] * 2 + ["gb300"] * 1
    + ["mi300x"] * 2 + ["mi355x"] * 1 + ["a100"] * 2 + ["l40s"] * 1
)  # fmt: skip
PROVIDERS = ("seed-assumption", "coreweave", "lambda", "nebius", "on-prem")
REGIONS = ("eu-west", "us-east", "us-west", "ap-south")
TEAMS = ("platform", "search", "assistants", "code", "research", "ads", "support", "data")

WORKLOADS = [
    dict(slug="chat-assistant", name="Chat assistant", team="assistants", requests_per_day=800_000,
         mean_prompt_tokens=2_500, mean_output_tokens=400, p95_context_tokens=16_384, prefix_cache_hit_rate=0.6,
         peak_concurrency=256, ttft_slo_ms=1_500, tpot_slo_ms=40),
    dict(slug="coding-agent", name="Coding agent", team="code", requests_per_day=200_000,
         mean_prompt_tokens=12_000, mean_output_tokens=600, p95_context_tokens=65_536, prefix_cache_hit_rate=0.9,
         peak_concurrency=256, ttft_slo_ms=2_000, tpot_slo_ms=50),
    dict(slug="batch-summaries", name="Batch summaries", team="data", requests_per_day=50_000,
         mean_prompt_tokens=8_000, mean_output_tokens=300, p95_context_tokens=32_768, prefix_cache_hit_rate=0.1,
         peak_concurrency=64, ttft_slo_ms=10_000, tpot_slo_ms=100),
    dict(slug="search-rerank", name="Search rerank", team="search", requests_per_day=2_000_000,
         mean_prompt_tokens=1_000, mean_output_tokens=20, p95_context_tokens=4_096, prefix_cache_hit_rate=0.3,
         peak_concurrency=128, ttft_slo_ms=300, tpot_slo_ms=30),
]  # fmt: skip

WHAT_IF_QUERY = (
    "model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16&kv_cache_dtype=fp8&context_tokens=131072&pool=unified"
)


# --------------------------------------------------------------------------------------------
# The throwaway database
# --------------------------------------------------------------------------------------------


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER_URL}/postgres", autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql)


def create_database() -> None:
    _admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    _admin(f"CREATE DATABASE {DB_NAME}")


def drop_database() -> None:
    if "django" in sys.modules:
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
    _admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def setup_django(var_dir: str) -> None:
    """Environment first (settings read it at import), then ``django.setup()``, migrate, catalogue."""
    os.environ["DATABASE_URL"] = f"{SERVER_URL}/{DB_NAME}"
    os.environ["FLEETCAP_VAR_DIR"] = var_dir
    os.environ["FLEETCAP_DEBUG"] = "0"
    os.environ.setdefault("FLEETCAP_LOG_LEVEL", "WARNING")
    os.environ["DJANGO_SETTINGS_MODULE"] = "fleet.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_catalog", stdout=io.StringIO())


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def check_templates() -> None:
    """Every recipe must be a valid layout that fits its cluster's SKU, and a cluster's deployments
    (its first five recipes) must fit in its GPUs; fail before storing anything otherwise."""
    from fleet.models import HardwareSku
    from planner.engine.sizing import size
    from planner.engine.spec import Layout, layout_errors
    from planner.models import ModelSpec

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
                arch, sku.to_engine(), gpus=replicas * layout.gpus, layout=layout, kv_cache_dtype=kv,
                context_tokens=max_len or arch.max_context_tokens, gpu_memory_utilization=0.9,
            )  # fmt: skip
            if not result.fits or result.max_concurrent_sequences < 1:
                problems.append(f"{name}/{model} tp{tp} pp{pp} dp{dp} ep{ep} does not fit on {sku_slug}")
        if used > total:
            problems.append(f"{name}: its first five deployments use {used} GPUs of {total}")
    if problems:
        raise SystemExit("bench data is wrong:\n  " + "\n  ".join(problems))


def outcome_template() -> dict[str, Any]:
    """A poll outcome as ``fleet.polling.PollOutcome.to_dict()`` stores it for a vLLM endpoint."""
    ttft_le = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
               40.0, 80.0, 160.0, 640.0, 2560.0]  # fmt: skip
    itl_le = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
              80.0]  # fmt: skip

    def histogram(bounds: list[float], total: float, scale: float) -> dict[str, Any]:
        buckets = [[le, round(total * min(1.0, le / scale))] for le in bounds] + [["+Inf", total]]
        return {"buckets": buckets, "sum": total * scale / 2, "count": total}

    sources = {
        "requests_running": "vllm:num_requests_running", "requests_waiting": "vllm:num_requests_waiting",
        "kv_cache_usage": "vllm:kv_cache_usage_perc", "prefix_cache_queries": "vllm:prefix_cache_queries_total",
        "prefix_cache_hits": "vllm:prefix_cache_hits_total", "prompt_tokens": "vllm:prompt_tokens_total",
        "generation_tokens": "vllm:generation_tokens_total", "preemptions": "vllm:num_preemptions_total",
        "process_start_time_s": "process_start_time_seconds", "cache_capacity_tokens": "vllm:cache_config_info",
        "ttft": "vllm:time_to_first_token_seconds", "itl": "vllm:inter_token_latency_seconds",
    }  # fmt: skip
    snapshot = {
        "engine": "vllm", "scraped_at": 0.0, "shards": 1, "requests_running": 0.0, "requests_waiting": 0.0,
        "kv_cache_usage": 0.0, "kv_cache_usage_max": 0.0, "kv_cache_used_tokens": 0.0, "cache_capacity_tokens": 0,
        "prefix_cache_queries": 507288.0, "prefix_cache_hits": 213856.0, "reported_prefix_hit_rate": None,
        "prompt_tokens": 507288.0, "generation_tokens": 77136.0, "preemptions": 13.0,
        "ttft": histogram(ttft_le, 249.0, 0.5), "itl": histogram(itl_le, 7470.0, 0.1),
        "process_start_time_s": 0.0, "sources": sources,
    }  # fmt: skip
    return {
        "status": "up", "reason": "", "base_url": "", "engine": "vllm", "served_model_id": "",
        "detected_engine": "vllm", "model_ids": [], "max_model_len": None,
        "latencies_s": {"models": 0.015, "health": 0.003, "metrics": 0.022},
        "http_status": {"models": 200, "health": 200, "metrics": 200}, "metrics_available": True,
        "snapshot": snapshot, "derived": {}, "warnings": [], "polled_at": 0.0,
    }  # fmt: skip


def build_data(n_clusters: int, n_deployments: int, n_polls: int, n_plans: int, seed: int = 7) -> dict[str, Any]:
    """Bulk-create the fleet; returns the objects the pages are asked about and the row counts."""
    from django.contrib.auth.models import Group, User
    from django.db import connection, transaction
    from django.utils import timezone

    from fleet.models import (
        ApiPrice,
        Cluster,
        ClusterState,
        Deployment,
        EndpointPoll,
        GpuQuote,
        HardwareSku,
        WorkerHeartbeat,
    )
    from planner.breakeven import BreakevenRequestSerializer, run_breakeven
    from planner.models import Decision, ModelSpec, Plan, Workload
    from planner.plans import create_plan, execute_plan

    rng = random.Random(seed)
    now = timezone.now()
    today = now.date()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    users = {}
    for role in ("viewer", "finance", "platform"):
        user = User.objects.create_user(username=f"bench-{role}", password=None)
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        users[role] = user

    skus = {s.slug: s for s in HardwareSku.objects.all()}
    models = {m.slug: m for m in ModelSpec.objects.all()}
    workloads = Workload.objects.bulk_create([Workload(**w) for w in WORKLOADS])

    # Clusters, and one dated state each (registered between a year ago and the 1st of this month).
    clusters = []
    for i in range(n_clusters):
        template = TEMPLATE_CYCLE[i % len(TEMPLATE_CYCLE)]
        sku_slug, nodes, _ = TEMPLATES[template]
        sku = skus[sku_slug]
        clusters.append(Cluster(
            slug=f"c{i:04d}-{template}", name=f"{template.upper()} {i:04d}", sku=sku,
            nodes=nodes * (2 if i % 10 == 9 else 1), gpus_per_node=sku.gpus_per_node,
            provider=PROVIDERS[i % len(PROVIDERS)], region=REGIONS[i % len(REGIONS)], team=TEAMS[i % len(TEAMS)],
            hours_per_day=24 if i % 7 else 12, status="active" if i % 25 else "planned",
        ))  # fmt: skip
    with transaction.atomic():
        clusters = Cluster.objects.bulk_create(clusters)
        first_of_month = today.replace(day=1)
        ClusterState.objects.bulk_create([
            ClusterState(
                cluster=c,
                effective_from=first_of_month if i % 10 == 0 else today - timedelta(days=30 + (i * 37) % 335),
                sku=c.sku, nodes=c.nodes, gpus_per_node=c.gpus_per_node, hours_per_day=c.hours_per_day,
                status=c.status, team=c.team, provider=c.provider,
            )
            for i, c in enumerate(clusters)
        ])  # fmt: skip
    timings["clusters"] = time.perf_counter() - t0

    # Deployments, round-robin over the clusters, recipe by rank on the cluster.
    t1 = time.perf_counter()
    deployments = []
    for k in range(n_deployments):
        i, rank = k % n_clusters, k // n_clusters
        cluster = clusters[i]
        template = TEMPLATE_CYCLE[i % len(TEMPLATE_CYCLE)]
        model_slug, tp, pp, dp, ep, replicas, kv, max_len, engine = TEMPLATES[template][2][
            rank % len(TEMPLATES[template][2])
        ]
        model = models[model_slug]
        status = "up" if k % 23 else rng.choice(["down", "loading", "error"])
        running = float(rng.randint(0, 40)) if status == "up" else None
        metrics = {}
        if status == "up":
            metrics = {
                "requests_running": running, "requests_waiting": float(rng.randint(0, 3)),
                "kv_cache_usage": round(rng.uniform(0.05, 0.95), 4),
                "prefix_cache_hit_rate": round(rng.uniform(0.1, 0.9), 4),
                "prompt_tokens_per_s": round(rng.uniform(500, 50_000), 1),
                "generation_tokens_per_s": round(rng.uniform(100, 8_000), 1),
                "ttft_p50_ms": round(rng.uniform(50, 400), 1), "ttft_p95_ms": round(rng.uniform(300, 2_000), 1),
                "itl_p50_ms": round(rng.uniform(8, 30), 2), "itl_p95_ms": round(rng.uniform(20, 60), 2),
                "observed_cache_tokens": 32_000 * replicas * dp, "predicted_cache_tokens": 31_000 * replicas * dp,
            }  # fmt: skip
        deployments.append(Deployment(
            slug=f"{cluster.slug}-{model_slug}-{rank}", cluster=cluster, model=model,
            workload=workloads[k % len(workloads)] if k % 3 == 0 else None,
            replicas=replicas, tp=tp, pp=pp, dp=dp, ep=ep, engine=engine,
            base_url=f"http://10.{i // 250}.{i % 250}.{10 + rank}:8000", served_model_id=f"org/{model_slug}",
            kv_cache_dtype=kv, max_model_len=max_len, poll_interval_s=15,
            last_status=status, last_status_changed=now - timedelta(hours=rng.randint(1, 500)),
            last_polled=now - timedelta(seconds=rng.randint(1, 15)), last_metrics=metrics,
        ))  # fmt: skip
    deployments = Deployment.objects.bulk_create(deployments, batch_size=1000)
    timings["deployments"] = time.perf_counter() - t1

    # Polls: the same number per deployment, evenly over the last 7 days (with jitter).
    t2 = time.perf_counter()
    template = outcome_template()
    span = 7 * 24 * 3600.0
    batch: list[EndpointPoll] = []
    base, extra = divmod(n_polls, len(deployments)) if deployments else (0, 0)
    with transaction.atomic():
        for k, d in enumerate(deployments):
            n = base + (1 if k < extra else 0)
            capacity = 32_000 * d.replicas * d.dp
            for j in range(n):
                at = now - timedelta(seconds=span * (n - j) / n - rng.uniform(0, span / n / 2))
                up = (j + k) % 50 != 0
                running = float(rng.randint(0, 40)) if up else None
                ttft50, itl50 = rng.uniform(0.05, 0.4), rng.uniform(0.008, 0.03)
                derived = {
                    "interval_s": 15.0, "first_scrape": False, "counter_reset": False,
                    "prompt_tokens_per_s": rng.uniform(500, 50_000), "generation_tokens_per_s": rng.uniform(100, 8_000),
                    "prefix_cache_hit_rate": rng.uniform(0.1, 0.9), "preemptions": 0.0, "requests_started": 6.0,
                    "ttft_p50_s": ttft50, "ttft_p95_s": ttft50 * 2.6, "ttft_mean_s": ttft50 * 1.1,
                    "itl_p50_s": itl50, "itl_p95_s": itl50 * 1.5, "itl_mean_s": itl50 * 0.95,
                    "requests_running": running, "requests_waiting": 0.0, "kv_cache_usage": rng.uniform(0.05, 0.95),
                }  # fmt: skip
                reason = f"the model list answered and lists '{d.served_model_id}'" if up else "connection refused"
                outcome = {
                    **template, "status": "up" if up else "down", "base_url": d.base_url,
                    "served_model_id": d.served_model_id, "model_ids": [d.served_model_id], "reason": reason,
                    "max_model_len": d.max_model_len, "polled_at": at.timestamp(),
                    "snapshot": {**template["snapshot"], "requests_running": running, "cache_capacity_tokens": capacity,
                                 "scraped_at": at.timestamp()} if up else None,
                    "derived": derived if up else None,
                }  # fmt: skip
                batch.append(EndpointPoll(
                    deployment=d, polled_at=at, status="up" if up else "down", reason=outcome["reason"],
                    latency_ms=rng.uniform(2, 40) if up else None,
                    requests_running=running, requests_waiting=0.0 if up else None,
                    kv_cache_usage=derived["kv_cache_usage"] if up else None,
                    prefix_cache_hit_rate=derived["prefix_cache_hit_rate"] if up else None,
                    prompt_tokens_per_s=derived["prompt_tokens_per_s"] if up else None,
                    generation_tokens_per_s=derived["generation_tokens_per_s"] if up else None,
                    ttft_p50_ms=ttft50 * 1000 if up else None, ttft_p95_ms=ttft50 * 2600 if up else None,
                    itl_p50_ms=itl50 * 1000 if up else None, itl_p95_ms=itl50 * 1500 if up else None,
                    observed_cache_tokens=capacity if up else None,
                    predicted_cache_tokens=int(capacity * 0.97) if up else None, outcome=outcome,
                ))  # fmt: skip
                if len(batch) >= 5000:
                    EndpointPoll.objects.bulk_create(batch)
                    batch = []
        if batch:
            EndpointPoll.objects.bulk_create(batch)
    # The poller counts every poll per deployment and day (DailyPollCount) in the same transaction;
    # a bulk load must do the same, or spend would see no utilisation.
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO fleet_dailypollcount (deployment_id, day, polls, busy_polls) "
            "SELECT deployment_id, (polled_at AT TIME ZONE 'UTC')::date, count(*), "
            "count(*) FILTER (WHERE requests_running > 0) FROM fleet_endpointpoll GROUP BY 1, 2"
        )
    timings["polls"] = time.perf_counter() - t2

    # Plans: one real search, stored by execute_plan; the other done plans carry a copy of its result.
    t3 = time.perf_counter()
    kimi = models["kimi-k3"]
    request = {"model": kimi, "workload": workloads[0], "max_nodes": 8, "kv_cache_dtypes": ["bf16", "fp8"],
               "modes": ["aggregated", "disaggregated"]}  # fmt: skip
    plan = execute_plan(str(create_plan(request, users["platform"]).pk))
    if plan.status != Plan.Status.DONE:
        raise SystemExit(f"the benchmark plan did not finish: {plan.status} {plan.error}")
    timings["search"] = time.perf_counter() - t3
    plan_skus = list(plan.skus.all())
    others = []
    for p in range(max(0, n_plans - 1)):
        status = ("done", "done", "failed", "cancelled", "queued")[p % 5]
        others.append(Plan(
            model=models[("kimi-k3", "deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b")[p % 4]],
            workload=workloads[p % len(workloads)], options=plan.options, status=status,
            progress=100 if status == "done" else 0, progress_log=plan.progress_log if status == "done" else [],
            candidates_evaluated=plan.candidates_evaluated if status == "done" else 0,
            result=plan.result if status == "done" else None,
            error={"failed": "The search could not run: no layout fits.", "cancelled": "Cancelled on request."}.get(
                status, ""),
            requested_by=users["platform"], started=now if status != "queued" else None,
            finished=now if status in ("done", "failed", "cancelled") else None,
        ))  # fmt: skip
    others = Plan.objects.bulk_create(others)
    through = Plan.skus.through
    through.objects.bulk_create([through(plan_id=o.pk, hardwaresku_id=s.pk) for o in others for s in plan_skus])

    # Decisions: three per workload, each superseding the previous one.
    api = ApiPrice.objects.order_by("-quoted_on").first()
    serving = {w.pk: Deployment.objects.filter(workload=w).order_by("slug").first() for w in workloads}
    n_decisions = 0
    for w in workloads:
        for tier in (Decision.Tier.API, Decision.Tier.RENT, Decision.Tier.SMALL_MODEL):
            data = {"workload": w.slug, "api_price": api.slug}
            data |= {"deployment": serving[w.pk].slug} if serving[w.pk] else {"gpus": 8, "sku": "h100-sxm-80gb"}
            serializer = BreakevenRequestSerializer(data=data)
            serializer.is_valid(raise_exception=True)
            result = run_breakeven(serializer.validated_data)
            Decision.record(workload=w, tier=tier, note=f"Bench decision {tier.label}", figures=result.figures,
                            inputs=result.snapshot, user=users["finance"])  # fmt: skip
            n_decisions += 1
    WorkerHeartbeat.objects.bulk_create(
        [WorkerHeartbeat(worker=f"celery@bench-{n}", last_seen=now, beats=1000 + n) for n in range(2)]
    )
    timings["plans+decisions"] = time.perf_counter() - t3

    t4 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('fleet_endpointpoll'))")
        polls_size = cursor.fetchone()[0]
    timings["vacuum analyze"] = time.perf_counter() - t4
    timings["total"] = time.perf_counter() - t0

    # What the pages are asked about: the biggest cluster, a Kimi K3 deployment serving a workload.
    by_cluster: dict[int, int] = {}
    for d in deployments:
        by_cluster[d.cluster_id] = by_cluster.get(d.cluster_id, 0) + 1
    cluster = max(clusters, key=lambda c: (by_cluster.get(c.pk, 0), c.nodes * c.gpus_per_node, -c.pk))
    k3 = [d for d in deployments if d.model_id == kimi.pk]
    deployment = next((d for d in k3 if d.workload_id), k3[0] if k3 else deployments[0])
    return {
        "viewer": users["viewer"], "cluster": cluster, "deployment": deployment, "plan": plan, "model": kimi,
        "timings": timings, "polls_size": polls_size,
        "counts": {
            "clusters": Cluster.objects.count(), "cluster states": ClusterState.objects.count(),
            "deployments": Deployment.objects.count(), "polls": EndpointPoll.objects.count(),
            "workloads": Workload.objects.count(), "plans": Plan.objects.count(), "decisions": n_decisions,
            "SKUs": len(skus), "models": len(models),
            "GPU quotes": GpuQuote.objects.count(),
        },
        "result_kb": len(str(plan.result)) / 1024,
    }  # fmt: skip


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


def pages(data: dict[str, Any], month: str) -> list[tuple[str, str, dict[str, str]]]:
    hx = {"HTTP_HX_REQUEST": "true"}
    return [
        ("fleet", "/", {}),
        ("fleet-partial", "/", hx),
        ("cluster", f"/clusters/{data['cluster'].slug}/", {}),
        ("deployment", f"/deployments/{data['deployment'].slug}/", {}),
        ("models", "/models/", {}),
        ("model", f"/models/{data['model'].slug}/", {}),
        ("what-if", f"/what-if/?{WHAT_IF_QUERY}", {}),
        ("what-if-partial", f"/what-if/?{WHAT_IF_QUERY}", hx),
        ("plans", "/plans/", {}),
        ("plan", f"/plans/{data['plan'].pk}/", {}),
        ("rent-vs-api", "/rent-vs-api/", {}),
        ("spend", f"/spend/?month={month}", {}),
        ("decisions", "/decisions/", {}),
    ]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (p95 of 30 samples = the 29th smallest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def timed_get(client, url: str, headers: dict[str, str]) -> tuple[float, float, Any]:
    """One request: (wall ms, this process's CPU ms, response); anything but 200 stops the run."""
    cpu, start = time.process_time(), time.perf_counter()
    response = client.get(url, **headers)
    ms, cpu_ms = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
    if response.status_code != 200:
        raise SystemExit(f"GET {url} answered {response.status_code}")
    return ms, cpu_ms, response


def measure(client, name: str, url: str, headers: dict[str, str], repeat: int) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(WARMUPS):
        timed_get(client, url, headers)
    times, cpu = [], []
    for _ in range(repeat):
        ms, cpu_ms, response = timed_get(client, url, headers)
        times.append(ms)
        cpu.append(cpu_ms)
    size = len(response.content)
    with CaptureQueriesContext(connection) as ctx:
        timed_get(client, url, headers)
    return {
        "name": name, "url": url, "median": statistics.median(times), "p95": percentile(times, 95),
        "min": min(times), "max": max(times), "cpu": statistics.median(cpu), "queries": len(ctx.captured_queries),
        "kb": size / 1024, "sql_ms": sum(float(q["time"]) for q in ctx.captured_queries) * 1000,
    }  # fmt: skip


def profile(client, name: str, url: str, headers: dict[str, str], top: int = 30) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        timed_get(client, url, headers)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    print(f"\n--- cProfile of 5 x GET {url} ({name}), by cumulative time ---")
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    print(out.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=100_000)
    parser.add_argument("--plans", type=int, default=20, help="plans stored (one run for real)")
    parser.add_argument("--repeat", type=int, default=30, help="timed requests per page (after 2 warm-ups)")
    parser.add_argument("--profile", action="append", default=[], metavar="PAGE", help="cProfile this page")
    args = parser.parse_args()
    if args.clusters < 1 or args.deployments < 1 or args.polls < 0 or args.repeat < 1:
        parser.error("--clusters, --deployments and --repeat must be at least 1, --polls at least 0")

    var_dir = tempfile.mkdtemp(prefix="fleetcap-bench-pages-")
    created = False
    try:
        create_database()
        created = True
        t0 = time.perf_counter()
        setup_django(var_dir)
        check_templates()
        migrated = time.perf_counter() - t0
        data = build_data(args.clusters, args.deployments, args.polls, args.plans)

        from django.db import connection
        from django.test import Client
        from django.utils import timezone

        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            pg_version = cursor.fetchone()[0]
        print(
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"PostgreSQL {pg_version} on 127.0.0.1"
        )
        print("Data:", ", ".join(f"{v:,} {k}" for k, v in data["counts"].items()))
        print(f"  polls table with indexes: {data['polls_size']}; plan result JSON: {data['result_kb']:.0f} KB")
        print(f"  cluster page: {data['cluster'].slug}; deployment page: {data['deployment'].slug}")
        print(
            f"Setup: migrate + catalogue {migrated:.1f} s; "
            + ", ".join(f"{k} {v:.1f} s" for k, v in data["timings"].items())
        )

        print("Load average before measuring: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        client = Client(HTTP_HOST="localhost")
        client.force_login(data["viewer"])
        month = timezone.now().strftime("%Y-%m")
        results = []
        todo = pages(data, month)
        for name, url, headers in todo:
            results.append(measure(client, name, url, headers, args.repeat))
            r = results[-1]
            print(f"  measured {name:16} median {r['median']:8.1f} ms  p95 {r['p95']:8.1f} ms", flush=True)

        print(f"\n{args.repeat} timed requests per page after {WARMUPS} warm-ups; target p95 < {TARGET_P95_MS:.0f} ms")
        print()
        print(
            "| page | URL | median ms | p95 ms | max ms | CPU ms (median) | SQL queries | SQL ms | KB | p95 < 100 ms |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in results:
            url = r["url"] if len(r["url"]) <= 40 else r["url"][:37] + "..."
            ok = "yes" if r["p95"] < TARGET_P95_MS else "**no**"
            hx = " (HX-Request)" if r["name"].endswith("-partial") else ""
            print(
                f"| {r['name']} | `{url}`{hx} | {r['median']:.1f} | {r['p95']:.1f} | {r['max']:.1f} | {r['cpu']:.1f} | "
                f"{r['queries']} | {r['sql_ms']:.1f} | {r['kb']:.0f} | {ok} |"
            )
        print("Load average after measuring: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        missed = [r["name"] for r in results if r["p95"] >= TARGET_P95_MS]
        print(f"\nOver the target: {', '.join(missed)}" if missed else "\nEvery page meets the target.")

        by_name = {name: (url, headers) for name, url, headers in todo}
        for name in args.profile:
            if name not in by_name:
                print(f"(no page named {name!r}; pages: {', '.join(by_name)})")
                continue
            profile(client, name, *by_name[name])
        return 0
    finally:
        if created:
            drop_database()
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
