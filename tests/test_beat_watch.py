"""Beat is watched (issue 29): with Celery beat stopped nothing is polled, yet the fleet page said "up"
and ``/healthz`` said healthy. Now every poll cycle records its start (``ScheduledRun``), ``/healthz``
and the fleet page say "Polls stopped at ..." once the last one is older than twice beat's interval,
and a deployment whose last poll is older than its staleness limit (the router's rule) reads "stale",
never "up": on the fleet, cluster and deployment pages, the fleet CSV, the API and ``/metrics``.
Beat stopping is simulated by cycle and poll times in the past: no real waiting (the real drill is
in tests/test_drills.py)."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from html import escape

import pytest
from api_keys import api_key
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from fleet.models import Deployment, ScheduledRun, WorkerHeartbeat
from fleet.models.inventory import STALE_STATUS
from fleet.models.ops import POLL_CYCLE_JOB, polling_state
from fleet.tasks import poll_cycle_task
from planner.engine import stale_limit_s
from planner.routing import deployment_candidates

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client, make_user):
    user = make_user("v", "viewer")
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def polled(cluster, llama70b) -> Deployment:
    """A Llama 3.1 70B deployment on vLLM, polled every 15 s, whose last poll said "up" just now."""
    return Deployment.objects.create(
        slug="llama", cluster=cluster, model=llama70b, tp=4, engine="vllm", base_url="http://127.0.0.1:30001",
        served_model_id="meta-llama/Llama-3.1-70B-Instruct", poll_interval_s=15, last_status="up",
        last_polled=timezone.now(),
    )  # fmt: skip


def cycle_started(seconds_ago: float) -> None:
    ScheduledRun.objects.update_or_create(
        job=POLL_CYCLE_JOB, defaults={"last_started": timezone.now() - timedelta(seconds=seconds_ago)}
    )


def test_a_poll_cycle_records_its_start(polled, monkeypatch):
    """Beat's cycle marks its run before it polls (here it polls nothing)."""
    from fleet.poller import start_poll_cycle

    monkeypatch.setattr("fleet.poller.run_poll_cycle", lambda deployments: None)
    assert polling_state().state == "never"
    before = timezone.now()
    start_poll_cycle(lambda ids: None)
    start_poll_cycle(lambda ids: None)
    run = ScheduledRun.objects.get(job=POLL_CYCLE_JOB)
    assert run.runs == 2 and run.last_started >= before and polling_state().state == "ok"


def test_the_celery_task_of_the_cycle_records_it_too(polled):
    Deployment.objects.filter(pk=polled.pk).update(base_url="")  # nothing to poll: the cycle records itself
    poll_cycle_task.apply(throw=True)
    assert ScheduledRun.objects.get(job=POLL_CYCLE_JOB).runs == 1


def test_a_stopped_beat_is_visible_on_healthz_and_the_fleet_page_within_two_poll_intervals(client, viewer, settings):
    assert settings.POLL_CYCLE_S == 5
    WorkerHeartbeat.objects.create(worker="w@host", last_seen=timezone.now())  # the worker is fine
    cycle_started(9)  # under two intervals (10 s) ago: polls run
    health = client.get("/healthz")
    assert health.status_code == 200
    assert {k: health.json()[k] for k in ("status", "polling", "detail")} == {
        "status": "ok", "polling": "ok", "detail": ""
    }  # fmt: skip
    assert 'id="polls-stopped"' not in viewer.get("/").content.decode()
    cycle_started(11)  # beat stopped: no cycle for more than two intervals
    health = client.get("/healthz")
    body = health.json()
    assert health.status_code == 200  # the web is up: a load balancer keeps it; a monitor reads status
    assert body["status"] == "degraded" and body["polling"] == "stopped" and body["poll_cycle_limit_s"] == 10
    last = ScheduledRun.objects.get().last_started
    assert body["last_poll_cycle"] == last.isoformat()
    assert body["detail"].startswith(f"Polls stopped at {last:%H:%M} UTC: no poll cycle started for 11 s")
    for page in (viewer.get("/"), viewer.get("/", HTTP_HX_REQUEST="true")):  # the page, and its 5 s refresh
        html = page.content.decode()
        assert 'id="polls-stopped"' in html and f"Polls stopped at {last:%H:%M} UTC" in html
    assert "polls stopped</span>" in viewer.get("/").content.decode()  # the background workers' card


def test_polls_stopped_yesterday_say_the_date_and_never_is_said_too(client, viewer):
    cycle_started(26 * 3600)
    state = polling_state()
    assert state.state == "stopped" and state.stopped_at == f"{state.last_cycle:%Y-%m-%d %H:%M} UTC"
    ScheduledRun.objects.all().delete()
    assert client.get("/healthz").json()["polling"] == "never"
    assert "No poll cycle has run yet" in viewer.get("/", HTTP_HX_REQUEST="true").content.decode()


def test_healthz_is_503_only_when_the_database_is_down(client, monkeypatch):
    from django.db.utils import OperationalError

    def down(*args, **kwargs):
        raise OperationalError("server closed the connection")

    monkeypatch.setattr("fleet.views.health.polling_state", down)
    r = client.get("/healthz")
    assert r.status_code == 503 and r.json()["status"] == "unhealthy" and r.json()["polling"] == "unknown"


def _statuses(viewer, deployment: Deployment) -> dict[str, str]:
    """The deployment's status as every surface shows it."""
    fleet_row = re.search(rf'<tr data-deployment="{deployment.slug}">.*?<span class="badge (\w+)"',
                          viewer.get("/").content.decode()).group(1)  # fmt: skip
    cluster = re.search(r'data-status="(\w+)"', viewer.get(f"/clusters/{deployment.cluster.slug}/").content.decode())
    page = re.search(
        r'id="deployment-status"[^>]*>(\w+)<', viewer.get(f"/deployments/{deployment.slug}/").content.decode()
    )
    rows = list(csv.DictReader(io.StringIO(viewer.get("/fleet.csv").content.decode())))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_key(viewer.user)}")
    body = api.get(f"/api/v1/deployments/{deployment.slug}/").json()
    bearer = APIClient()
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key(viewer.user)}")
    families = {f.name: f for f in text_string_to_metric_families(bearer.get("/metrics").content.decode())}
    (up,) = [s.value for s in families["fleetcap_deployment_up"].samples if s.labels["deployment"] == deployment.slug]
    return {
        "fleet": fleet_row,
        "cluster": cluster.group(1),
        "deployment": page.group(1),
        "csv": next(r["deployment_status"] for r in rows if r["deployment"] == deployment.slug),
        "api": body["last_status"],
        "api_last_poll": body["last_poll_status"],
        "metrics_up": str(int(up)),
    }


def test_a_stale_deployment_never_reads_up(viewer, polled, settings):
    """Its limit is the router's (max(3 x 15 s, 120 s) = 120 s): just under it reads up, just past it stale.
    The test moves the last poll into the past, as no poll does, so shared answers are off here (they
    last until the first shown status turns stale by age: tests/test_page_cache.py)."""
    settings.PAGE_CACHE_S = 0
    assert polled.stale_after_s == stale_limit_s(15) == 120
    (candidate,) = deployment_candidates([polled], timezone.now())
    assert candidate.stale_after_s == polled.stale_after_s  # one rule: the router reads the same one
    Deployment.objects.filter(pk=polled.pk).update(last_polled=timezone.now() - timedelta(seconds=110))
    fresh = {"fleet": "up", "cluster": "up", "deployment": "up", "csv": "up", "api": "up", "api_last_poll": "up",
             "metrics_up": "1"}  # fmt: skip
    assert _statuses(viewer, polled) == fresh
    Deployment.objects.filter(pk=polled.pk).update(last_polled=timezone.now() - timedelta(seconds=121))
    stale = {"fleet": STALE_STATUS, "cluster": STALE_STATUS, "deployment": STALE_STATUS, "csv": STALE_STATUS,
             "api": STALE_STATUS, "api_last_poll": "up", "metrics_up": "0"}  # fmt: skip
    assert _statuses(viewer, polled) == stale
    title = Deployment.objects.get(pk=polled.pk).shown_status_title()
    assert "said up" in title and "staleness limit (120 s)" in title
    assert f'title="{escape(title, quote=True)}"' in viewer.get("/").content.decode()


def test_the_staleness_limit_follows_the_router_settings_and_never_polled_is_not_stale(settings, polled):
    settings.ROUTE_STALE_POLL_INTERVALS, settings.ROUTE_STALE_MIN_S = 2, 10
    Deployment.objects.filter(pk=polled.pk).update(last_polled=timezone.now() - timedelta(seconds=31))
    polled.refresh_from_db()
    assert polled.stale_after_s == 30 and polled.shown_status() == STALE_STATUS
    Deployment.objects.filter(pk=polled.pk).update(last_polled=None, last_status="unknown")
    polled.refresh_from_db()
    assert polled.shown_status() == "unknown" and polled.shown_status_title() == ""
