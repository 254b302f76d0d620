"""Celery tasks as configured: names apart from the functions they call, retries only on transient
database errors, poll-now queued through the outbox (stored when the broker is down), per-worker heartbeats."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from fleet.models import EndpointPoll, OutboxMessage, WorkerHeartbeat
from fleet.outbox import sweep
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


@pytest.mark.django_db
def test_poll_now_with_the_broker_down_is_stored_answered_202_and_sent_when_it_is_back(
    platform_api, deployment, broker_down, monkeypatch, settings
):
    """Before the outbox this answered 503 and the poll was never made; now it waits in the outbox."""
    OutboxMessage.objects.filter(
        task="planner.refresh_answers"
    ).delete()  # the fixtures' recomputations (never sent: a test's transaction never commits)
    r = platform_api.post(f"/api/v1/deployments/{deployment.slug}/poll/")
    assert r.status_code == 202, r.content
    body = r.json()
    assert body["status"] == "queued" and body["dispatch"] == "broker_unreachable"
    assert "broker unreachable" in body["detail"]
    deployment.refresh_from_db()
    assert deployment.poll_lease_until is None and not EndpointPoll.objects.exists()
    message = OutboxMessage.objects.get(task="fleet.poll_one")
    assert message.task == "fleet.poll_one" and message.args == [deployment.pk] and message.sent_at is None
    assert message.attempts == 1 and "OperationalError" in message.last_error
    broker_down.restore()  # the broker is back: the sweeper sends it
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append((name, kw["args"])))
    settings.OUTBOX_GRACE_S = 0
    assert sweep().as_dict() == {"sent": 1, "unsent": 0, "deleted": 0}
    assert sent == [("fleet.poll_one", [deployment.pk])]
    assert OutboxMessage.objects.get(task="fleet.poll_one").sent_at is not None


@pytest.mark.django_db
def test_poll_now_queues_one_task_and_answers_where_the_poll_will_be(platform_api, deployment, monkeypatch):
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append((name, kw["args"])))
    r = platform_api.post(f"/api/v1/deployments/{deployment.slug}/poll/")
    assert r.status_code == 202 and r.json()["status"] == "queued" and r.json()["dispatch"] == "sent"
    assert sent == [("fleet.poll_one", [deployment.pk])]
    assert OutboxMessage.objects.get(task="fleet.poll_one").sent_at is not None
    assert r["Location"].startswith("http://testserver/api/v1/deployments/k3-prod/polls/?since=")
    assert platform_api.get(r["Location"]).status_code == 200


@pytest.mark.django_db
def test_poll_now_while_a_poll_runs_queues_nothing_more(platform_api, deployment, monkeypatch):
    from fleet.poll_store import acquire_lease

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append(kw["args"]))
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
