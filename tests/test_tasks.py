"""Celery tasks as configured: names apart from the functions they call, retries only on transient
database errors, poll-now queued (and a clear 503 when the broker is down), per-worker heartbeats."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from fleet.models import EndpointPoll, WorkerHeartbeat
from fleet.project.celery import app
from fleet.tasks import TRANSIENT_ERRORS, poll_batch_task, poll_cycle_task, poll_one_task, prune_polls_task
from planner.tasks import run_plan


def test_tasks_are_named_by_app_and_job_and_beat_sends_those_names(settings):
    names = {t.name for t in (poll_cycle_task, poll_batch_task, poll_one_task, prune_polls_task, run_plan)}
    assert names == {"fleet.poll_cycle", "fleet.poll_batch", "fleet.poll_one", "fleet.prune_polls", "planner.run_plan"}
    registered = set(app.tasks)
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in registered, entry
    assert not [name for name in registered if name.startswith(("fleet.tasks.", "planner.tasks."))]


def test_only_transient_database_errors_are_retried_with_backoff():
    for task in (poll_one_task, prune_polls_task, run_plan):
        assert task.autoretry_for == TRANSIENT_ERRORS and 0 < task.max_retries <= 5, task.name
        assert task.retry_backoff and task.retry_jitter and task.retry_backoff_max <= 60
    for task in (poll_cycle_task, poll_batch_task):  # beat's next cycle does the work again
        assert not getattr(task, "autoretry_for", ()) and task.max_retries == 0, task.name


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setitem(app.conf, "task_always_eager", True)


@pytest.mark.django_db
def test_poll_one_retries_a_database_blip_and_then_polls(deployment, monkeypatch, eager):
    calls = []

    def flaky(d):
        calls.append(d.pk)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return None

    monkeypatch.setattr("fleet.poller.poll_deployment", flaky)
    assert poll_one_task.apply(args=[deployment.pk]).get() == "skipped"
    assert calls == [deployment.pk, deployment.pk]


@pytest.mark.django_db
def test_poll_one_does_not_retry_a_bug(deployment, monkeypatch, eager):
    calls = []

    def broken(d):
        calls.append(d.pk)
        raise KeyError("a bug")

    monkeypatch.setattr("fleet.poller.poll_deployment", broken)
    with pytest.raises(KeyError):
        poll_one_task.apply(args=[deployment.pk]).get()
    assert calls == [deployment.pk]


@pytest.fixture
def broker_down(monkeypatch):
    """The app's producer pool pointed at a Redis port nobody listens on (connection refused)."""

    def reset_pools():
        app._pool = None
        app.amqp._producer_pool = None

    # broker_write_url: what publishing uses (CELERY_BROKER_URL in the environment would win over broker_url).
    monkeypatch.setitem(app.conf, "broker_write_url", "redis://127.0.0.1:9/0")
    reset_pools()
    yield
    monkeypatch.undo()
    reset_pools()


@pytest.mark.django_db
def test_poll_now_answers_503_when_the_broker_is_down_and_nothing_is_half_done(platform_api, deployment, broker_down):
    r = platform_api.post(f"/api/v1/deployments/{deployment.slug}/poll/")
    assert r.status_code == 503, r.content
    assert "task queue is unreachable" in r.json()["detail"] and r["Retry-After"]
    deployment.refresh_from_db()
    assert deployment.poll_lease_until is None and not EndpointPoll.objects.exists()


@pytest.mark.django_db
def test_poll_now_queues_one_task_and_answers_where_the_poll_will_be(platform_api, deployment, monkeypatch):
    sent = []
    monkeypatch.setattr(poll_one_task, "apply_async", lambda args, **kw: sent.append(args))
    r = platform_api.post(f"/api/v1/deployments/{deployment.slug}/poll/")
    assert r.status_code == 202 and r.json()["status"] == "queued" and sent == [[deployment.pk]]
    assert r["Location"].startswith("http://testserver/api/v1/deployments/k3-prod/polls/?since=")
    assert platform_api.get(r["Location"]).status_code == 200


@pytest.mark.django_db
def test_poll_now_while_a_poll_runs_queues_nothing_more(platform_api, deployment, monkeypatch):
    from fleet.poll_store import acquire_lease

    sent = []
    monkeypatch.setattr(poll_one_task, "apply_async", lambda args, **kw: sent.append(args))
    assert acquire_lease(deployment.pk, timezone.now())
    r = platform_api.post(f"/api/v1/deployments/{deployment.slug}/poll/")
    assert r.status_code == 202 and r.json()["status"] == "running" and sent == []


@pytest.mark.django_db
def test_poll_now_of_a_deployment_without_endpoint_is_refused(platform_api, deployment):
    deployment.base_url = ""
    deployment.save()
    r = platform_api.post(f"/api/v1/deployments/{deployment.slug}/poll/")
    assert r.status_code == 400 and "base_url" in r.json()


@pytest.mark.django_db
def test_a_heartbeat_is_an_upsert_per_worker_and_goes_stale_after_three_intervals(settings, client):
    settings.WORKER_HEARTBEAT_S = 10
    WorkerHeartbeat.beat("a@host")
    WorkerHeartbeat.beat("a@host")
    WorkerHeartbeat.beat("b@host")
    assert dict(WorkerHeartbeat.objects.values_list("worker", "beats")) == {"a@host": 2, "b@host": 1}
    WorkerHeartbeat.objects.filter(worker="b@host").update(last_seen=timezone.now() - timedelta(seconds=31))
    assert [w.worker for w in WorkerHeartbeat.alive()] == ["a@host"]
    assert client.get("/healthz").json()["workers_alive"] == 1
