"""A real Celery worker process, started by the test, runs a task that writes to the database.

Uses whatever the settings are configured with: Redis + PostgreSQL in CI (`.ci/run`), the
filesystem broker + the SQLite test file otherwise. Each test uses its own queue so parallel
test processes never take each other's messages.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

import pytest
from celery_workers import database_url, isolated_broker, spawn, start_worker, stop_worker

from fleet.models import WorkerHeartbeat
from fleet.tasks import heartbeat


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_real_worker_runs_a_task_that_writes_to_the_database():
    queue = f"test-{uuid.uuid4().hex[:10]}"
    worker = start_worker(queue)
    try:
        heartbeat.apply_async(kwargs={"worker": queue}, queue=queue)
        heartbeat.apply_async(kwargs={"worker": queue}, queue=queue)
        deadline = time.monotonic() + 60
        row = None
        while time.monotonic() < deadline and worker.poll() is None:
            row = WorkerHeartbeat.objects.filter(worker=queue, beats=2).first()
            if row:
                break
            time.sleep(0.2)
    finally:
        log = stop_worker(worker)
    assert row is not None, f"the worker did not record two beats; its log:\n{log}"
    assert WorkerHeartbeat.objects.filter(worker=queue).count() == 1  # an upsert, not a new row per beat


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
                slug=slug, cluster=cluster, model=llama70b, tp=4, engine="vllm", base_url=server.url,
                served_model_id=server.model_id, poll_interval_s=5,
            )  # fmt: skip
        env = {**os.environ, "DATABASE_URL": database_url(), **isolated_broker(tmp_path),
               "FLEETCAP_POLL_CONCURRENCY": "1"}  # fmt: skip
        cmd = [sys.executable, "-m", "celery", "-A", "fleet.project", "worker", "--beat", "--pool", "threads",
               "--concurrency", "2", "--hostname", f"beat-{uuid.uuid4().hex[:6]}@test", "--loglevel", "INFO",
               "--schedule", str(tmp_path / "beat-schedule"), "--without-gossip", "--without-mingle"]  # fmt: skip
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
    assert "Task fleet.tasks.poll_batch[" in log and "succeeded" in log, log


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
        slug="agent", name="Agent", team="dev", requests_per_day=200_000, mean_prompt_tokens=12_000,
        mean_output_tokens=600, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9, peak_concurrency=256,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
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
