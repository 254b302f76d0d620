"""Polling from Django: the API's poll-now (queued; run eagerly here, by a real worker in
tests/test_celery_worker.py) and poll list, live state, lease, guard at registration,
bounded cycles, pruning into hourly rollups, calibration, and secrets kept out of everything."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.models import Deployment, EndpointPoll, EndpointPollHourly
from fleet.poll_rollups import prune_polls
from fleet.poll_store import acquire_lease
from fleet.poller import run_poll_cycle
from fleet.polling.fakeserver import FakeEngineServer

SECRET = "sk-live-endpoint-key-42"


@pytest.fixture
def llama(llama70b, cluster):
    return llama70b


@pytest.fixture
def eager(monkeypatch):
    """Tasks run inside apply_async (no broker, no worker): what the worker would do, at once."""
    from fleet.project.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)


def poll_now(api, slug: str = "live") -> dict:
    """POST poll-now (202), then the newest poll at the URL it answers with."""
    r = api.post(f"/api/v1/deployments/{slug}/poll/")
    assert r.status_code == 202, r.content
    assert r["Location"] == r.json()["polls"]
    polls = api.get(r.json()["polls"]).json()
    assert polls["count"] >= 1, polls
    return polls["results"][0]


def make_deployment(cluster, model, server, slug="live", **extra) -> Deployment:
    d = Deployment(slug=slug, cluster=cluster, model=model, tp=4, replicas=1, engine="vllm", base_url=server.url,
                   served_model_id=server.model_id, **extra)  # fmt: skip
    d.full_clean()
    d.save()
    return d


@pytest.mark.django_db
def test_poll_now_stores_a_poll_and_live_state(platform_api, cluster, llama, eager):
    with FakeEngineServer("vllm") as server:
        make_deployment(cluster, llama, server)
        first = poll_now(platform_api)
        assert first["status"] == "up" and first["latency_ms"] > 0
        time.sleep(0.2)
        second = poll_now(platform_api)
    assert second["generation_tokens_per_s"] is not None and second["generation_tokens_per_s"] >= 0
    detail = platform_api.get("/api/v1/deployments/live/").json()
    assert detail["last_status"] == "up" and detail["last_polled"]
    assert "requests_running" in detail["last_metrics"]
    assert EndpointPoll.objects.count() == 2
    from fleet.models import DailyPollCount

    (today,) = DailyPollCount.objects.all()
    assert today.polls == 2 and today.busy_polls == sum(1 for p in EndpointPoll.objects.all() if p.requests_running)
    # What spend's utilisation is averaged over: the polls that read a running figure, and their sum.
    polls = list(EndpointPoll.objects.all())
    assert today.running_polls == sum(1 for p in polls if p.requests_running is not None) == 2
    assert today.running_sum == sum(p.requests_running for p in polls)
    # The token volume (a workload's observed volume): the second poll's rates over the interval since the
    # first (the counters' increase); the first had no previous reading, so it adds nothing.
    latest = EndpointPoll.objects.order_by("-polled_at").first()
    interval = latest.outcome["derived"]["interval_s"]
    assert interval > 0 and today.output_seconds == pytest.approx(interval)
    assert today.output_tokens == pytest.approx(latest.generation_tokens_per_s * interval)
    assert today.prompt_tokens == pytest.approx(latest.prompt_tokens_per_s * interval)


@pytest.mark.django_db
def test_poll_list_filters(viewer_api, cluster, llama):
    with FakeEngineServer("vllm") as server:
        d = make_deployment(cluster, llama, server)
        from fleet.poller import poll_deployment

        poll_deployment(d)
        server.set_behaviour("unauthorized")
        poll_deployment(d)
    all_polls = viewer_api.get("/api/v1/deployments/live/polls/").json()
    assert all_polls["count"] == 2
    only = viewer_api.get("/api/v1/deployments/live/polls/?status=unauthorized").json()
    assert [p["status"] for p in only["results"]] == ["unauthorized"]
    future = (timezone.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert viewer_api.get(f"/api/v1/deployments/live/polls/?since={future}").json()["count"] == 0
    assert viewer_api.get("/api/v1/deployments/live/polls/?since=yesterday").status_code == 400


@pytest.mark.django_db
def test_viewer_cannot_trigger_a_poll(viewer_api, cluster, llama):
    with FakeEngineServer("vllm") as server:
        make_deployment(cluster, llama, server)
        assert viewer_api.post("/api/v1/deployments/live/poll/").status_code == 403
    assert not EndpointPoll.objects.exists()


@pytest.mark.django_db
def test_the_api_key_is_sent_and_never_stored_or_shown(platform_api, cluster, llama, caplog, eager):
    with FakeEngineServer("vllm", api_key=SECRET) as server:
        d = make_deployment(cluster, llama, server)
        assert poll_now(platform_api)["status"] == "unauthorized"
        d.set_api_key(SECRET)
        d.save()
        time.sleep(0.01)  # each poll-now's URL lists the polls since it was asked
        assert poll_now(platform_api)["status"] == "up"
        d.set_api_key("sk-wrong-key-99")
        d.save()
        time.sleep(0.01)
        bad = poll_now(platform_api)
    assert bad["status"] == "unauthorized"
    stored = json.dumps(list(EndpointPoll.objects.values("reason", "outcome")))
    listed = platform_api.get("/api/v1/deployments/live/polls/").content.decode()
    for text in (stored, listed, caplog.text):
        assert SECRET not in text and "sk-wrong-key-99" not in text


@pytest.mark.django_db
def test_registration_refuses_addresses_the_poller_may_not_reach(platform_api, cluster, llama, settings):
    body = {"slug": "x", "cluster": cluster.slug, "model": llama.slug, "tp": 4, "served_model_id": "llama"}
    # The default is loopback only: a private address is refused until the operator lists its network.
    for url in ("http://169.254.169.254", "http://[fd00:ec2::254]/", "http://100.64.0.1:8000", "file:///etc/passwd",
                "http://10.1.2.3:8000"):  # fmt: skip
        r = platform_api.post("/api/v1/deployments/", {**body, "base_url": url}, format="json")
        assert r.status_code == 400 and "base_url" in r.json(), (url, r.json())
    settings.POLL_ALLOWED_NETWORKS = ["127.0.0.0/8", "10.0.0.0/8", "fc00::/7"]
    r = platform_api.post("/api/v1/deployments/", {**body, "base_url": "http://[fd00:ec2::254]/"}, format="json")
    assert r.status_code == 400 and "always refused" in r.json()["base_url"][0], r.json()
    ok = platform_api.post("/api/v1/deployments/", {**body, "base_url": "http://10.1.2.3:8000"}, format="json")
    assert ok.status_code == 201, ok.json()


@pytest.mark.django_db
def test_only_one_worker_holds_the_lease(cluster, llama):
    with FakeEngineServer("vllm") as server:
        d = make_deployment(cluster, llama, server)
    now = timezone.now()
    assert acquire_lease(d.pk, now) is True
    assert acquire_lease(d.pk, now) is False
    assert acquire_lease(d.pk, now + timedelta(minutes=5)) is True  # an expired lease can be taken over


@pytest.mark.django_db(transaction=True)
def test_a_hanging_endpoint_does_not_delay_the_others(cluster, llama, settings):
    settings.POLL_TIMEOUT_S = 1.0
    with FakeEngineServer("vllm") as ok, FakeEngineServer("vllm", behaviour="hang") as hung:
        good = make_deployment(cluster, llama, ok, slug="good")
        bad = make_deployment(cluster, llama, hung, slug="hung")
        started = time.monotonic()
        report = run_poll_cycle()
        elapsed = time.monotonic() - started
        assert report.due == 2 and report.polled == 2
        assert elapsed < settings.POLL_TIMEOUT_S * 3 + 1.5
        # Both were polled; the next cycle finds neither due before its interval.
        assert run_poll_cycle().due == 0
    statuses = dict(EndpointPoll.objects.values_list("deployment__slug", "status"))
    assert statuses == {"good": "up", "hung": "down"}
    good.refresh_from_db()
    bad.refresh_from_db()
    assert (good.last_status, bad.last_status) == ("up", "down")
    assert good.poll_lease_until is None and bad.poll_lease_until is None


@pytest.mark.django_db
def test_status_changes_are_dated(cluster, llama):
    from fleet.poller import poll_deployment

    with FakeEngineServer("vllm") as server:
        d = make_deployment(cluster, llama, server)
        poll_deployment(d)
        d.refresh_from_db()
        first_change = d.last_status_changed
        poll_deployment(d)
        d.refresh_from_db()
        assert d.last_status_changed == first_change  # still up: not a change
        server.set_behaviour("wrong_model")
        poll_deployment(d)
    d.refresh_from_db()
    assert d.last_status == "misconfigured" and d.last_status_changed > first_change


@pytest.mark.django_db
def test_calibration_compares_published_and_predicted_cache(cluster, llama):
    from fleet.poller import poll_deployment
    from planner.snapshots import refresh_snapshots

    with FakeEngineServer("vllm") as server:
        d = make_deployment(cluster, llama, server)
        unsized = poll_deployment(d)  # no capacity snapshot yet: nothing predicted, nothing compared
        assert unsized.observed_cache_tokens and unsized.predicted_cache_tokens is None
        refresh_snapshots([d.pk])  # the worker's part: the prediction is stored with the capacity
        d = type(d).objects.select_related("capacity_snapshot").get(pk=d.pk)
        poll = poll_deployment(d)
    assert poll.observed_cache_tokens and poll.predicted_cache_tokens
    # A vLLM deployment is predicted with the vLLM profile, in the shape vLLM publishes: num_gpu_blocks x
    # block_size (tokens), here one full-attention group of 80 layers in 16-token blocks.
    result = d.sizing()
    assert result.engine == "vllm" and result.engine_block_size_tokens == 16
    assert poll.predicted_cache_tokens == result.engine_num_blocks * 16
    per_block = 16 * result.kv_bytes_per_token_per_gpu  # 80 layers x 16 tokens x 1,024 B
    assert result.engine_num_blocks == result.cache_bytes // per_block
    assert poll.calibration_ratio == poll.observed_cache_tokens / poll.predicted_cache_tokens


@pytest.mark.django_db
def test_old_polls_roll_up_by_the_hour_and_are_pruned(cluster, llama, settings):
    settings.POLL_RETENTION_DAYS = 7
    with FakeEngineServer("vllm") as server:
        d = make_deployment(cluster, llama, server)
    old = timezone.now().replace(minute=10, second=0, microsecond=0) - timedelta(days=10)
    for i, (running, prompt) in enumerate([(0, None), (2, 1000.0), (4, 3000.0)]):
        EndpointPoll.objects.create(deployment=d, polled_at=old + timedelta(minutes=i), status="up",
                                    requests_running=running, kv_cache_usage=0.5,
                                    prompt_tokens_per_s=prompt)  # fmt: skip
    EndpointPoll.objects.create(deployment=d, polled_at=timezone.now(), status="up", requests_running=1)
    rolled, kept = prune_polls()
    assert (rolled, kept) == (3, 1)
    (hour,) = EndpointPollHourly.objects.all()
    assert (hour.polls, hour.busy_polls, hour.requests_running_avg, hour.requests_running_max) == (3, 2, 2.0, 4.0)
    assert hour.prompt_tokens_per_s_avg == 2000.0  # (1,000 + 3,000) / 2: the poll without a prompt rate left out
    assert prune_polls() == (0, 1)  # idempotent
    assert EndpointPollHourly.objects.count() == 1


@pytest.mark.django_db
def test_a_cycle_skips_what_another_worker_holds(cluster, llama):
    from fleet.poll_store import take_leases

    with FakeEngineServer("vllm") as server:
        mine = make_deployment(cluster, llama, server, slug="mine")
        theirs = make_deployment(cluster, llama, server, slug="theirs")
        owner, leased = take_leases([theirs.pk], timezone.now())
        assert leased == {theirs.pk}
        report = run_poll_cycle(deployments=[mine, theirs])
    assert (report.due, report.polled, report.skipped, report.failed) == (2, 1, 1, 0)
    assert list(EndpointPoll.objects.values_list("deployment__slug", flat=True)) == ["mine"]
    theirs.refresh_from_db()
    assert theirs.poll_lease_owner == owner and theirs.poll_lease_until is not None  # still theirs
    mine.refresh_from_db()
    assert mine.poll_lease_owner == "" and mine.poll_lease_until is None


@pytest.mark.django_db(transaction=True)
def test_a_deployment_deleted_while_polled_loses_no_other_poll(cluster, llama):
    """Polls are stored in batches; one that can no longer be stored does not take the batch down."""
    from fleet.poll_store import Polled, store_polls, take_leases
    from fleet.polling import poll_endpoint
    from planner.engine import poll_routes

    with FakeEngineServer("vllm") as server:
        kept = make_deployment(cluster, llama, server, slug="kept")
        gone = make_deployment(cluster, llama, server, slug="gone")
        take_leases([kept.pk, gone.pk], timezone.now())
        outcomes = [
            poll_endpoint(server.url, "vllm", server.model_id, None, timeout_s=2, engines=poll_routes())
            for _ in range(2)
        ]
    Deployment.objects.filter(pk=gone.pk).delete()
    stored = store_polls([Polled(kept, outcomes[0], timezone.now()), Polled(gone, outcomes[1], timezone.now())])
    assert [p.deployment_id for p in stored] == [kept.pk]
    assert store_polls([Polled(gone, outcomes[1], timezone.now())]) == []  # alone too: logged, not raised
    assert list(EndpointPoll.objects.values_list("deployment__slug", flat=True)) == ["kept"]
    kept.refresh_from_db()
    assert kept.last_status == "up" and kept.poll_lease_until is None
    from fleet.models import DailyPollCount

    assert list(DailyPollCount.objects.values_list("deployment__slug", "polls")) == [("kept", 1)]


@pytest.mark.django_db(transaction=True)
def test_a_cycle_touches_the_database_from_its_own_thread_only(cluster, llama, monkeypatch):
    """The requests run on an event loop in a helper thread that never opens a database connection:
    one connection per cycle, however many endpoints are in flight."""
    from django.db.backends.base.base import BaseDatabaseWrapper

    with FakeEngineServer("vllm") as server:
        for i in range(5):
            make_deployment(cluster, llama, server, slug=f"d{i}")
        threads: set[int] = set()
        cursor = BaseDatabaseWrapper.cursor

        def spying(self):
            threads.add(threading.get_ident())
            return cursor(self)

        monkeypatch.setattr(BaseDatabaseWrapper, "cursor", spying)
        report = run_poll_cycle()
    assert report.polled == 5 and EndpointPoll.objects.count() == 5
    assert threads == {threading.get_ident()}


@pytest.mark.django_db(transaction=True)
def test_a_fleet_larger_than_the_concurrency_is_split_into_batches(cluster, llama, settings):
    """The beat's cycle polls POLL_CONCURRENCY deployments itself and hands out the rest in batches
    of that size; a batch polls what is still due, so a late or repeated batch polls nothing twice."""
    from fleet.poller import poll_batch, start_poll_cycle

    settings.POLL_CONCURRENCY = 2
    with FakeEngineServer("vllm") as server:
        slugs = [f"d{i}" for i in range(5)]
        ids = {make_deployment(cluster, llama, server, slug=slug).pk for slug in slugs}
        batches: list[list[int]] = []
        report = start_poll_cycle(batches.append)
        assert report.polled == 2 and [len(b) for b in batches] == [2, 1]
        handed_out = {pk for batch in batches for pk in batch}
        assert handed_out | set(EndpointPoll.objects.values_list("deployment_id", flat=True)) == ids
        assert [poll_batch(b).polled for b in batches] == [2, 1]
        assert [poll_batch(b).polled for b in batches] == [0, 0]  # delivered again: nothing is due
    assert sorted(EndpointPoll.objects.values_list("deployment__slug", flat=True)) == slugs


@pytest.mark.django_db
def test_live_block_check_sets_vllm_cache_config_beside_the_vllm_profile(cluster, llama):
    """vLLM publishes cache_config_info (num_gpu_blocks, block_size); each poll stores them beside the vLLM
    profile's engine_num_blocks / engine_block_size_tokens for the deployment as registered (not the
    engine's own figures), and flags a ratio outside 0.97-1.03."""
    from fleet.poller import poll_deployment

    with FakeEngineServer("vllm") as server:
        d = make_deployment(cluster, llama, server, engine_version="0.11.0")
        from planner.snapshots import refresh_snapshots

        refresh_snapshots([d.pk])  # the worker's part: the prediction is stored with the capacity
        d = type(d).objects.get(pk=d.pk)
        expected = d.sizing()  # its engine is vllm
        blocks, block = expected.engine_num_blocks, expected.engine_block_size_tokens
        assert (blocks, block) != (2000, 16)  # the fake's own default is not what is predicted
        server.set_cache_config(round(blocks * 1.02), block)
        near = poll_deployment(d)
        server.set_cache_config(round(blocks * 0.90), block)
        far = poll_deployment(d)
        server.set_cache_config(blocks, 32)
        other_block = poll_deployment(d)
    assert (near.observed_num_blocks, near.predicted_num_blocks) == (round(blocks * 1.02), blocks)
    assert near.predicted_block_size == block == 16 and near.block_check_ok is True
    assert far.block_check_ok is False and far.block_ratios[0] == pytest.approx(0.90, abs=1e-3)
    assert other_block.block_check_ok is False and other_block.block_ratios == (1.0, 2.0)


@pytest.mark.django_db
def test_no_block_check_for_engines_without_cache_config(cluster, llama):
    from fleet.poller import poll_deployment

    with FakeEngineServer("sglang") as server:
        d = make_deployment(cluster, llama, server)
        d.engine = "sglang"
        d.save()
        poll = poll_deployment(d)
    assert poll.observed_num_blocks is None and poll.block_check_ok is None
