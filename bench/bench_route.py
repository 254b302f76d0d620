"""Routing advisor benchmark: the route service and ``POST /api/v1/route/`` in-process, 100 deployments.

A throwaway SQLite database in a temporary folder (no server needed): the catalogue, 20 clusters of
the page benchmark's templates (bench/pages_fleet.py) with 5 deployments each (100), every one polled
a few seconds ago with live metrics, a speed correction for every third, the catalogue's GPU quotes and
four hosted API prices. Then, per case, ``--runs`` calls timed with ``time.perf_counter()`` (p50 and p95,
nearest rank) and the queries of one call counted:

- ``service, same class``: ``planner.routing.route()`` for one request class asked again and again (the
  engine's memo of ``size()``/``estimate()`` warm: a gateway's steady traffic classes);
- ``service, new class each call``: the prompt length changes on every call, so every estimate is
  computed afresh (the memo cold; the worst case);
- ``HTTP, same class`` / ``HTTP, new class each call``: the same through ``POST /api/v1/route/`` with
  Django's test client and an API token (middleware, authentication, permissions, serializer, JSON);
- ``LiteLLM export``: ``GET /api/v1/route/litellm/``.

Usage: ``.venv/bin/python bench/bench_route.py [--runs 200]``. Results: docs/benchmarks.md, "Routing".
"""

from __future__ import annotations

import argparse
import io
import os
import random
import secrets
import sys
import tempfile
import time
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pages_fleet import TEMPLATE_CYCLE, TEMPLATES

N_CLUSTERS, PER_CLUSTER = 20, 5
TARGET_P95_MS = 20.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def setup(var_dir: str) -> None:
    os.environ["FLEETCAP_VAR_DIR"] = var_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("FLEETCAP_SECRET_KEY", secrets.token_urlsafe(50))
    os.environ["FLEETCAP_DEBUG"] = "0"
    os.environ.setdefault("FLEETCAP_LOG_LEVEL", "WARNING")
    os.environ["FLEETCAP_API_THROTTLE_USER"] = "1000000/min"
    os.environ["DJANGO_SETTINGS_MODULE"] = "fleet.project.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_catalog", stdout=io.StringIO())


def build(seed: int = 7) -> int:
    """The fleet: 100 deployments on 20 clusters, polled, a third corrected; returns the deployment count."""
    from django.utils import timezone

    from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider
    from planner.corrections import serving_of
    from planner.models import SpeedCorrection

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
    made = []
    for i in range(N_CLUSTERS):
        template = TEMPLATE_CYCLE[i % len(TEMPLATE_CYCLE)]
        sku_slug, nodes, recipes = TEMPLATES[template]
        sku = skus[sku_slug]
        cluster = Cluster.objects.create(
            slug=f"c{i:02d}-{template}",
            name=f"{template} {i}",
            sku=sku,
            nodes=nodes,
            provider=bench,
            team="t",
        )
        for rank in range(PER_CLUSTER):
            model_slug, tp, pp, dp, ep, replicas, kv, max_len, engine = recipes[rank % len(recipes)]
            made.append(
                Deployment(
                    slug=f"{cluster.slug}-{model_slug}-{rank}",
                    cluster=cluster,
                    model=models[model_slug],
                    tp=tp,
                    pp=pp,
                    dp=dp,
                    ep=ep,
                    replicas=replicas,
                    engine=engine,
                    kv_cache_dtype=kv,
                    max_model_len=max_len,
                    base_url=f"http://10.0.{i}.{10 + rank}:8000",
                    served_model_id=f"org/{model_slug}",
                    last_status="up" if (i * PER_CLUSTER + rank) % 23 else "down",
                    last_polled=now - timedelta(seconds=rng.randint(1, 15)),
                    last_metrics={
                        "requests_running": float(rng.randint(0, 40)),
                        "requests_waiting": float(rng.randint(0, 3)),
                        "kv_cache_usage": round(rng.uniform(0.05, 0.95), 4),
                    },
                )
            )
    deployments = Deployment.objects.bulk_create(made)
    fits = Deployment.objects.select_related("cluster__sku", "model").order_by("slug")
    SpeedCorrection.objects.bulk_create(
        [
            SpeedCorrection(
                deployment=d,
                fitted_at=now - timedelta(hours=1),
                window_hours=24,
                polls=100,
                ignored_polls=0,
                decode_factor=rng.uniform(0.8, 1.5),
                decode_samples=50,
                decode_residual=0.1,
                prefill_factor=rng.uniform(0.8, 1.5),
                prefill_samples=50,
                prefill_residual=0.1,
                serving=serving_of(d),
                assumptions=[],
            )
            for k, d in enumerate(fits)
            if k % 3 == 0
        ]
    )
    today = now.date()
    for slug, model_slug, hit, miss, out in (
        ("llama-hosted", "llama-3.1-70b", "0.10", "0.90", "0.90"),
        ("qwen-hosted", "qwen3-32b", "0.05", "0.40", "0.80"),
        ("deepseek-hosted", "deepseek-v3", "0.07", "0.27", "1.10"),
        ("gpt-oss-hosted", "gpt-oss-120b", "0.02", "0.15", "0.60"),
    ):
        ApiPrice.objects.create(
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
    return len(deployments)


def timed(call, runs: int) -> dict[str, float]:
    """Wall-clock and CPU (this process, ``time.process_time``) ms per call: p50, p95, max."""
    call(0)  # the first call imports and warms what every later call shares
    times, cpu = [], []
    for k in range(1, runs + 1):
        start, cpu_start = time.perf_counter(), time.process_time()
        call(k)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - cpu_start) * 1000)
    return {
        "p50": percentile(times, 50),
        "p95": percentile(times, 95),
        "max": max(times),
        "cpu50": percentile(cpu, 50),
        "cpu95": percentile(cpu, 95),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleetcap-bench-route-") as var_dir:
        t0 = time.perf_counter()
        setup(var_dir)
        n = build()
        from fleet.models import ApiPrice

        apis = ApiPrice.objects.count()
        print(f"fleet: {n} deployments, {apis} API prices (built in {time.perf_counter() - t0:.1f} s, SQLite)")

        from django.contrib.auth.models import Group, User
        from django.db import connection, reset_queries
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        import fleet.project.wsgi  # noqa: F401 (the web process's start-up: its GC thresholds)
        from fleet.tokens import create_token
        from planner.engine import RequestClass
        from planner.routing import route

        user = User.objects.create_user("bench-viewer")
        user.groups.add(Group.objects.get(name="viewer"))
        key = create_token(user, name="bench", scope="write", days=1).key
        client = Client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="localhost")
        body = {
            "context_tokens": 16384,
            "prompt_tokens": 4000,
            "output_tokens": 300,
            "prefix_reuse_fraction": 0.8,
            "ttft_slo_ms": 2000,
            "tpot_slo_ms": 50,
        }

        def service(k: int, fresh: bool) -> None:
            prompt = 4000 + (k if fresh else 0)
            route(RequestClass(**{**body, "prompt_tokens": prompt}))

        def http(k: int, fresh: bool, path: str = "/api/v1/route/") -> None:
            data = {**body, "prompt_tokens": 4000 + (k + 1_000 if fresh else 0)}
            r = client.post(path, data, content_type="application/json")
            assert r.status_code == 200, r.content[:300]

        def export(k: int) -> None:
            r = client.get("/api/v1/route/litellm/")
            assert r.status_code == 200

        result = route(RequestClass(**body)).result
        eligible = sum(d.eligible for d in result.destinations)
        print(f"one ranking: {len(result.destinations)} destinations, {eligible} eligible, best {result.best.slug}")
        with CaptureQueriesContext(connection) as service_queries:
            route(RequestClass(**body))
        reset_queries()
        http(0, False)
        with CaptureQueriesContext(connection) as http_queries:
            http(0, False)
        cases = [
            ("service, same class", lambda k: service(k, False), len(service_queries)),
            ("service, new class each call", lambda k: service(k, True), len(service_queries)),
            ("HTTP POST /api/v1/route/, same class", lambda k: http(k, False), len(http_queries)),
            ("HTTP POST /api/v1/route/, new class each call", lambda k: http(k, True), len(http_queries)),
            ("HTTP GET /api/v1/route/litellm/", export, None),
        ]
        print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
        print(f"\n{'case':<48} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'CPU p50':>8} {'CPU p95':>8} {'queries':>8}")
        verdicts = []
        for name, call, queries in cases:
            figures = timed(call, args.runs)
            if "litellm" not in name:
                verdicts.append((name, figures["p95"], figures["cpu95"]))
            q = "-" if queries is None else str(queries)
            print(
                f"{name:<48} {figures['p50']:>8.2f} {figures['p95']:>8.2f} {figures['max']:>8.2f} "
                f"{figures['cpu50']:>8.2f} {figures['cpu95']:>8.2f} {q:>8}"
            )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(f"\ntarget: p95 under {TARGET_P95_MS:.0f} ms with {n} deployments")
        for name, wall, cpu in verdicts:
            wall_ok = "met" if wall < TARGET_P95_MS else "not met"
            cpu_ok = "met" if cpu < TARGET_P95_MS else "not met"
            print(f"  {name:<48} wall p95 {wall:7.2f} ms {wall_ok:<8} CPU p95 {cpu:7.2f} ms {cpu_ok}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
