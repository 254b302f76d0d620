"""Idempotent writes for retries (fleet/idempotency.py): a POST to /api/v1/ with an Idempotency-Key is answered
once per caller and key; a retry replays the first answer, a different request under the same key is refused,
another caller's key is their own, and a day later the key is free again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.models import IdempotentRequest, Workload

URL = "/api/v1/workloads/"
BODY = {
    "slug": "agent", "name": "Coding agent", "team": "dev", "requests_per_day": 200_000,
    "mean_prompt_tokens": 12_000, "mean_output_tokens": 600, "p95_context_tokens": 64_000,
    "prefix_cache_hit_rate": 0.9, "peak_concurrency": 256, "ttft_slo_ms": 2000, "tpot_slo_ms": 50,
}  # fmt: skip


@pytest.mark.django_db
def test_a_retried_create_returns_the_first_answer(platform_api):
    first = platform_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="create-agent-1")
    assert first.status_code == 201 and first["Idempotent-Replayed"] == "false"
    again = platform_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="create-agent-1")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json() and again["Location"] == first["Location"]
    assert Workload.objects.count() == 1
    # Without the key, the same POST is a new request: the slug is taken.
    assert platform_api.post(URL, BODY, format="json").status_code == 400


@pytest.mark.django_db
def test_a_key_reused_for_another_request_is_refused(platform_api):
    platform_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    other = platform_api.post(URL, {**BODY, "slug": "other"}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert other.status_code == 422 and "different request" in other.json()["detail"]
    assert not Workload.objects.filter(slug="other").exists()
    bad = platform_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="not a key!")
    assert bad.status_code == 400


@pytest.mark.django_db
def test_a_key_is_its_callers_and_never_replayed_without_credentials(platform_api, finance_api, client):
    platform_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="shared")
    # Anonymous with the same key and body: the view answers (401), nothing replayed.
    anonymous = client.post(URL, BODY, content_type="application/json", HTTP_IDEMPOTENCY_KEY="shared")
    assert anonymous.status_code == 401 and "Idempotent-Replayed" not in anonymous
    # Finance may not create workloads: its own request, answered 403, not platform's 201.
    assert finance_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="shared").status_code == 403


@pytest.mark.django_db
def test_kept_for_a_day(platform_api, settings):
    platform_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="daily")
    IdempotentRequest.objects.update(created=timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_TTL_S + 1))
    Workload.objects.all().delete()
    fresh = platform_api.post(URL, BODY, format="json", HTTP_IDEMPOTENCY_KEY="daily")
    assert fresh.status_code == 201 and fresh["Idempotent-Replayed"] == "false"
    assert IdempotentRequest.objects.count() == 1
