"""Load test: gunicorn + PostgreSQL + Redis + a Celery worker and beat on loopback, driven by locust.

One command, from the repository root (PostgreSQL on 127.0.0.1:5432, user ``postgres``, trust auth;
Redis on 127.0.0.1:6379):

    .venv/bin/python bench/bench_load.py                   # the 50-user run, two worker models, the steps
    .venv/bin/python bench/bench_load.py --models gthread:4:2 --no-steps
    .venv/bin/python bench/bench_load.py --models sync:4:1,gthread:2:4,gthread:4:4 --steps 4,8,16,32

What it does, each step stopping the run on failure and everything torn down at the end (also on error
or Ctrl-C):

1. names the run ``fleetcap_bench_load_<pid>_<8 hex digits>`` (bench/throwaway.py) and creates a
   PostgreSQL database of that name (a plain ``CREATE DATABASE``: a name that exists fails the run, nothing
   is dropped first) and a temporary ``FLEETCAP_VAR_DIR`` with a throwaway secret key; in Redis db
   ``--redis-db`` (default 11) it claims the key prefix ``<run name>:`` (``SET <prefix>claimed NX``), and the
   Celery broker and the cache API throttles count in both keep their keys under it
   (``FLEETCAP_REDIS_KEY_PREFIX``: kombu's ``global_keyprefix``, the cache's ``KEY_PREFIX``), so runs at
   once on one server share neither; gunicorn and the fake endpoint listen on free ports unless
   ``--port`` / ``--fake-port`` name some;
2. ``bench/load/prepare.py``: migrate, ``load_catalog``, ``ensure_demo_users``, ``ensure_demo_fleet`` (as
   ``make run``), a fleet of ``--clusters`` / ``--deployments`` / ``--polls`` (bench/pages_data.py; only the
   demo deployment is polled, against a local fake vLLM), ``collectstatic``, and ``--users`` logins spread
   over the roles with a token and a session each;
3. starts the fake vLLM endpoint, a Celery worker and Celery beat (polling the demo deployment every 5 s);
4. for each ``--models`` entry (``class:workers:threads``) starts gunicorn on 127.0.0.1 with
   ``gunicorn.conf.py`` and those overrides, waits for ``/healthz``, and runs locust headless
   (``--users`` users, ``--spawn-rate``, ``--run-time``, each pausing 1 s between requests) over the mix
   in ``bench/load/locustfile.py``; prints p50 / p95 / p99 and errors per endpoint;
5. the saturation steps, with the first model: no pause, ``--steps`` users for ``--step-time`` each,
   requests/s and p95 per step; the saturation point is the throughput of the last step whose p95 is
   under 150 ms (and the first step over it);
6. drops the database and deletes the keys under the prefix if this run created them (nothing else in
   the db: it is never flushed), removes the folder; also on error, Ctrl-C or SIGTERM.

``FLEETCAP_API_THROTTLE_USER`` is set to ``1000000/min`` for the server (the API's per-user throttle, where
configured, is meant for people, not for 50 users on one machine). The machine's load (``uptime``) is
printed before and after each run: on a shared machine the figures are noisy. Exit status 0 when every
50-user run had no error and p95 under 150 ms; 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from throwaway import REDIS_HOST, REDIS_PORT, SERVER_URL, RedisKeys, ThrowawayDatabase

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
LOCUST = str(Path(PY).with_name("locust"))
TARGET_P95_MS = 150.0


def uptime() -> str:
    out = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    return out or "load average: {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice), for a run's own server."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and its descendants, with reaped children (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, times = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            parents[pid] = int(fields[1])
            # utime, stime; and for the root also cutime, cstime (workers it reaped, e.g. after max_requests)
            times[pid] = (int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        own, reaped = times.get(pid, (0, 0))
        total += own + (reaped if pid == root else 0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total / tick


class Stack:
    """Background processes, each logging to its own file; stopped in reverse order."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs, self.procs = env, logs, {}

    def start(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs[name] = (proc, log)
        return proc

    def stop(self, name: str) -> None:
        proc, log = self.procs.pop(name)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name)

    def check(self) -> None:
        for name, (proc, _) in self.procs.items():
            if proc.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace")[-2000:]
                raise SystemExit(f"{name} exited with {proc.returncode}:\n{tail}")


def wait_healthy(base: str, stack: Stack, timeout_s: float = 90) -> dict:
    """``/healthz`` answers 200 with at least one live worker."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        stack.check()
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=5) as r:
                body = json.loads(r.read())
                if r.status == 200 and body.get("workers_alive", 0) >= 1:
                    return body
                last = str(body)
        except OSError as exc:
            last = str(exc)
        time.sleep(0.5)
    raise SystemExit(f"{base}/healthz did not become healthy in {timeout_s:.0f} s: {last}")


def run_locust(base: str, env: dict[str, str], users: int, seconds: int, spawn_rate: float, wait_s: float, out: Path):
    """One headless locust run; returns the rows of its statistics CSV (per endpoint, then Aggregated)."""
    cmd = [
        LOCUST,
        "-f",
        str(ROOT / "bench/load/locustfile.py"),
        "--headless",
        "--only-summary",
        "--users",
        str(users),
        "--spawn-rate",
        str(spawn_rate),
        "--run-time",
        f"{seconds}s",
        "--stop-timeout",
        "5",
        "--host",
        base,
        "--csv",
        str(out),
        "--loglevel",
        "WARNING",
    ]
    locust_env = {**env, "LOAD_WAIT_S": str(wait_s)}
    with open(f"{out}.log", "wb") as log:
        subprocess.run(cmd, cwd=ROOT, env=locust_env, stdout=log, stderr=subprocess.STDOUT, check=False)
    stats = Path(f"{out}_stats.csv")
    if not stats.exists():
        raise SystemExit(f"locust wrote no statistics; see {out}.log:\n{Path(f'{out}.log').read_text()[-2000:]}")
    with stats.open() as fh:
        rows = list(csv.DictReader(fh))
    failures = Path(f"{out}_failures.csv")
    errors = list(csv.DictReader(failures.open())) if failures.exists() else []
    return rows, errors


def table(rows: list[dict], seconds: int) -> str:
    lines = [
        "| endpoint | requests | errors | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|",
    ]
    ordered = sorted(rows, key=lambda r: (r["Name"] == "Aggregated", r["Name"]))
    for r in ordered:
        name = "**all**" if r["Name"] == "Aggregated" else r["Name"]
        lines.append(
            f"| {name} | {r['Request Count']} | {r['Failure Count']} | {r['50%']} | {r['95%']} | {r['99%']} "
            f"| {float(r['Max Response Time']):.0f} |"
        )
    agg = next(r for r in rows if r["Name"] == "Aggregated")
    lines.append(f"\n{agg['Request Count']} requests in {seconds} s: {float(agg['Requests/s']):.1f} requests/s")
    return "\n".join(lines)


def gunicorn_cmd(bind: str, model: str, logs: Path) -> list[str]:
    worker_class, workers, threads = [*model.split(":"), "1", "1"][:3]
    return [
        PY,
        "-m",
        "gunicorn",
        "-c",
        str(ROOT / "gunicorn.conf.py"),
        "fleet.project.wsgi",
        "--bind",
        bind,
        "--worker-class",
        worker_class,
        "--workers",
        workers,
        "--threads",
        threads,
        "--access-logfile",
        str(logs / "access.log"),
    ]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gthread:4:2,sync:4:1", help="class:workers:threads, comma separated")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--spawn-rate", type=float, default=10)
    parser.add_argument("--run-time", type=int, default=60, help="seconds of each 50-user run")
    parser.add_argument("--steps", default="1,2,4,8,16,32", help="users of each no-pause saturation step")
    parser.add_argument("--step-time", type=int, default=20, help="seconds per step")
    parser.add_argument("--no-steps", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="gunicorn's port (default: a free one)")
    parser.add_argument("--fake-port", type=int, default=0, help="the fake vLLM's port (default: a free one)")
    parser.add_argument("--redis-db", type=int, default=11, help="Redis db of the broker and cache (keys prefixed)")
    parser.add_argument("--clusters", type=int, default=25)
    parser.add_argument("--deployments", type=int, default=125)
    parser.add_argument("--polls", type=int, default=12_500)
    parser.add_argument("--out", default="", help="folder for the CSVs and logs (default: a temporary one)")
    args = parser.parse_args()

    print(f"date      : {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M UTC}")
    print(f"command   : {shlex.join([Path(PY).name, *sys.argv])}")
    print(f"machine   : {os.cpu_count()} cores; {uptime()}")
    work = Path(tempfile.mkdtemp(prefix="fleetcap-load-"))
    out = Path(args.out) if args.out else work / "results"
    out.mkdir(parents=True, exist_ok=True)
    args.port = args.port or free_port()
    args.fake_port = args.fake_port or free_port()
    base = f"http://127.0.0.1:{args.port}"
    fake = f"http://127.0.0.1:{args.fake_port}"
    database = ThrowawayDatabase("load")
    redis_keys = RedisKeys(database.name, args.redis_db)
    redis_url = f"redis://{REDIS_HOST}:{REDIS_PORT}/{args.redis_db}"
    print(f"run       : database {database.name}, Redis db {args.redis_db} keys {redis_keys.prefix}*, ports "
          f"{args.port} (gunicorn) and {args.fake_port} (fake vLLM)")  # fmt: skip
    env = {
        **os.environ,
        "DATABASE_URL": database.url,
        "CELERY_BROKER_URL": redis_url,
        # Throttle counters shared by the web processes, as in production (docs/operations.md, "Security").
        "FLEETCAP_CACHE_URL": redis_url,
        # Every key of the broker and the cache under the run's prefix (fleet/project/settings.py).
        "FLEETCAP_REDIS_KEY_PREFIX": redis_keys.prefix,
        "FLEETCAP_VAR_DIR": str(work / "var"),
        "FLEETCAP_SECRET_KEY": secrets.token_urlsafe(50),
        "FLEETCAP_DEBUG": "0",
        "FLEETCAP_LOG_LEVEL": "WARNING",
        "FLEETCAP_API_THROTTLE_USER": "1000000/min",
        "FLEETCAP_POLL_ALLOWED_NETWORKS": "127.0.0.0/8",
        "DJANGO_SETTINGS_MODULE": "fleet.project.settings",
        "PYTHONPATH": str(ROOT),
        "LOAD_USERS_FILE": str(work / "users.json"),
    }
    if not Path(LOCUST).exists():
        raise SystemExit(f"{LOCUST} is missing: .venv/bin/pip install -r requirements-dev.txt")
    # A SIGTERM tears down like Ctrl-C (the finally below), so no gunicorn, database or key is left behind.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        database.create()
    except Exception as exc:  # any driver error (the server is down, the name exists): say what is needed
        raise SystemExit(f"PostgreSQL on {SERVER_URL} (user postgres, trust) is needed: {exc}") from exc
    stack = Stack(env, out)
    ok = True
    try:
        try:
            redis_keys.claim()
        except Exception as exc:
            raise SystemExit(f"Redis on {REDIS_HOST}:{REDIS_PORT} is needed: {exc}") from exc
        subprocess.run([PY, "manage.py", "init_local"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        prepare = [
            PY,
            str(ROOT / "bench/load/prepare.py"),
            "--out",
            env["LOAD_USERS_FILE"],
            "--users",
            str(args.users),
            "--clusters",
            str(args.clusters),
            "--deployments",
            str(args.deployments),
            "--polls",
            str(args.polls),
            "--fake-endpoint",
            fake,
        ]
        subprocess.run(prepare, cwd=ROOT, env=env, check=True)
        demo_model_id = json.loads(Path(env["LOAD_USERS_FILE"]).read_text())["targets"]["demo_model_id"]
        fake_cmd = [PY, "-m", "fleet.polling.fakeserver", "--engine", "vllm", "--port", str(args.fake_port)]
        stack.start("fake-vllm", [*fake_cmd, "--model", demo_model_id])
        celery = [PY, "-m", "celery", "-A", "fleet.project"]
        stack.start(
            "worker", [*celery, "worker", "--loglevel", "WARNING", "--concurrency", "1", "--hostname", "load@%h"]
        )
        stack.start("beat", [*celery, "beat", "--loglevel", "WARNING"])

        models = [m.strip() for m in args.models.split(",") if m.strip()]
        for n, model in enumerate(models):
            stack.start("web", gunicorn_cmd(f"127.0.0.1:{args.port}", model, out))
            health = wait_healthy(base, stack)
            print(f"\n## {args.users} users, 1 s pause, {args.run_time} s: gunicorn {model} (class:workers:threads)")
            print(f"healthz   : {health}; before: {uptime()}")
            web_pid = stack.procs["web"][0].pid
            cpu_before = tree_cpu_s(web_pid)
            rows, errors = run_locust(base, env, args.users, args.run_time, args.spawn_rate, 1.0, out / f"run{n}")
            cpu_s = tree_cpu_s(web_pid) - cpu_before
            print(f"after     : {uptime()}\n")
            print(table(rows, args.run_time))
            agg = next(r for r in rows if r["Name"] == "Aggregated")
            served = max(1, int(agg["Request Count"]))
            print(
                f"web CPU   : {cpu_s:.1f} s for {served} requests: {cpu_s / served * 1000:.1f} ms per request "
                f"(gunicorn processes only; PostgreSQL, locust, worker and beat apart)"
            )
            for e in errors[:10]:
                print(f"error     : {e.get('Method')} {e.get('Name')}: {e.get('Error')} x{e.get('Occurrences')}")
            held = int(agg["Failure Count"]) == 0 and float(agg["95%"]) < TARGET_P95_MS
            print(
                f"target    : p95 {agg['95%']} ms (< {TARGET_P95_MS:.0f}), errors {agg['Failure Count']} (0): "
                f"{'MET' if held else 'NOT MET'}"
            )
            ok = ok and held
            if n == 0 and not args.no_steps:
                saturation(args, base, env, out, model)
            stack.stop("web")
    finally:
        stack.stop_all()
        dropped, deleted = "not dropped", "not deleted"
        with contextlib.suppress(Exception):
            dropped = "dropped" if database.drop() else "not created"
        with contextlib.suppress(Exception):
            deleted = f"{redis_keys.release()} deleted"
        shutil.rmtree(work / "var", ignore_errors=True)
        print(
            f"\nlogs and CSVs: {out}; database {database.name} {dropped}; "
            f"Redis db {args.redis_db} keys {redis_keys.prefix}*: {deleted}"
        )
    return 0 if ok else 1


def saturation(args, base: str, env: dict[str, str], out: Path, model: str) -> None:
    """No pause, more and more users: requests/s and p95 per step, until p95 passes the target."""
    print(f"\n## Saturation: gunicorn {model}, no pause, {args.step_time} s per step")
    print("| users | requests/s | p50 ms | p95 ms | p99 ms | errors | load average (1 min) |")
    print("|---|---|---|---|---|---|---|")
    below, above = None, None
    for users in [int(u) for u in args.steps.split(",") if u.strip()]:
        rows, _ = run_locust(base, env, users, args.step_time, max(users, 1), 0.0, out / f"step{users}")
        agg = next(r for r in rows if r["Name"] == "Aggregated")
        rps, p95 = float(agg["Requests/s"]), float(agg["95%"])
        print(
            f"| {users} | {rps:.1f} | {agg['50%']} | {agg['95%']} | {agg['99%']} | {agg['Failure Count']} "
            f"| {os.getloadavg()[0]:.2f} |"
        )
        if p95 <= TARGET_P95_MS:
            below = (users, rps, p95)
        else:
            above = (users, rps, p95)
            break
    at = f"{below[1]:.1f} requests/s at {below[0]} users (p95 {below[2]:.0f} ms)" if below else "none (the first step)"
    past = (
        f"p95 passes {TARGET_P95_MS:.0f} ms at {above[1]:.1f} requests/s ({above[0]} users, p95 {above[2]:.0f} ms)"
        if above
        else f"p95 stayed under {TARGET_P95_MS:.0f} ms up to the last step"
    )
    print(f"saturation: last step under the target: {at}; {past}")


if __name__ == "__main__":
    sys.exit(main())
