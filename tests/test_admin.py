"""Every record has an admin page; system-written records are read-only there."""

from __future__ import annotations

import pytest

from planner.models import Decision


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "fleet/hardwaresku",
        "fleet/cluster",
        "fleet/deployment",
        "fleet/gpuquote",
        "fleet/apiprice",
        "fleet/clusterstate",
        "fleet/endpointpoll",
        "fleet/workerheartbeat",
        "fleet/outboxmessage",
        "fleet/modelspec",
        "fleet/workload",
        "planner/decision",
        "planner/plan",
    ],
)
def test_admin_changelists(client, make_user, deployment, path):
    client.force_login(make_user("root", "admin", is_staff=True, is_superuser=True))
    assert client.get(f"/admin/{path}/").status_code == 200


@pytest.mark.django_db
def test_decisions_cannot_be_added_changed_or_deleted_in_the_admin(client, make_user, kimi_k3):
    from fleet.models import Workload

    w = Workload.objects.create(
        slug="w",
        name="W",
        team="t",
        requests_per_day=1,
        mean_prompt_tokens=1,
        mean_output_tokens=1,
        p95_context_tokens=1,
        peak_concurrency=1,
        ttft_slo_ms=1,
        tpot_slo_ms=1,
    )
    d = Decision.record(workload=w, tier=3, note="n", figures={}, inputs={}, user=None)
    client.force_login(make_user("root", "admin", is_staff=True, is_superuser=True))
    assert client.get("/admin/planner/decision/add/").status_code == 403
    assert client.post(f"/admin/planner/decision/{d.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Decision.objects.filter(pk=d.pk).exists()
