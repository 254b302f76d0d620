"""Reliability drills with real processes (docs/reliability.md): the broker goes down while a plan is
posted, a worker's pool child is killed mid-search, a whole worker is killed mid-search, beat stops
while a worker polls, and the database drops every connection during a plan and during poll cycles.
Each drill asserts that nothing is lost and that the outcome is written once (or, for beat, that its
stop is seen), and prints its timings (``pytest -s tests/test_drills.py``).

The plan drills run their own Redis (``redis-server`` on a free loopback port) so that it can be
stopped and started again, whatever the suite's broker is; their workers run the drill app
(``tests/drills/slow_search_app.py``: the search slowed down so it can be interrupted) with the
production plan lease (``FLEETCAP_PLAN_LEASE_S``, 60 s): a dead run must be noticed by its silence,
not by its lease running out. Where beat would send ``fleet.send_outbox`` (every 10 s) and
``planner.recover_plans`` (every 5 s), the drill calls the same functions itself, more often.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from celery_workers import spawn, stop_worker, worker_env
from django.db import connection

from fleet import outbox
from fleet.models import OutboxMessage
from fleet.project.celery import app
from planner import plans as plan_service
from planner.models import Plan

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

#: What a drill asserts of a plan whose run died: done within this many seconds (issue 29).
RECOVERED_WITHIN_S = 15
PLAN = {"model": "kimi-k3", "workload": "agent", "skus": ["h200-141gb"], "max_nodes": 2, "modes": ["aggregated"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """A private redis-server on 127.0.0.1:``port`` that a drill can stop and start again."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self.answers, timeout_s=10, what="redis-server to start")

    def answers(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
        return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_until(predicate: Callable[[], object], timeout_s: float, what: str, every_s: float = 0.1) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.fixture
def redis() -> Iterator[Redis]:
    if not shutil.which("redis-server"):
        pytest.fail("the drills need redis-server (Debian package redis-server; .ci/run starts it)")
    server = Redis()
    server.start()
    # Publishing from this process goes to the private Redis (broker_write_url wins over broker_url).
    patch = pytest.MonkeyPatch()
    patch.setitem(app.conf, "broker_write_url", server.url)
    app._pool, app.amqp._producer_pool = None, None
    yield server
    patch.undo()
    app._pool, app.amqp._producer_pool = None, None
    server.stop()


@pytest.fixture
def world(catalog_and_agent, settings, monkeypatch):
    settings.OUTBOX_GRACE_S = 0
    queue = f"drill-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    return queue


def start_drill_worker(queue: str, redis: Redis, delay_s: float) -> subprocess.Popen:
    """A prefork worker (one child) of the drill app on ``queue``, ready when this returns."""
    cmd = [sys.executable, "-m", "celery", "-A", "tests.drills.slow_search_app", "worker", "--pool", "prefork"]
    cmd += ["--concurrency", "1", "--queues", queue, "--hostname", f"{queue}-{uuid.uuid4().hex[:4]}@test"]
    cmd += ["--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    env = worker_env(
        CELERY_BROKER_URL=redis.url,
        FLEETCAP_DRILL_SEARCH_DELAY_S=str(delay_s),
    )
    proc = spawn(cmd, env)

    def ready() -> bool:
        assert proc.poll() is None, f"the worker exited: {stop_worker(proc)}"
        proc.log_file.seek(0)  # type: ignore[attr-defined]
        return " ready." in proc.log_file.read()  # type: ignore[attr-defined]

    wait_until(ready, timeout_s=60, what="the worker to be ready", every_s=0.2)
    return proc


def pool_children(proc: subprocess.Popen) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def post_plan(api) -> str:
    r = api.post("/api/v1/plans/", PLAN, format="json")
    assert r.status_code == 202, r.content
    return r.json()["id"]


def status_of(plan_id: str) -> str:
    return Plan.objects.filter(pk=plan_id).values_list("status", flat=True).get()


def progress_of(plan_id: str) -> int:
    return Plan.objects.filter(pk=plan_id).values_list("progress", flat=True).get()


def recover_until_finished(plan_id: str, timeout_s: float) -> Plan:
    """Run what beat runs (recover_plans, the outbox sweep) until the plan finishes."""

    def finished() -> bool:
        plan_service.recover_plans()
        outbox.sweep()
        return status_of(plan_id) in Plan.FINISHED

    wait_until(finished, timeout_s=timeout_s, what=f"plan {plan_id} to finish", every_s=0.5)
    return Plan.objects.get(pk=plan_id)


def assert_written_once(plan: Plan) -> None:
    assert plan.status == "done" and plan.progress == 100 and plan.result["candidates_evaluated"] > 0
    assert [p["progress"] for p in plan.progress_log].count(100) == 1
    assert plan.lease_expires is None and plan.finished


def test_drill_broker_down_while_a_plan_is_posted(platform_api, world, redis, capsys):
    worker = start_drill_worker(world, redis, delay_s=0)
    try:
        redis.stop()
        started = time.monotonic()
        r = platform_api.post("/api/v1/plans/", PLAN, format="json")
        answered_s = time.monotonic() - started
        assert r.status_code == 202 and r.json()["dispatch"] == "broker_unreachable", r.content
        plan_id = r.json()["id"]
        assert status_of(plan_id) == "queued" and OutboxMessage.objects.get(task_id=plan_id).sent_at is None
        time.sleep(1)
        redis.start()  # an empty Redis: whatever it held is gone, the outbox still has the plan
        back = time.monotonic()
        app._pool, app.amqp._producer_pool = None, None
        plan = recover_until_finished(plan_id, timeout_s=60)
        done_s = time.monotonic() - back
    finally:
        log = stop_worker(worker)
    assert_written_once(plan)
    assert plan.attempts == 1, log
    assert OutboxMessage.objects.get(task_id=plan_id).sent_at is not None
    with capsys.disabled():
        print(f"\ndrill broker-down: 202 in {answered_s:.2f} s (broker down); done {done_s:.1f} s after it was back")


def test_drill_pool_child_killed_mid_search(platform_api, world, redis, capsys):
    worker = start_drill_worker(world, redis, delay_s=0.1)
    try:
        plan_id = post_plan(platform_api)
        wait_until(lambda: progress_of(plan_id) >= 20, timeout_s=60, what="the search to pass 20%")
        (child,) = pool_children(worker)
        os.kill(child, signal.SIGKILL)
        killed = time.monotonic()
        progress_when_killed = Plan.objects.get(pk=plan_id).progress
        plan = recover_until_finished(plan_id, timeout_s=120)
        done_s = time.monotonic() - killed
    finally:
        log = stop_worker(worker)
    with capsys.disabled():
        print(f"\ndrill pool-child-killed: killed at {progress_when_killed}%; done {done_s:.1f} s later (2 runs)")
    assert_written_once(plan)
    assert plan.attempts == 2, log
    assert "WorkerLostError" in log or "exited with 'signal 9" in log, log
    assert done_s < RECOVERED_WITHIN_S, f"done {done_s:.1f} s after the kill"


def test_drill_worker_killed_mid_search(platform_api, world, redis, capsys):
    # Progress reports 6 s apart, longer than a run may be silent (5 s): only the run's heartbeat
    # thread keeps the plan while its process lives, which the recovery called meanwhile checks.
    first = start_drill_worker(world, redis, delay_s=6.0)
    try:
        plan_id = post_plan(platform_api)

        def past_20_percent_and_kept() -> bool:
            assert plan_service.recover_plans().resent == [], "a live run's plan was taken over"
            return progress_of(plan_id) >= 20

        wait_until(past_20_percent_and_kept, timeout_s=60, what="the search to pass 20%", every_s=0.5)
        assert Plan.objects.get(pk=plan_id).attempts == 1
        os.killpg(first.pid, signal.SIGKILL)  # the machine's view: main process and pool child at once
        killed = time.monotonic()
        progress_when_killed = Plan.objects.get(pk=plan_id).progress
    finally:
        stop_worker(first)
    second = start_drill_worker(world, redis, delay_s=0.05)
    try:
        plan = recover_until_finished(plan_id, timeout_s=120)
        done_s = time.monotonic() - killed
    finally:
        log = stop_worker(second)
    with capsys.disabled():
        print(f"\ndrill worker-killed: killed at {progress_when_killed}%; done {done_s:.1f} s later on another worker")
    assert_written_once(plan)
    assert plan.attempts == 2, log
    assert done_s < RECOVERED_WITHIN_S, f"done {done_s:.1f} s after the kill (the second worker's start-up included)"


def terminate_other_connections() -> int:
    """What a PostgreSQL restart does to its clients: every other connection to this database dropped."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a database server to restart: PostgreSQL (CI)")
def test_drill_database_connections_dropped_during_a_plan(platform_api, world, redis, capsys):
    # A second between progress reports: the drop lands between two of the run's writes.
    worker = start_drill_worker(world, redis, delay_s=1.0)
    try:
        plan_id = post_plan(platform_api)
        wait_until(lambda: progress_of(plan_id) >= 20, timeout_s=60, what="the search to pass 20%")
        dropped = terminate_other_connections()  # the worker's connections: its run's next write fails
        blip = time.monotonic()
        progress_when_dropped = Plan.objects.get(pk=plan_id).progress
        plan = recover_until_finished(plan_id, timeout_s=120)
        done_s = time.monotonic() - blip
        alive = worker.poll() is None
    finally:
        log = stop_worker(worker)
    with capsys.disabled():
        print(
            f"\ndrill db-connections-dropped-during-a-plan: {dropped} connections dropped at "
            f"{progress_when_dropped}%; done {done_s:.1f} s later ({plan.attempts} run(s) counted)"
        )
    assert alive, log
    assert dropped >= 1, "no connection was dropped: the drill did not drill"
    assert_written_once(plan)
    assert plan.attempts == 1, log  # the run took its own plan back: a blip is not a worker that stopped
    assert done_s < RECOVERED_WITHIN_S, f"done {done_s:.1f} s after the connections were dropped"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a database server to restart: PostgreSQL (CI)")
def test_drill_database_connections_dropped_during_poll_cycles(tmp_path, cluster, llama70b, capsys):
    from celery_workers import isolated_broker

    from fleet.models import Deployment, EndpointPoll
    from fleet.polling.fakeserver import FakeEngineServer

    slugs = [f"drill-{i}" for i in range(4)]
    with FakeEngineServer("vllm") as server:
        for slug in slugs:
            Deployment.objects.create(
                slug=slug,
                cluster=cluster,
                model=llama70b,
                tp=4,
                engine="vllm",
                base_url=server.url,
                served_model_id=server.model_id,
                poll_interval_s=5,
            )
        env = worker_env(**isolated_broker(tmp_path), FLEETCAP_POLL_CONCURRENCY="2")
        cmd = [sys.executable, "-m", "celery", "-A", "fleet.project", "worker", "--beat", "--pool", "threads"]
        cmd += ["--concurrency", "2", "--hostname", f"dbdrill-{uuid.uuid4().hex[:6]}@test", "--loglevel", "INFO"]
        cmd += ["--schedule", str(tmp_path / "beat-schedule"), "--without-gossip", "--without-mingle"]
        proc = spawn(cmd, env)

        def ups() -> list[int]:
            return [EndpointPoll.objects.filter(deployment__slug=s, status="up").count() for s in slugs]

        try:
            wait_until(lambda: min(ups()) >= 1, timeout_s=90, what="a first poll of every deployment", every_s=0.5)
            before = ups()
            dropped = 0
            for _ in range(5):  # over 3.5 s, so the drops land inside poll cycles (every 5 s)
                dropped += terminate_other_connections()
                time.sleep(0.7)
            restarted = time.monotonic()
            wait_until(
                lambda: all(n >= b + 2 for n, b in zip(ups(), before, strict=True)),
                timeout_s=60,
                what="two more polls of every deployment after the drops",
                every_s=0.5,
            )
            recovered_s = time.monotonic() - restarted
            alive = proc.poll() is None
        finally:
            log = stop_worker(proc)
    assert alive, log
    assert dropped >= 1, "no connection was dropped: the drill did not drill"
    leased = Deployment.objects.filter(slug__in=slugs, poll_lease_until__isnull=False)
    assert all(d.poll_lease_until.timestamp() < time.time() + 60 for d in leased)
    with capsys.disabled():
        print(
            f"\ndrill db-connections-dropped: {dropped} connections dropped; every deployment polled twice more "
            f"{recovered_s:.1f} s later"
        )


def test_drill_beat_stopped(tmp_path, cluster, llama70b, client, make_user, settings, capsys):
    """Beat stopped while a worker runs: ``/healthz`` and the fleet page say polls stopped within two
    poll intervals of the last cycle, the deployment reads stale past its limit (never up), and all is
    well again once beat is back. The staleness floor is lowered in this (the web's) process, so the
    drill waits max(3 x 5 s, 10 s) = 15 s for it instead of the default 120 s."""
    from celery_workers import isolated_broker

    from fleet.models import Deployment
    from fleet.polling.fakeserver import FakeEngineServer

    settings.ROUTE_STALE_MIN_S = 10
    client.force_login(make_user("v", "viewer"))

    def health() -> dict:
        return client.get("/healthz").json()

    def fleet_status() -> str:
        """The deployment's status badge as the fleet table's refresh shows it."""
        row = client.get("/", HTTP_HX_REQUEST="true").content.decode()
        return row.split('<tr data-deployment="beat-drill">', 1)[1].split('<span class="badge ', 1)[1].split('"', 1)[0]

    with FakeEngineServer("vllm") as server:
        Deployment.objects.create(slug="beat-drill", cluster=cluster, model=llama70b, tp=4, engine="vllm",
                                  base_url=server.url, served_model_id=server.model_id, poll_interval_s=5)  # fmt: skip
        env = worker_env(**isolated_broker(tmp_path))
        cmd = [sys.executable, "-m", "celery", "-A", "fleet.project", "worker", "--pool", "threads"]
        cmd += ["--concurrency", "2", "--hostname", f"beatdrill-{uuid.uuid4().hex[:6]}@test", "--loglevel", "INFO"]
        worker = spawn([*cmd, "--without-gossip", "--without-mingle"], env)
        beat_cmd = [sys.executable, "-m", "celery", "-A", "fleet.project", "beat", "--loglevel", "INFO"]
        beat_cmd += ["--schedule", str(tmp_path / "beat-schedule"), "--pidfile", ""]
        beat: subprocess.Popen | None = spawn(beat_cmd, env)
        beat_log = ""
        try:
            polling = "polls with beat running"
            wait_until(lambda: health()["polling"] == "ok" and fleet_status() == "up", 90, polling, every_s=0.5)
            beat_log, beat = stop_worker(beat), None
            stopped = time.monotonic()
            wait_until(lambda: health()["polling"] == "stopped", 30, "/healthz to say polls stopped", every_s=0.2)
            said_s = time.monotonic() - stopped
            page = client.get("/", HTTP_HX_REQUEST="true").content.decode()
            assert 'id="polls-stopped"' in page and "Polls stopped at" in page
            assert client.get("/healthz").status_code == 200 and health()["status"] == "degraded"
            wait_until(lambda: fleet_status() == "stale", 40, "the deployment to read stale", every_s=0.5)
            stale_s = time.monotonic() - stopped
            beat = spawn(beat_cmd, env)
            restarted = time.monotonic()
            wait_until(lambda: health()["polling"] == "ok" and fleet_status() == "up", 60, "polls again", every_s=0.2)
            back_s = time.monotonic() - restarted
        finally:
            if beat is not None:
                beat_log += stop_worker(beat)
            worker_log = stop_worker(worker)
    assert said_s <= 2 * settings.POLL_CYCLE_S + 2, (said_s, beat_log, worker_log[-3000:])
    with capsys.disabled():
        print(
            f"\ndrill beat-stopped: /healthz and the fleet page said polls stopped {said_s:.1f} s after beat stopped; "
            f"the deployment read stale {stale_s:.1f} s after; polls again {back_s:.1f} s after beat restarted"
        )
