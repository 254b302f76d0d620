"""Issue 15: a deployment's polls over a chosen range (last hour, 24 h, 7 or 30 days, from-to): poll
by poll for the last hour, hour by hour beyond it from the raw polls and the hourly rollups alike."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.models import EndpointPoll, EndpointPollHourly
from fleet.poll_rollups import poll_history, prune_polls


@pytest.fixture
def polled(deployment):
    """Raw polls every minute of the last 3 hours, and a rollup of an hour 10 days ago."""
    deployment.save()
    now = timezone.now().replace(second=0, microsecond=0)
    EndpointPoll.objects.bulk_create(
        EndpointPoll(
            deployment=deployment, polled_at=now - timedelta(minutes=m), status="up" if m % 10 else "down",
            requests_running=float(m % 7), kv_cache_usage=0.5, generation_tokens_per_s=1500.0,
            ttft_p95_ms=800.0 + m, itl_p95_ms=40.0,
        )
        for m in range(180)
    )  # fmt: skip
    old = (now - timedelta(days=10)).replace(minute=0)
    EndpointPollHourly.objects.create(
        deployment=deployment, hour=old, polls=240, up_polls=200, busy_polls=100, requests_running_avg=3.0,
        requests_running_max=9.0, kv_cache_usage_avg=0.4, generation_tokens_per_s_avg=1200.0,
        ttft_p95_ms_max=2500.0, itl_p95_ms_max=55.0,
    )  # fmt: skip
    return deployment, now, old


@pytest.mark.django_db
def test_history_is_poll_by_poll_for_an_hour_and_hourly_beyond(polled):
    d, now, old = polled
    hour = poll_history(d.pk, now - timedelta(hours=1), now + timedelta(seconds=1))
    assert hour.resolution == "poll" and len(hour.points) == 61 and hour.points[0].at < hour.points[-1].at
    month = poll_history(d.pk, now - timedelta(days=30), now + timedelta(seconds=1))
    assert month.resolution == "hour" and month.points[0].at == old and month.points[0].polls == 240
    assert month.polls == 240 + 180  # the rollup and every raw poll, each counted once
    assert month.points[0].ttft_p95_max == 2500.0 and month.points[0].up_fraction == pytest.approx(200 / 240)


@pytest.mark.django_db
def test_a_range_reads_the_same_across_pruning(polled, settings):
    d, now, _ = polled
    before = poll_history(d.pk, now - timedelta(days=1), now + timedelta(seconds=1))
    settings.POLL_RETENTION_DAYS = 0  # prune everything older than this hour into rollups
    prune_polls(now + timedelta(hours=1))
    after = poll_history(d.pk, now - timedelta(days=1), now + timedelta(seconds=1))
    assert [p.at for p in after.points] == [p.at for p in before.points]
    assert [p.polls for p in after.points] == [p.polls for p in before.points]
    assert [p.ttft_p95_max for p in after.points] == [p.ttft_p95_max for p in before.points]
    assert [round(p.running_avg, 6) for p in after.points] == [round(p.running_avg, 6) for p in before.points]


@pytest.mark.django_db
def test_deployment_page_range_choice(client, make_user, polled):
    d, _, old = polled
    client.force_login(make_user("v", "viewer"))
    page = client.get(f"/deployments/{d.slug}/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="poll-range"' in html and 'hx-target="#poll-range"' in html
    assert page.context["range_history"].resolution == "poll"
    assert 'data-source="range-latency-data"' in html and 'id="range-latency-data"' in html
    month = client.get(f"/deployments/{d.slug}/?range=30d", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="poll-range")
    body = month.content.decode()
    assert body.strip().startswith('<section class="card" id="poll-range">')
    assert "420 polls" in body and "hourly rollups" in body and old.strftime("%Y-%m-%d %H:00") in body
    assert "2,500" in body  # the old hour's worst TTFT, with a thousands separator
    day = f"{old:%Y-%m-%d}"
    custom = client.get(f"/deployments/{d.slug}/", {"range": "custom", "start": day, "end": day})
    assert custom.status_code == 200 and custom.context["range_history"].polls == 240


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"range": "forever"}, "Select a valid choice"),
        ({"range": "custom", "start": "2026-08-01"}, "Give both dates"),
        ({"range": "custom", "start": "2026-08-02", "end": "2026-08-01"}, "The end is before the start"),
        ({"range": "custom", "start": "2020-01-01", "end": "2026-08-01"}, "at most 92 days"),
        ({"range": "custom", "start": "not-a-date", "end": "2026-08-01"}, "Enter a valid date"),
    ],
)
def test_a_bad_range_is_said_beside_its_input_never_a_500(client, make_user, polled, query, message):
    d, _, _ = polled
    client.force_login(make_user("v", "viewer"))
    r = client.get(f"/deployments/{d.slug}/", query)
    assert r.status_code == 200 and message in r.content.decode()
    assert r.context["range_history"].resolution == "poll"  # the last hour drawn instead


@pytest.mark.django_db
def test_hours_without_polls_stay_blank_on_the_chart(client, make_user, polled):
    """The 30-day chart has every hour on its axis: the days between the old rollup and the recent
    polls show as a gap, not as two neighbouring points."""
    d, _, old = polled
    client.force_login(make_user("v", "viewer"))
    r = client.get(f"/deployments/{d.slug}/?range=30d")
    chart = r.context["range_latency"]
    assert len(chart["labels"]) in (720, 721)
    ttft = chart["series"][0]["values"]
    assert ttft[chart["labels"].index(old.strftime("%Y-%m-%d %H:00"))] == 2500.0
    assert sum(v is None for v in ttft) > 600


@pytest.mark.django_db
def test_choosing_from_to_asks_for_the_dates_without_an_error(client, make_user, polled):
    d, _, _ = polled
    client.force_login(make_user("v", "viewer"))
    r = client.get(f"/deployments/{d.slug}/", {"range": "custom"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="poll-range")
    body = r.content.decode()
    assert r.status_code == 200 and "Pick the From and To dates" in body and 'role="alert"' not in body
    assert r.context["range_history"].resolution == "poll"
