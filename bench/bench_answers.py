"""Stored answers benchmark: capacity snapshots of 1,000 deployments, breakevens of 200 workloads and
the decisions' reviews, and the fleet page reading 1,000 deployments (issue 17).

A throwaway database (SQLite in a temporary folder; or ``--database-url postgres://...`` for a server:
that database is created, and the run fails if it exists, never dropping it; dropped at the end if this
run created it, bench/throwaway.py): the catalogue, 25 clusters of the page benchmark's templates
(bench/pages_fleet.py) with 40 deployments each (1,000: vLLM, SGLang and llama.cpp, dense, MoE and
hybrid models; the clusters are sized to hold them), every one polled with live metrics and a
day of traffic in the poller's daily token counters, 200 workloads served by the first 200 deployments,
four hosted API prices, the catalogue's GPU quotes and one recorded decision per workload for the first 50. Then:

- ``refresh_snapshots()`` over every deployment (the work ``planner.refresh_answers`` does, here in one
  process: batches of ``SNAPSHOT_BATCH``), twice: the first creates the rows, the second replaces them;
  wall time and queries;
- ``refresh_breakevens()`` over the 200 workloads and ``review_decisions()`` over the 50 decisions;
- the fleet page (``GET /``, every one of the 1,000 deployments on the page: 25 clusters, one page) and
  its HTMX refresh, ``--runs`` each after one warm-up: wall clock p50/p95 (nearest rank) and queries;
- for comparison, computing the same 1,000 rows' headroom now (``planner.headroom.headroom``: what the
  page did before it read snapshots).

Usage: ``.venv/bin/python bench/bench_answers.py [--runs 50] [--database-url URL]``.
Results: docs/benchmarks.md, "Stored answers".
"""

from __future__ import annotations

import argparse
import io
import math
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pages_fleet import TEMPLATE_CYCLE, TEMPLATES, WORKLOADS

N_CLUSTERS, PER_CLUSTER, N_WORKLOADS, N_DECISIONS = 25, 40, 200, 50
TARGET_PAGE_P95_MS = 100.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def setup(var_dir: str, database_url: str | None) -> None:
    os.environ["FLEETCAP_VAR_DIR"] = var_dir
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("FLEETCAP_SECRET_KEY", secrets.token_urlsafe(50))
    os.environ["FLEETCAP_DEBUG"] = "0"
    os.environ.setdefault("FLEETCAP_LOG_LEVEL", "WARNING")
    os.environ["DJANGO_SETTINGS_MODULE"] = "fleet.project.settings"
    # The broker is not needed: the receivers' messages are recorded and their publishing fails fast.
    os.environ["CELERY_BROKER_URL"] = "redis://127.0.0.1:9/0"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_catalog", stdout=io.StringIO())


def build(seed: int = 17) -> dict[str, int]:
    """The fleet (bulk inserts: no receivers run, as for records loaded in bulk)."""
    from django.utils import timezone

    from fleet.models import (
        ApiPrice,
        Cluster,
        DailyPollCount,
        Deployment,
        GpuQuote,
        HardwareSku,
        ModelSpec,
        Provider,
        Workload,
    )

    rng = random.Random(seed)
    now = timezone.now()
    skus = {s.slug: s for s in HardwareSku.objects.all()}
    models = {m.slug: m for m in ModelSpec.objects.all()}
    # The clusters' provider quotes the seeds' 2.50 USD per GPU-hour for every SKU (the seeds' rate as a
    # provider's own quote: the seeds' assumption itself is in force nowhere), so every cost is priced.
    bench = Provider.objects.ensure("bench")
    for sku in skus.values():
        GpuQuote.objects.get_or_create(sku=sku, provider=bench, pricing_kind="on-demand", quoted_on=date(2026, 7, 17),
                                       defaults={"usd_per_gpu_hour": Decimal("2.50")})  # fmt: skip
    clusters, plans = [], []
    for i in range(N_CLUSTERS):
        template = TEMPLATE_CYCLE[i % len(TEMPLATE_CYCLE)]
        sku_slug, _, recipes = TEMPLATES[template]
        sku = skus[sku_slug]
        mine = [recipes[k % len(recipes)] for k in range(PER_CLUSTER)]
        gpus = sum(tp * pp * dp * replicas for _, tp, pp, dp, _, replicas, _, _, _ in mine)
        nodes = math.ceil(gpus / sku.gpus_per_node)
        clusters.append(
            Cluster(
                slug=f"c{i:02d}-{template}",
                name=f"{template} {i}",
                sku=sku,
                nodes=nodes,
                provider=bench,
                team="t",
            )
        )
        plans.append(mine)
    clusters = Cluster.objects.bulk_create(clusters)
    workloads = Workload.objects.bulk_create(
        [Workload(slug=f"w{k:03d}", name=f"Workload {k}", team="t", **_workload_figures(k)) for k in range(N_WORKLOADS)]
    )
    made = []
    for i, (cluster, mine) in enumerate(zip(clusters, plans, strict=True)):
        for rank, (model_slug, tp, pp, dp, ep, replicas, kv, max_len, engine) in enumerate(mine):
            n = i * PER_CLUSTER + rank
            made.append(
                Deployment(
                    slug=f"{cluster.slug}-{model_slug}-{rank}",
                    cluster=cluster,
                    model=models[model_slug],
                    workload=workloads[n] if n < N_WORKLOADS else None,
                    tp=tp,
                    pp=pp,
                    dp=dp,
                    ep=ep,
                    replicas=replicas,
                    engine=engine,
                    kv_cache_dtype=kv,
                    max_model_len=max_len,
                    base_url=f"http://10.1.{i}.{rank}:8000",
                    served_model_id=f"org/{model_slug}",
                    last_status="up",
                    last_polled=now - timedelta(seconds=rng.randint(1, 15)),
                    last_metrics={"requests_running": float(rng.randint(0, 40)), "kv_cache_usage": 0.5},
                )
            )
    deployments = Deployment.objects.bulk_create(made)
    # A day of traffic per deployment, as the poller's daily counters keep it (rate x seconds covered).
    yesterday = (now - timedelta(days=1)).date()
    DailyPollCount.objects.bulk_create(
        [
            DailyPollCount(
                deployment=d,
                day=yesterday,
                polls=5760,
                busy_polls=4800,
                running_polls=5760,
                running_sum=57600.0,
                output_tokens=(rate := float(rng.randint(200, 2000))) * 86400,
                output_seconds=86400.0,
                prompt_tokens=rate * 4 * 86400,
                prompt_seconds=86400.0,
            )
            for d in deployments
        ],
        batch_size=2000,
    )
    today = now.date()
    for slug, model_slug, hit, miss, out in (
        ("llama-hosted", "llama-3.1-70b", "0.10", "0.90", "0.90"),
        ("qwen-hosted", "qwen3-32b", "0.05", "0.40", "0.80"),
        ("deepseek-hosted", "deepseek-v3", "0.07", "0.27", "1.10"),
        ("gpt-oss-hosted", "gpt-oss-120b", "0.02", "0.15", "0.60"),
    ):
        ApiPrice.objects.bulk_create(
            [
                ApiPrice(
                    slug=slug,
                    provider="bench",
                    model_name=model_slug,
                    model=models[model_slug],
                    input_cache_hit_usd_per_mtok=Decimal(hit),
                    input_cache_miss_usd_per_mtok=Decimal(miss),
                    output_usd_per_mtok=Decimal(out),
                    context_window=131072,
                    quoted_on=today,
                )
            ]
        )
    return {"clusters": len(clusters), "deployments": len(deployments), "workloads": len(workloads)}


def _workload_figures(k: int) -> dict:
    base = WORKLOADS[k % len(WORKLOADS)]
    return {name: base[name] for name in (
        "requests_per_day", "mean_prompt_tokens", "mean_output_tokens", "p95_context_tokens",
        "prefix_cache_hit_rate", "peak_concurrency", "ttft_slo_ms", "tpot_slo_ms",
    )}  # fmt: skip


def timed_once(call) -> tuple[float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        call()
        wall = time.perf_counter() - start
    return wall, len(queries)


def pages(runs: int) -> int:
    """Time the fleet page in this (fresh) process against the database the parent built."""
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    import fleet.project.wsgi  # noqa: F401 (the web process's start-up: its GC thresholds)
    from fleet.models import Deployment
    from planner.headroom import headroom

    # Before snapshots the page computed every row's headroom itself: the first view after a start or a
    # change with the engine's memo cold, later views with it warm (the figure for comparison).
    deployments = list(Deployment.objects.select_related("cluster__sku", "model", "workload"))
    cold, _ = timed_once(lambda: headroom(deployments))
    warm, _ = timed_once(lambda: headroom(deployments))
    print(
        f"headroom of 1,000 rows computed in the request (before): {cold * 1000:.0f} ms cold, {warm * 1000:.0f} ms warm"
    )
    client = Client(HTTP_HOST="localhost")
    client.force_login(User.objects.get(username="bench-viewer"))
    print(f"\n{'page (fresh process)':<48} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'queries':>8} {'rows':>6}")
    verdicts = []
    for label, headers in (("GET / (1,000 deployments)", {}), ("GET / HTMX refresh", {"HTTP_HX_REQUEST": "true"})):
        r = client.get("/", **headers)
        assert r.status_code == 200
        shown = r.content.decode().count("<tr data-deployment=")
        _, queries = timed_once(lambda h=headers: client.get("/", **h))
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            client.get("/", **headers)
            times.append((time.perf_counter() - start) * 1000)
        p95 = percentile(times, 95)
        verdicts.append((label, p95))
        print(f"{label:<48} {percentile(times, 50):>8.1f} {p95:>8.1f} {max(times):>8.1f} {queries:>8} {shown:>6}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for label, p95 in verdicts:
        verdict = "met" if p95 < TARGET_PAGE_P95_MS else "not met"
        print(f"target p95 < {TARGET_PAGE_P95_MS:.0f} ms: {label}: {p95:.1f} ms {verdict}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--database-url", default=None, help="postgres://... (a database made and dropped)")
    parser.add_argument("--pages-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pages_only:
        return pages(args.runs)
    if args.database_url:
        return with_database(args)
    return run(args)


def with_database(args: argparse.Namespace) -> int:
    """Create the database ``--database-url`` names (an existing one is an error, never dropped), run,
    drop it (PostgreSQL, psycopg 3)."""
    from urllib.parse import urlsplit

    from throwaway import ThrowawayDatabase

    server, name = args.database_url.rsplit("/", 1)[0], urlsplit(args.database_url).path.lstrip("/")
    database = ThrowawayDatabase("answers", server_url=server, name=name)
    database.create()
    try:
        return run(args)
    finally:
        database.drop()


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="fleetcap-bench-answers-") as var_dir:
        t0 = time.perf_counter()
        setup(var_dir, args.database_url)
        counts = build()
        print(f"fleet: {counts} (built in {time.perf_counter() - t0:.1f} s)")
        from django.conf import settings
        from django.contrib.auth.models import Group, User

        from planner.snapshots import refresh_snapshots

        engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        print(f"database: {engine}; batch {settings.SNAPSHOT_BATCH}; load average {os.getloadavg()[0]:.2f}")
        rows = []
        for label in ("snapshots, first run (creates)", "snapshots, second run (replaces)"):
            summary = {}
            wall, queries = timed_once(lambda s=summary: s.update(refresh_snapshots().as_dict()))
            rows.append((label, wall, queries, summary))
        breakevens = _breakevens_and_reviews()
        rows.extend(breakevens)
        print(f"\n{'work':<48} {'wall s':>8} {'queries':>8}  result")
        for label, wall, queries, summary in rows:
            print(f"{label:<48} {wall:>8.2f} {queries:>8}  {summary}")

        User.objects.create_user("bench-viewer").groups.add(Group.objects.get(name="viewer"))
        # The page is timed in a fresh process, as a web worker serves it: this one holds the engine's
        # memo of every result the worker's part computed (tens of thousands of objects the garbage
        # collector walks), which a web process never computes.
        env = {**os.environ}
        child = subprocess.run(
            [sys.executable, __file__, "--pages-only", "--runs", str(args.runs)], env=env, check=False
        )
        if child.returncode:
            return child.returncode
    return 0


def _breakevens_and_reviews() -> list:
    """Breakevens of every workload and reviews of decisions recorded on 50 of them."""
    from fleet.models import Workload
    from planner.breakeven import BreakevenRequest
    from planner.decisions import record_decision
    from planner.reviews import refresh_breakevens, review_decisions

    out = []
    summary: dict = {}
    wall, queries = timed_once(lambda: summary.update(refresh_breakevens()))
    out.append(("breakevens of 200 workloads", wall, queries, summary))
    made = 0
    for w in Workload.objects.filter(deployments__isnull=False).order_by("slug")[:N_DECISIONS]:
        d = w.deployments.first()
        api = {
            "llama-3.1-70b": "llama-hosted",
            "qwen3-32b": "qwen-hosted",
            "deepseek-v3": "deepseek-hosted",
            "gpt-oss-120b": "gpt-oss-hosted",
        }.get(d.model.slug)
        if api is None:
            continue
        record_decision(workload=w.slug, tier=1, comparison=BreakevenRequest(deployment=d.slug, api_price=api))
        made += 1
    reviewed: dict = {}
    wall, queries = timed_once(lambda: reviewed.update(review_decisions()))
    out.append((f"reviews of {made} decisions", wall, queries, reviewed))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
