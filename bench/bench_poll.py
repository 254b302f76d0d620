"""Benchmark of one poll cycle: ``run_poll_cycle()`` over many fake endpoints, some of which hang.

Run from the repository root:

    .venv/bin/python bench/bench_poll.py                       # 500 endpoints, 10% hang, 2 s timeout
    .venv/bin/python bench/bench_poll.py --timeout 5           # at the default POLL_TIMEOUT_S
    .venv/bin/python bench/bench_poll.py --concurrency 64      # POLL_CONCURRENCY for this run
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/fleetcap_bench .venv/bin/python bench/bench_poll.py

Plain script (no pytest). It sets Django up itself with ``FLEETCAP_VAR_DIR`` in a new temporary
folder, so without ``DATABASE_URL`` the database is the settings' own SQLite file (WAL, 20 s busy
timeout) inside that folder; ``--sqlite-url`` sets ``DATABASE_URL=sqlite:///<temp>/bench.sqlite3``
instead (dj-database-url's options: no WAL, 5 s busy timeout). A ``DATABASE_URL`` given by the caller
(e.g. PostgreSQL) is used as it is, after migrating it; it must hold no deployment, because the cycle
polls every due deployment it finds.

Fake endpoints (vLLM flavour, bench/poll_fakes.py) listen on 127.0.0.1, by default in a child process
so that their CPU time, threads and memory are not the poller's: one distinct port per hanging endpoint
(so the hangs really are concurrent) and ``--ok-servers`` ports shared round-robin by the answering
endpoints. By default one asyncio loop serves them all with the simulation and payloads of
``fleet.polling.fakeserver.FakeEngineServer`` (``--threaded-fakes``: one ``FakeEngineServer`` each, whose
thread-per-connection server costs ~1.4 ms of CPU a request and saturates its core on this machine),
and a rendered ``/metrics`` page is served again for ``--render-cache`` seconds. Deployments (a dense
8B model on an H100 cluster) point at them; the hanging ones are spread evenly through the list
(``--hang-placement``).

It runs ONE ``run_poll_cycle()`` (with ``--fan-out N``: ``start_poll_cycle()``, which polls
``POLL_CONCURRENCY`` deployments itself and hands the rest in batches to N processes standing in for
a prefork pool's others, bench/poll_batches.py) with ``POLL_TIMEOUT_S = --timeout`` and reports the cycle's wall
time against the target (timeout + 1 s), CPU time, peak memory (``ru_maxrss`` of this process, and
the ``tracemalloc`` peak with ``--tracemalloc``), polls stored by status and a timeline of when the
polls started and finished. Exit status 0, or 2 when a poll failed or got an unexpected status (the
target is reported, not enforced). Everything is bounded: a watchdog ends the run if the cycle overruns
its worst case, and the fake servers' process exits by itself if this one disappears.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import resource
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DENSE_8B_GROUPS = [{"kind": "full", "count": 32, "kv_heads": 8, "head_dim": 128}]


from poll_batches import BatchWorkers  # noqa: E402
from poll_fakes import ENGINE, Fakes  # noqa: E402

# Django side
# --------------------------------------------------------------------------------------------


def setup_django(var_dir: str, sqlite_url: bool, log_level: str) -> str:
    """Configure the environment, ``django.setup()``, migrate; returns the database described."""
    os.environ["FLEETCAP_VAR_DIR"] = var_dir
    # A throwaway database and folder get a throwaway secret key (settings only read one).
    os.environ.setdefault("FLEETCAP_SECRET_KEY", secrets.token_urlsafe(50))
    os.environ["FLEETCAP_LOG_LEVEL"] = log_level
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.project.settings")
    if sqlite_url:
        os.environ["DATABASE_URL"] = f"sqlite:///{var_dir}/bench.sqlite3"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    settings_dict = connection.settings_dict
    if connection.vendor == "sqlite":
        mode = connection.cursor().execute("PRAGMA journal_mode").fetchone()[0]
        timeout = settings_dict.get("OPTIONS", {}).get("timeout", 5)
        source = "DATABASE_URL" if os.environ.get("DATABASE_URL") else "settings default in FLEETCAP_VAR_DIR"
        return f"SQLite {settings_dict['NAME']} ({source}; journal_mode={mode}, busy timeout {timeout} s)"
    version = connection.cursor().connection.info.server_version if connection.vendor == "postgresql" else "?"
    return (
        f"{connection.vendor} {version} database {settings_dict['NAME']!r} on {settings_dict.get('HOST') or 'socket'}"
    )


def create_fleet(targets: list[tuple[str, str, bool]]) -> None:
    """One SKU, one cluster, one dense 8B model and a deployment per (url, model id, hangs)."""
    from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider

    if Deployment.objects.exists():
        raise SystemExit(
            "refusing to run: the database already holds deployments, and run_poll_cycle() polls every due "
            "deployment it finds (use an empty database, e.g. a fresh one for DATABASE_URL)"
        )
    sku = HardwareSku.objects.create(
        slug="bench-h100-sxm-80gb", name="H100 SXM 80GB (bench)", vendor="NVIDIA", hbm_gb=80,
        hbm_bandwidth_tbps=3.35, bf16_tflops=989, fp8_tflops=1979, interconnect_gbps=900, gpus_per_node=8,
    )  # fmt: skip
    cluster = Cluster.objects.create(
        slug="bench-pool", name="Bench pool", sku=sku, nodes=math.ceil(len(targets) / 8),
        provider=Provider.objects.ensure("bench"),
        region="local", team="bench",
    )  # fmt: skip
    model = ModelSpec.objects.create(
        slug="bench-dense-8b", name="Bench dense 8B", total_params=8_030_000_000, active_params=8_030_000_000,
        hidden_size=4096, vocab_size=128256, max_context_tokens=131072, attention_heads=32, weight_format="bf16",
        layer_groups=DENSE_8B_GROUPS,
    )  # fmt: skip
    deployments = [
        Deployment(
            slug=f"bench-{i:04d}{'-hang' if hangs else ''}",
            cluster=cluster,
            model=model,
            engine=ENGINE,
            base_url=url,
            served_model_id=model_id,
            enabled=True,
        )
        for i, (url, model_id, hangs) in enumerate(targets)
    ]
    # What a form or the API would check, once per kind (the guard allows the address, the layout sizes).
    for kind in {hangs: d for d, (_, _, hangs) in zip(deployments, targets, strict=True)}.values():
        kind.full_clean(exclude=["slug"])
    Deployment.objects.bulk_create(deployments, batch_size=250)


def hang_positions(n: int, n_hang: int, placement: str) -> set[int]:
    """Which of the ``n`` deployments (in slug order, the cycle's order) point at a hanging server."""
    if placement == "first":
        return set(range(n_hang))
    if placement == "last":
        return set(range(n - n_hang, n))
    return {k * n // n_hang for k in range(n_hang)} if n_hang else set()


def timeline(cycle_start_unix: float) -> dict[str, dict[str, float]]:
    """Per status: when polls started (the poll's own clock) and finished their HTTP work (the stored
    ``polled_at``, taken just before the row is written), in seconds from the cycle start."""
    from fleet.models import EndpointPoll

    rows: dict[str, list[tuple[float, float]]] = {}
    for status, stored, outcome in EndpointPoll.objects.values_list("status", "polled_at", "outcome"):
        began = float(outcome.get("polled_at") or 0.0) - cycle_start_unix
        rows.setdefault(status, []).append((began, stored.timestamp() - cycle_start_unix))
    summary = {}
    for status, pairs in rows.items():
        starts = sorted(p[0] for p in pairs)
        ends = sorted(p[1] for p in pairs)
        durations = sorted(end - start for start, end in pairs)
        summary[status] = {
            "first_start": starts[0],
            "last_start": starts[-1],
            "last_done": ends[-1],
            "median_poll": statistics.median(durations),
            "p95_poll": durations[min(len(durations) - 1, math.ceil(0.95 * len(durations)) - 1)],
        }
    return summary


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _rss_mib() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def _watchdog(seconds: float, on_expiry: Callable[[], None]) -> threading.Timer:
    def expire() -> None:
        print(f"watchdog: the cycle overran its {seconds:.0f} s bound; aborting", file=sys.stderr, flush=True)
        on_expiry()
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=500, help="deployments polled in the cycle")
    parser.add_argument("--hang-fraction", type=float, default=0.1, help="share of endpoints that never answer")
    parser.add_argument("--timeout", type=float, default=2.0, help="POLL_TIMEOUT_S for the cycle (seconds)")
    parser.add_argument("--concurrency", type=int, default=None, help="POLL_CONCURRENCY (default: the setting, 64)")
    parser.add_argument(
        "--ok-servers", type=int, default=50, help="answering fake servers, shared round-robin (0: one per endpoint)"
    )
    parser.add_argument(
        "--hang-placement", choices=("spread", "first", "last"), default="spread",
        help="where the hanging deployments sit in the cycle's (slug) order",
    )  # fmt: skip
    parser.add_argument("--in-process", action="store_true", help="run the fake servers in this process")
    parser.add_argument(
        "--threaded-fakes",
        action="store_true",
        help="serve the fakes with FakeEngineServer (a thread per connection) instead of one asyncio loop",
    )
    parser.add_argument(
        "--render-cache",
        type=float,
        default=1.0,
        help="seconds a fake server serves one rendered /metrics page again (0: render every scrape)",
    )
    parser.add_argument(
        "--fan-out",
        type=int,
        default=0,
        help="batch worker processes standing in for a prefork pool's others: the cycle polls POLL_CONCURRENCY "
        "deployments itself and hands the rest to them in batches (start_poll_cycle, poll_batch)",
    )
    parser.add_argument("--tracemalloc", action="store_true", help="trace allocations (slows the cycle)")
    parser.add_argument("--sqlite-url", action="store_true", help="SQLite through DATABASE_URL=sqlite:///...")
    parser.add_argument("--log-level", default="WARNING", help="FLEETCAP_LOG_LEVEL (INFO logs every poll)")
    args = parser.parse_args()
    if args.endpoints < 1 or not 0 <= args.hang_fraction <= 1 or args.timeout <= 0:
        parser.error("need --endpoints >= 1, 0 <= --hang-fraction <= 1 and --timeout > 0")
    if args.concurrency is not None and args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if args.sqlite_url and os.environ.get("DATABASE_URL"):
        parser.error("--sqlite-url and a DATABASE_URL in the environment exclude each other")

    n = args.endpoints
    n_hang = round(n * args.hang_fraction)
    n_answering = n - n_hang
    n_ok_servers = min(args.ok_servers or n_answering, n_answering)
    var_dir = tempfile.mkdtemp(prefix="fleetcap-bench-")
    fakes = Fakes(
        n_hang,
        n_ok_servers,
        hang_s=args.timeout * 3 + 30,
        in_process=args.in_process,
        render_cache_s=args.render_cache,
        lean=not args.threaded_fakes,
    )
    try:
        started = time.perf_counter()
        servers = fakes.start()
        hanging = [s for s in servers if s[2] == "hang"]
        answering = [s for s in servers if s[2] != "hang"]
        positions = hang_positions(n, n_hang, args.hang_placement)
        targets, h, a = [], iter(hanging), 0
        for i in range(n):
            if i in positions:
                url, model_id, _ = next(h)
                targets.append((url, model_id, True))
            else:
                url, model_id, _ = answering[a % len(answering)]
                targets.append((url, model_id, False))
                a += 1
        fakes_s = time.perf_counter() - started

        database = setup_django(var_dir, args.sqlite_url, args.log_level)
        from django.conf import settings
        from django.db import connections
        from django.db.models import Count, Sum

        from fleet import models as fleet_models
        from fleet.models import Deployment, EndpointPoll
        from fleet.poller import run_poll_cycle, start_poll_cycle

        create_fleet(targets)
        settings.POLL_TIMEOUT_S = args.timeout
        if args.concurrency is not None:
            settings.POLL_CONCURRENCY = args.concurrency
        concurrency = settings.POLL_CONCURRENCY
        in_flight = max(1, min(concurrency, n))

        # Worst case: every poll makes three requests that each take the whole timeout, in waves.
        bound = args.timeout * 3 * math.ceil(n / in_flight) + 120
        watchdog = _watchdog(bound, lambda: (fakes.stop(), shutil.rmtree(var_dir, ignore_errors=True)))

        batch_workers = None
        if args.fan_out:
            batch_workers = BatchWorkers(args.fan_out, args.timeout, concurrency)
            batch_workers.wait_ready()
        gc.collect()
        rss_before, maxrss_before = _rss_mib(), _maxrss_mib()
        fakes_cpu_before = fakes.cpu_seconds()
        if args.tracemalloc:
            tracemalloc.start()
        threads_before = threading.active_count()
        cpu_before, unix_before, wall_before = time.process_time(), time.time(), time.perf_counter()
        batches: list[tuple[dict, float]] = []
        if batch_workers is None:
            report = run_poll_cycle()
        else:
            report = start_poll_cycle(batch_workers.dispatch)
            batches = batch_workers.collect(bound)
        wall = time.perf_counter() - wall_before
        cpu = time.process_time() - cpu_before
        if batch_workers is not None:
            batch_workers.stop()
        traced_peak = tracemalloc.get_traced_memory()[1] / 2**20 if args.tracemalloc else None
        tracemalloc.stop()
        maxrss_after, rss_after = _maxrss_mib(), _rss_mib()
        fakes_cpu_after = fakes.cpu_seconds()
        watchdog.cancel()

        by_status = dict(
            EndpointPoll.objects.values_list("status").annotate(n=Count("id")).order_by("-n").values_list("status", "n")
        )
        expected = Counter("down" if hangs else "up" for _, _, hangs in targets)
        wrong_ok = EndpointPoll.objects.filter(deployment__slug__endswith="-hang").exclude(status="down").count()
        wrong_up = EndpointPoll.objects.exclude(deployment__slug__endswith="-hang").exclude(status="up").count()
        leased = Deployment.objects.filter(poll_lease_until__isnull=False).count()
        daily_model = getattr(fleet_models, "DailyPollCount", None)  # per-day counters, where the poller keeps them
        counted = daily_model.objects.aggregate(n=Sum("polls"))["n"] or 0 if daily_model else None
        reasons = Counter(
            EndpointPoll.objects.exclude(status="up").values_list("reason", flat=True).order_by()[:1000]
        ).most_common(3)
        stages = timeline(unix_before)
        connections.close_all()

        target = args.timeout + 1.0
        print(f"machine       : {platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}")
        print(f"database      : {database}")
        where = "this process" if args.in_process else "a child process"
        kind = "threaded FakeEngineServers" if args.threaded_fakes else "ports on one asyncio loop"
        print(
            f"fake servers  : {len(servers)} {kind} in {where} ({len(hanging)} hanging, one per hanging endpoint; "
            f"{len(answering)} answering, shared by {n_answering} endpoints; /metrics render cache "
            f"{args.render_cache:g} s), started in {fakes_s:.1f} s"
        )
        print(
            f"cycle         : {n} endpoints, {n_hang} hang ({args.hang_placement}), POLL_TIMEOUT_S {args.timeout:g} s, "
            f"POLL_CONCURRENCY {concurrency} ({in_flight} polls in flight at most), threads before {threads_before}"
        )
        print(
            f"report        : due {report.due}, polled {report.polled}, skipped {report.skipped}, "
            f"failed {report.failed}, CycleReport.seconds {report.seconds:.3f}"
        )
        for i, (summary, batch_cpu) in enumerate(batches):
            print(
                f"batch {i + 1:<7} : due {summary['due']}, polled {summary['polled']}, failed {summary['failed']}, "
                f"{summary['seconds']:.3f} s in its worker process, CPU {batch_cpu:.2f} s"
            )
        verdict = "MET" if wall < target else "NOT MET"
        print(f"cycle time    : {wall:.3f} s wall; target < {target:g} s (timeout + 1 s): {verdict}")
        fakes_cpu = (
            f"; fake servers {fakes_cpu_after - fakes_cpu_before:.2f} s"
            if fakes_cpu_before is not None and fakes_cpu_after is not None
            else " (fake servers included)"
        )
        print(
            f"cpu time      : poller process {cpu:.2f} s ({cpu / wall:.0%} of one core, "
            f"{1000 * cpu / max(report.due, 1):.1f} ms per poll of its own){fakes_cpu}"
        )
        print(
            f"memory        : ru_maxrss (peak RSS of this process) {maxrss_before:.1f} MiB before the cycle, "
            f"{maxrss_after:.1f} MiB after (+{maxrss_after - maxrss_before:.1f}); "
            f"current RSS {rss_before:.1f} -> {rss_after:.1f} MiB"
        )
        if traced_peak is not None:
            print(f"tracemalloc   : peak {traced_peak:.1f} MiB of Python allocations during the cycle")
        shown = ", ".join(f"{status} {count}" for status, count in by_status.items())
        stored = sum(by_status.values())
        print(f"polls stored  : {stored} ({shown}); expected {expected['up']} up, {expected['down']} down")
        daily = "" if counted is None else f", daily counters {counted} polls"
        print(f"anomalies     : answering not up {wrong_up}, hanging not down {wrong_ok}, leases left {leased}{daily}")
        for reason, count in reasons:
            print(f"  reason x{count}: {reason[:150]}")
        for status, s in sorted(stages.items()):
            print(
                f"timeline {status:<5}: started {s['first_start']:.2f}..{s['last_start']:.2f} s, last done "
                f"{s['last_done']:.2f} s; poll median {s['median_poll']:.3f} s, p95 {s['p95_poll']:.3f} s"
            )
        broken = report.failed or any(b["failed"] for b, _ in batches) or wrong_up or wrong_ok or leased or stored != n
        return 2 if broken or counted not in (None, stored) else 0
    finally:
        fakes.stop()
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
