"""A real Celery worker process, started by the test, runs a task that writes to the database.

Uses whatever the settings are configured with: Redis + PostgreSQL in CI (`.ci/run`), the
filesystem broker + the SQLite test file otherwise. Each test uses its own queue so parallel
test processes never take each other's messages.
"""

from __future__ import annotations

import sys
import time
import uuid

import pytest
from celery_workers import isolated_broker, spawn, start_worker, stop_worker, wait_for, worker_env

from fleet.models import WorkerHeartbeat


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_each_real_worker_beats_itself_and_removes_its_row_when_it_stops():
    """No task, no beat schedule: the worker's own thread writes its row every
    WORKER_HEARTBEAT_S seconds (1 s here), one row per worker, deleted on a clean stop."""
    queues = [f"hb-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    workers = [start_worker(q, FLEETCAP_WORKER_HEARTBEAT_S="1") for q in queues]
    try:
        beats = [
            wait_for(lambda q=q, w=w: WorkerHeartbeat.objects.filter(worker=f"{q}@test", beats__gte=3).first(), w)
            for q, w in zip(queues, workers, strict=True)
        ]
    finally:
        logs = [stop_worker(w) for w in workers]
    for row, log in zip(beats, logs, strict=True):
        assert row is not None, f"the worker did not beat three times; its log:\n{log}"
    assert not WorkerHeartbeat.objects.filter(worker__in=[f"{q}@test" for q in queues]).exists(), logs


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_poll_now_is_queued_and_a_real_worker_stores_the_poll(platform_api, cluster, llama70b, monkeypatch):
    """POST .../poll/ answers 202 at once; the worker runs fleet.poll_one; the poll appears at the
    URL of the answer."""
    from fleet.models import Deployment
    from fleet.polling.fakeserver import FakeEngineServer
    from fleet.project.celery import app

    queue = f"poll-now-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    with FakeEngineServer("vllm") as server:
        d = Deployment(
            slug="now",
            cluster=cluster,
            model=llama70b,
            tp=4,
            engine="vllm",
            base_url=server.url,
            served_model_id=server.model_id,
        )
        d.set_api_key("sk-now")
        d.save()
        r = platform_api.post("/api/v1/deployments/now/poll/")
        assert r.status_code == 202, r.content
        url = r.json()["polls"]
        assert r.json()["status"] == "queued" and r["Location"] == url
        assert platform_api.get(url).json()["count"] == 0  # no worker yet: queued, not lost
        worker = start_worker(queue)
        try:
            body = wait_for(lambda: (b := platform_api.get(url).json())["count"] and b, worker)
        finally:
            log = stop_worker(worker)
    assert body, f"the worker stored no poll; its log:\n{log}"
    assert body["results"][0]["status"] == "up"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_beat_and_a_real_worker_poll_a_fake_endpoint(tmp_path, cluster, llama70b):
    """Celery beat schedules the poll cycle; a worker runs it against a fake vLLM on 127.0.0.1. With
    POLL_CONCURRENCY 1 the cycle polls one deployment itself and sends the others out as
    ``poll_batch`` tasks on its queue, which the worker's other thread takes."""
    from fleet.models import Deployment, EndpointPoll
    from fleet.polling.fakeserver import FakeEngineServer

    slugs = ["live", "live-2", "live-3"]
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
        env = worker_env(**isolated_broker(tmp_path), FLEETCAP_POLL_CONCURRENCY="1")
        cmd = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "fleet.project",
            "worker",
            "--beat",
            "--pool",
            "threads",
            "--concurrency",
            "2",
            "--hostname",
            f"beat-{uuid.uuid4().hex[:6]}@test",
            "--loglevel",
            "INFO",
            "--schedule",
            str(tmp_path / "beat-schedule"),
            "--without-gossip",
            "--without-mingle",
        ]
        proc = spawn(cmd, env)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and proc.poll() is None:
                ups = [EndpointPoll.objects.filter(deployment__slug=slug, status="up").count() for slug in slugs]
                if min(ups) >= 2:
                    break
                time.sleep(0.5)
        finally:
            log = stop_worker(proc)
    for slug in slugs:
        polls = list(EndpointPoll.objects.filter(deployment__slug=slug).order_by("polled_at"))
        assert len(polls) >= 2, f"beat and the worker did not poll {slug} twice; log:\n{log}"
        assert all(p.status == "up" for p in polls)
        assert polls[-1].generation_tokens_per_s is not None  # the second poll has rates
        assert Deployment.objects.get(slug=slug).last_status == "up"
    assert "Task fleet.poll_batch[" in log and "succeeded" in log, log


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_a_plan_from_api_call_to_stored_result(platform_api, monkeypatch):
    """POST /api/v1/plans/ commits, enqueues; a worker claims, reports progress, stores the result."""
    from io import StringIO

    from django.core.management import call_command

    from fleet.models import Workload
    from fleet.project.celery import app

    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="agent",
        name="Agent",
        team="dev",
        requests_per_day=200_000,
        mean_prompt_tokens=12_000,
        mean_output_tokens=600,
        p95_context_tokens=64_000,
        prefix_cache_hit_rate=0.9,
        peak_concurrency=256,
        ttft_slo_ms=2000,
        tpot_slo_ms=50,
    )
    queue = f"plans-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    seen = []
    r = platform_api.post("/api/v1/plans/", {"model": "kimi-k3", "workload": "agent"}, format="json")
    assert r.status_code == 202, r.json()
    url = r.json()["url"]
    seen.append(platform_api.get(url).json()["status"])  # before any worker exists: still queued
    worker = start_worker(queue)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and worker.poll() is None:
            body = platform_api.get(url).json()
            seen.append(body["status"])
            if body["status"] in ("done", "failed", "cancelled"):
                break
            time.sleep(0.05)
    finally:
        log = stop_worker(worker)
    assert body["status"] == "done", f"plan ended {body['status']}: {body['error']}\n{log}"
    assert seen[0] == "queued"
    progress = [p["progress"] for p in body["progress_log"]]
    assert progress == sorted(progress) and any(0 < p < 100 for p in progress) and progress[-1] == 100
    assert body["result"]["best"] and body["candidates_evaluated"] == body["result"]["candidates_evaluated"]
