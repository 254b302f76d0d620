"""The fleet table rendered once per version of its records (fleet.page_cache): served again from the
cache while nothing it shows changed, rendered anew as soon as a record, a poll or a snapshot changes,
never shared between users whose permissions differ, and never older than its window."""

from __future__ import annotations

import re
import time as real_time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet import page_cache
from fleet.models import CapacitySnapshot, Cluster, Deployment
from fleet.models.snapshots import input_versions, versions_key

HX = {"HX-Request": "true"}


def table(client, url: str = "/") -> tuple[str, int]:
    """The fleet table partial's HTML and the queries it took."""
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, headers=HX)
    assert response.status_code == 200
    return response.content.decode(), len(ctx.captured_queries)


def status_of(html: str, slug: str) -> str:
    row = re.search(rf'<tr[^>]*>\s*<td><a href="/deployments/{slug}/">.*?</tr>', html, re.S)
    assert row, html[:2000]
    return re.search(r'<span class="badge (\w+)"', row[0].split("</td>", 2)[2])[1]


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


@pytest.mark.django_db
def test_a_second_request_is_served_without_rendering_the_table_again(viewer, deployment):
    first, rendered = table(viewer)
    again, served = table(viewer)
    assert again == first
    # Rendering reads clusters, deployments, models, prices...; serving reads the records' version alone
    # (with the session, user and permissions the login check reads).
    assert served < rendered - 4, (served, rendered)


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """page_cache's clock, moved by hand: [seconds since the epoch] (every test here: a window boundary
    falling between two requests would make a served answer a computed one)."""
    now = [1_000_000.0]
    monkeypatch.setattr(page_cache, "time", FakeTime(now))
    return now


class FakeTime:
    """page_cache's ``time`` module with a clock of the test's: Django's, DRF's and the rest keep theirs."""

    def __init__(self, now: list[float]) -> None:
        self.now = now
        self.monotonic, self.sleep = real_time.monotonic, real_time.sleep

    def time(self) -> float:
        return self.now[0]


@pytest.mark.django_db
def test_a_poll_shows_at_the_next_window(viewer, deployment, clock):
    now = timezone.now()
    Deployment.objects.filter(pk=deployment.pk).update(last_status="up", last_polled=now)
    assert status_of(table(viewer)[0], "k3-prod") == "up"
    # What the poll store does (one UPDATE, no save(): `updated` does not move, `last_polled` does). Live
    # state is not in the records' version: it shows in the next window, the table's refresh period.
    Deployment.objects.filter(pk=deployment.pk).update(last_status="down", last_polled=now + timezone.timedelta(1e-3))
    assert status_of(table(viewer)[0], "k3-prod") == "up"
    clock[0] += page_cache.window_s()
    assert status_of(table(viewer)[0], "k3-prod") == "down"


@pytest.mark.django_db
def test_a_saved_deployment_shows_at_once(viewer, deployment, clock):
    assert 'href="/deployments/k3-prod/"' in table(viewer)[0]
    d = Deployment.objects.get(pk=deployment.pk)
    d.slug = "k3-renamed"
    d.save()
    assert 'href="/deployments/k3-renamed/"' in table(viewer)[0]


@pytest.mark.django_db
def test_a_saved_cluster_and_a_stale_marked_snapshot_show_at_once(viewer, deployment):
    html, _ = table(viewer)
    assert "H100 pool" in html
    cluster = Cluster.objects.get(pk=deployment.cluster_id)
    cluster.name = "Renamed pool"
    cluster.save()
    assert "Renamed pool" in table(viewer)[0]

    d = Deployment.objects.select_related("cluster__sku", "model", "workload").get(pk=deployment.pk)
    versions = versions_key(input_versions(d))
    now = timezone.now()
    CapacitySnapshot.objects.create(deployment=d, computed_at=now, capacity_sequences=7, fits=True, versions=versions)
    assert "snapshot-flag" not in table(viewer)[0].split("k3-prod", 1)[1].split("</tr>", 1)[0]
    CapacitySnapshot.mark_stale(CapacitySnapshot.objects.filter(pk=d.pk), "the quote changed", timezone.now())
    assert 'snapshot-flag" title="the quote changed' in table(viewer)[0]


@pytest.mark.django_db
def test_a_deleted_deployment_leaves_the_table_at_once(viewer, deployment):
    assert "k3-prod" in table(viewer)[0]
    Deployment.objects.filter(pk=deployment.pk).delete()
    assert "k3-prod" not in table(viewer)[0]


@pytest.mark.django_db
def test_users_whose_permissions_differ_never_share_a_rendering(client, make_user, cluster):
    nothing = "/?q=no-such-cluster"
    client.force_login(make_user("p", "platform"))
    assert "Register one" in table(client, nothing)[0]
    client.force_login(make_user("v", "viewer"))
    assert "Register one" not in table(client, nothing)[0]


@pytest.mark.django_db
def test_the_table_is_rendered_again_in_the_next_window(viewer, deployment, clock):
    _, rendered = table(viewer)
    served = table(viewer)[1]
    assert served < rendered
    clock[0] += page_cache.window_s()
    assert table(viewer)[1] > served


@pytest.mark.django_db
def test_the_full_page_holds_the_same_table_as_the_partial(viewer, deployment):
    partial, _ = table(viewer)
    page = viewer.get("/").content.decode()
    assert partial in page


@pytest.mark.django_db
def test_the_spend_report_is_shared_and_shows_a_new_cluster_at_once(viewer_api, cluster, sku):
    from fleet.models import Provider

    first = viewer_api.get("/api/v1/spend/").json()
    assert [c["cluster"] for c in first["clusters"]] == ["h100-pool"]
    with CaptureQueriesContext(connection) as served:
        assert viewer_api.get("/api/v1/spend/").json() == first
    Cluster.objects.create(
        slug="b-pool", name="B pool", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="research"
    )
    with CaptureQueriesContext(connection) as computed:
        again = viewer_api.get("/api/v1/spend/").json()
    assert sorted(c["cluster"] for c in again["clusters"]) == ["b-pool", "h100-pool"]
    assert len(served.captured_queries) < len(computed.captured_queries)


@pytest.mark.django_db
def test_the_api_deployment_list_is_shared_and_shows_a_change_at_once(viewer_api, deployment, clock):
    first = viewer_api.get("/api/v1/deployments/").json()
    with CaptureQueriesContext(connection) as served:
        assert viewer_api.get("/api/v1/deployments/").json() == first
    d = Deployment.objects.get(pk=deployment.pk)
    d.poll_interval_s = 60
    d.save()
    with CaptureQueriesContext(connection) as computed:
        again = viewer_api.get("/api/v1/deployments/").json()
    assert [x["poll_interval_s"] for x in again["results"]] == [60]
    assert len(served.captured_queries) < len(computed.captured_queries)
    # A poll shows in the next window.
    Deployment.objects.filter(pk=d.pk).update(last_status="down", last_polled=timezone.now())
    assert [x["last_status"] for x in viewer_api.get("/api/v1/deployments/").json()["results"]] != ["down"]
    clock[0] += page_cache.window_s()
    assert [x["last_status"] for x in viewer_api.get("/api/v1/deployments/").json()["results"]] == ["down"]
    # Another host's request gets its own absolute URLs, never this one's.
    other = viewer_api.get("/api/v1/deployments/", HTTP_HOST="127.0.0.1").json()
    assert other["results"][0]["url"].startswith("http://127.0.0.1/")


@pytest.mark.django_db
def test_the_deployment_figures_are_shared_and_show_a_new_poll_in_the_next_window(viewer, deployment, clock):
    from fleet.models import EndpointPoll

    url = f"/deployments/{deployment.slug}/"
    now = timezone.now()

    def poll(at, running):
        EndpointPoll.objects.create(deployment=deployment, polled_at=at, status="up", requests_running=running)
        Deployment.objects.filter(pk=deployment.pk).update(last_status="up", last_polled=at)

    poll(now, 3)
    with CaptureQueriesContext(connection) as rendered:
        first = viewer.get(url).content.decode()
    with CaptureQueriesContext(connection) as served:
        again = viewer.get(url).content.decode()
    # The CSRF token (the logout form's, the page's meta) is masked anew in every response.
    masked = re.compile(r'(csrf[a-z_]*"?\s*[:=]\s*"|name="csrfmiddlewaretoken" value=")[^"]+"', re.I)
    assert masked.sub("", again) == masked.sub("", first)
    assert len(served.captured_queries) < len(rendered.captured_queries) - 3
    assert 'id="live"' in first and ">417" not in first
    poll(now + timezone.timedelta(seconds=1), 417)
    assert ">417" not in viewer.get(url).content.decode()
    clock[0] += page_cache.window_s()
    assert ">417" in viewer.get(url).content.decode()


@pytest.mark.django_db
def test_a_request_waits_for_the_one_computing_the_same_answer(monkeypatch):
    """While one request computes an answer (its lock held), another asking for it takes that answer
    instead of computing it again; if none comes within WAIT_S it computes for itself."""
    import threading

    from django.core.cache import cache

    computed = []

    def compute(label):
        computed.append(label)
        return label

    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(5)
        return compute("first")

    version = lambda: "v1"  # noqa: E731 (no database in the thread)
    first = threading.Thread(target=lambda: page_cache.shared("t", ("a",), slow, version))
    first.start()
    started.wait(5)
    threading.Timer(0.05, release.set).start()
    assert page_cache.shared("t", ("a",), lambda: compute("second"), version) == "first"
    first.join(5)
    assert computed == ["first"]

    # A lock nobody releases: the waiter answers for itself after WAIT_S.
    monkeypatch.setattr(page_cache, "WAIT_S", 0.05)
    window = int(1_000_000.0 // page_cache.window_s())
    cache.add(page_cache.cache_key("t", ("b",), "v1", window) + ":computing", 1, 30)
    assert page_cache.shared("t", ("b",), lambda: compute("alone"), version) == "alone"


@pytest.mark.django_db
def test_the_api_record_lists_are_shared_and_show_a_change_at_once(viewer_api, cluster):
    first = viewer_api.get("/api/v1/clusters/").json()
    with CaptureQueriesContext(connection) as served:
        assert viewer_api.get("/api/v1/clusters/").json() == first
    c = Cluster.objects.get(pk=cluster.pk)
    c.team = "research"
    c.save()
    with CaptureQueriesContext(connection) as computed:
        again = viewer_api.get("/api/v1/clusters/").json()
    assert [x["team"] for x in again["results"]] == ["research"]
    assert len(served.captured_queries) < len(computed.captured_queries)


@pytest.mark.django_db
def test_a_window_of_0_computes_every_request(viewer, deployment, settings):
    settings.PAGE_CACHE_S = 0
    table(viewer)  # the session and permissions cached: only the table's own queries count below
    _, rendered = table(viewer)
    assert table(viewer)[1] == rendered


@pytest.mark.django_db
def test_a_shared_table_lasts_until_its_first_status_turns_stale_by_age(viewer, deployment, clock, monkeypatch):
    last_polled = timezone.now() - timezone.timedelta(seconds=deployment.stale_after_s - 30)
    Deployment.objects.filter(pk=deployment.pk).update(last_status="up", last_polled=last_polled)
    turns = last_polled + timezone.timedelta(seconds=deployment.stale_after_s)
    assert Deployment.objects.get(pk=deployment.pk).status_turns_stale_at() == turns
    kept = []
    set_ = page_cache.cache.set
    monkeypatch.setattr(page_cache.cache, "set", lambda key, value, **kw: (kept.append(value), set_(key, value, **kw)))
    table(viewer)
    (stored,) = [v for v in kept if isinstance(v, page_cache.Expiring)]
    assert stored.until == turns  # the table with "up" in it is good until that "up" would read "stale"
    clock[0] = turns.timestamp() - 1
    assert stored.usable()
    clock[0] = turns.timestamp()
    assert not stored.usable()
