"""Data for bench/bench_pages.py (and bench/load/prepare.py): Django set up on the run's throwaway
database (bench/throwaway.py makes it) and a fleet of the benchmark's size.

Cluster templates (each with deployments checked to fit), workloads, polls with realistic metric
columns and outcome JSON, plans (one real search), decisions and quotes. Kept apart from the
measuring script so each stays small.
"""

from __future__ import annotations

import io
import os
import random
import secrets
import sys
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pages_fleet import (
    PROVIDERS,
    REGIONS,
    TEAMS,
    TEMPLATE_CYCLE,
    TEMPLATES,
    WORKLOADS,
    outcome_template,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def setup_django(var_dir: str, database_url: str) -> None:
    """Environment first (settings read it at import: ``DATABASE_URL`` the run's own database), the web
    process's start-up (``configure_web_process``: its garbage-collector thresholds), then
    ``django.setup()``, migrate, catalogue."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["FLEETCAP_VAR_DIR"] = var_dir
    # A throwaway database and folder get a throwaway secret key (settings only read one).
    os.environ.setdefault("FLEETCAP_SECRET_KEY", secrets.token_urlsafe(50))
    os.environ["FLEETCAP_DEBUG"] = "0"
    os.environ.setdefault("FLEETCAP_LOG_LEVEL", "WARNING")
    os.environ["DJANGO_SETTINGS_MODULE"] = "fleet.project.settings"
    import django

    from fleet.project.webprocess import configure_web_process

    # The web process's start-up (fleet/project/wsgi.py calls the same): its collector thresholds.
    configure_web_process()
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_catalog", stdout=io.StringIO())


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
        ModelSpec,
        Provider,
        WorkerHeartbeat,
        Workload,
    )
    from planner.breakeven import BreakevenRequest
    from planner.decisions import record_decision
    from planner.models import Decision, Plan
    from planner.plans import PlanRequest, create_plan, execute_plan

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
        clusters.append(
            Cluster(
                slug=f"c{i:04d}-{template}",
                name=f"{template.upper()} {i:04d}",
                sku=sku,
                nodes=nodes * (2 if i % 10 == 9 else 1),
                gpus_per_node=sku.gpus_per_node,
                provider=Provider.objects.ensure(PROVIDERS[i % len(PROVIDERS)]),
                region=REGIONS[i % len(REGIONS)],
                team=TEAMS[i % len(TEAMS)],
                hours_per_day=24 if i % 7 else 12,
                status="active" if i % 25 else "planned",
            )
        )
    with transaction.atomic():
        clusters = Cluster.objects.bulk_create(clusters)
        first_of_month = today.replace(day=1)
        ClusterState.objects.bulk_create(
            [
                ClusterState(
                    cluster=c,
                    effective_from=first_of_month if i % 10 == 0 else today - timedelta(days=30 + (i * 37) % 335),
                    sku=c.sku,
                    nodes=c.nodes,
                    gpus_per_node=c.gpus_per_node,
                    hours_per_day=c.hours_per_day,
                    status=c.status,
                    team=c.team,
                    provider=c.provider,
                )
                for i, c in enumerate(clusters)
            ]
        )
        # Each cluster priced by its provider's own quote for its SKU (a fleet's contracts), dated before
        # any state: since issue 24 nothing is priced at the seeds' 2.50 assumption, and a provider without
        # a quote or list price leaves its clusters unpriced (the decisions below need a price).
        pairs = sorted({(c.provider_id, c.sku_id) for c in clusters})
        GpuQuote.objects.bulk_create(
            [
                GpuQuote(
                    sku_id=sku_id, provider_id=provider_id, usd_per_gpu_hour=Decimal("2.40") + Decimal(n % 7) / 4,
                    quoted_on=today - timedelta(days=400), source="bench fleet: the provider's own quote",
                )
                for n, (provider_id, sku_id) in enumerate(pairs)
            ]
        )  # fmt: skip
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
                "requests_running": running,
                "requests_waiting": float(rng.randint(0, 3)),
                "kv_cache_usage": round(rng.uniform(0.05, 0.95), 4),
                "prefix_cache_hit_rate": round(rng.uniform(0.1, 0.9), 4),
                "prompt_tokens_per_s": round(rng.uniform(500, 50_000), 1),
                "generation_tokens_per_s": round(rng.uniform(100, 8_000), 1),
                "ttft_p50_ms": round(rng.uniform(50, 400), 1),
                "ttft_p95_ms": round(rng.uniform(300, 2_000), 1),
                "itl_p50_ms": round(rng.uniform(8, 30), 2),
                "itl_p95_ms": round(rng.uniform(20, 60), 2),
                "observed_cache_tokens": 32_000 * replicas * dp,
                "predicted_cache_tokens": 31_000 * replicas * dp,
            }
        deployments.append(
            Deployment(
                slug=f"{cluster.slug}-{model_slug}-{rank}",
                cluster=cluster,
                model=model,
                workload=workloads[k % len(workloads)] if k % 3 == 0 else None,
                replicas=replicas,
                tp=tp,
                pp=pp,
                dp=dp,
                ep=ep,
                engine=engine,
                base_url=f"http://10.{i // 250}.{i % 250}.{10 + rank}:8000",
                served_model_id=f"org/{model_slug}",
                kv_cache_dtype=kv,
                max_model_len=max_len,
                poll_interval_s=15,
                last_status=status,
                last_status_changed=now - timedelta(hours=rng.randint(1, 500)),
                last_polled=now - timedelta(seconds=rng.randint(1, 15)),
                last_metrics=metrics,
            )
        )
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
                    "interval_s": 15.0,
                    "first_scrape": False,
                    "counter_reset": False,
                    "prompt_tokens_per_s": rng.uniform(500, 50_000),
                    "generation_tokens_per_s": rng.uniform(100, 8_000),
                    "prefix_cache_hit_rate": rng.uniform(0.1, 0.9),
                    "preemptions": 0.0,
                    "requests_started": 6.0,
                    "ttft_p50_s": ttft50,
                    "ttft_p95_s": ttft50 * 2.6,
                    "ttft_mean_s": ttft50 * 1.1,
                    "itl_p50_s": itl50,
                    "itl_p95_s": itl50 * 1.5,
                    "itl_mean_s": itl50 * 0.95,
                    "requests_running": running,
                    "requests_waiting": 0.0,
                    "kv_cache_usage": rng.uniform(0.05, 0.95),
                }
                reason = f"the model list answered and lists '{d.served_model_id}'" if up else "connection refused"
                outcome = {
                    **template,
                    "status": "up" if up else "down",
                    "base_url": d.base_url,
                    "served_model_id": d.served_model_id,
                    "model_ids": [d.served_model_id],
                    "reason": reason,
                    "max_model_len": d.max_model_len,
                    "polled_at": at.timestamp(),
                    "snapshot": {
                        **template["snapshot"],
                        "requests_running": running,
                        "cache_capacity_tokens": capacity,
                        "scraped_at": at.timestamp(),
                    }
                    if up
                    else None,
                    "derived": derived if up else None,
                }
                batch.append(
                    EndpointPoll(
                        deployment=d,
                        polled_at=at,
                        status="up" if up else "down",
                        reason=outcome["reason"],
                        latency_ms=rng.uniform(2, 40) if up else None,
                        requests_running=running,
                        requests_waiting=0.0 if up else None,
                        kv_cache_usage=derived["kv_cache_usage"] if up else None,
                        prefix_cache_hit_rate=derived["prefix_cache_hit_rate"] if up else None,
                        prompt_tokens_per_s=derived["prompt_tokens_per_s"] if up else None,
                        generation_tokens_per_s=derived["generation_tokens_per_s"] if up else None,
                        ttft_p50_ms=ttft50 * 1000 if up else None,
                        ttft_p95_ms=ttft50 * 2600 if up else None,
                        itl_p50_ms=itl50 * 1000 if up else None,
                        itl_p95_ms=itl50 * 1500 if up else None,
                        observed_cache_tokens=capacity if up else None,
                        predicted_cache_tokens=int(capacity * 0.97) if up else None,
                        outcome=outcome,
                    )
                )
                if len(batch) >= 5000:
                    EndpointPoll.objects.bulk_create(batch)
                    batch = []
        if batch:
            EndpointPoll.objects.bulk_create(batch)
    # The poller counts every poll per deployment and day (DailyPollCount) in the same transaction;
    # a bulk load must do the same, or spend would see no utilisation.
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO fleet_dailypollcount (deployment_id, day, polls, busy_polls, running_polls, running_sum) "
            "SELECT deployment_id, (polled_at AT TIME ZONE 'UTC')::date, count(*), "
            "count(*) FILTER (WHERE requests_running > 0), "
            "count(*) FILTER (WHERE requests_running IS NOT NULL OR status <> 'up'), "
            "coalesce(sum(requests_running), 0) FROM fleet_endpointpoll GROUP BY 1, 2"
        )
    timings["polls"] = time.perf_counter() - t2

    # Plans: one real search, stored by execute_plan; the other done plans carry a copy of its result and summary.
    t3 = time.perf_counter()
    kimi = models["kimi-k3"]
    request = PlanRequest(model=kimi.slug, workload=workloads[0].slug, max_nodes=8)
    plan = execute_plan(str(create_plan(request, users["platform"]).pk))
    if plan.status != Plan.Status.DONE:
        raise SystemExit(f"the benchmark plan did not finish: {plan.status} {plan.error}")
    timings["search"] = time.perf_counter() - t3
    plan_skus = list(plan.skus.all())
    others = []
    for p in range(max(0, n_plans - 1)):
        status = ("done", "done", "failed", "cancelled", "queued")[p % 5]
        others.append(
            Plan(
                model=models[("kimi-k3", "deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b")[p % 4]],
                workload=workloads[p % len(workloads)],
                options=plan.options,
                status=status,
                progress=100 if status == "done" else 0,
                progress_log=plan.progress_log if status == "done" else [],
                candidates_evaluated=plan.candidates_evaluated if status == "done" else 0,
                result=plan.result if status == "done" else None,
                summary=plan.summary if status == "done" else None,
                error={"failed": "The search could not run: no layout fits.", "cancelled": "Cancelled on request."}.get(
                    status, ""
                ),
                requested_by=users["platform"],
                started=now if status != "queued" else None,
                finished=now if status in ("done", "failed", "cancelled") else None,
            )
        )
    others = Plan.objects.bulk_create(others)
    through = Plan.skus.through
    through.objects.bulk_create([through(plan_id=o.pk, hardwaresku_id=s.pk) for o in others for s in plan_skus])

    # Decisions: three per workload, each superseding the previous one.
    api = ApiPrice.objects.order_by("-quoted_on").first()
    serving = {w.pk: Deployment.objects.filter(workload=w).order_by("slug").first() for w in workloads}
    n_decisions = 0
    for w in workloads:
        for tier in (Decision.Tier.API, Decision.Tier.RENT, Decision.Tier.SMALL_MODEL):
            where = {"deployment": serving[w.pk].slug} if serving[w.pk] else {"gpus": 8, "sku": "h100-sxm-80gb"}
            comparison = BreakevenRequest(workload=w.slug, api_price=api.slug, **where)
            record_decision(
                workload=w.slug,
                tier=tier,
                note=f"Bench decision {tier.label}",
                comparison=comparison,
                user=users["finance"],
            )
            n_decisions += 1
    WorkerHeartbeat.objects.bulk_create(
        [WorkerHeartbeat(worker=f"celery@bench-{n}", last_seen=now, beats=1000 + n) for n in range(2)]
    )
    timings["plans+decisions"] = time.perf_counter() - t3

    # The workers' part (planner.refresh_answers): every deployment's capacity snapshot, every workload's
    # breakeven and every decision's review, stored, as pages read them (bulk inserts send no recomputation).
    t5 = time.perf_counter()
    from planner.reviews import refresh_breakevens, review_decisions
    from planner.snapshots import refresh_snapshots

    refresh_snapshots([d.pk for d in deployments])
    refresh_breakevens()
    review_decisions()
    timings["stored answers"] = time.perf_counter() - t5

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
        "viewer": users["viewer"],
        "cluster": cluster,
        "deployment": deployment,
        "plan": plan,
        "decision": Decision.objects.order_by("-pk").first(),
        "model": kimi,
        "timings": timings,
        "polls_size": polls_size,
        "counts": {
            "clusters": Cluster.objects.count(),
            "cluster states": ClusterState.objects.count(),
            "deployments": Deployment.objects.count(),
            "polls": EndpointPoll.objects.count(),
            "workloads": Workload.objects.count(),
            "plans": Plan.objects.count(),
            "decisions": n_decisions,
            "SKUs": len(skus),
            "models": len(models),
            "GPU quotes": GpuQuote.objects.count(),
        },
        "result_kb": len(str(plan.result)) / 1024,
    }
