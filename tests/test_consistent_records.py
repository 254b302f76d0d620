"""Records that cannot drift apart silently (issue 15, "Consistent records"): a deployment whose
layout does not fit memory is refused with its deficit, a cluster change that leaves a deployment
without its GPUs is refused listing it, and a change dated in the future takes effect on its date."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.models import Cluster, ClusterState, Deployment

K3 = {"slug": "k3", "engine": "vllm", "tp": 8, "dp": 4, "ep": 32}


@pytest.mark.django_db
def test_a_deployment_that_does_not_fit_memory_is_refused_with_its_deficit(platform_api, cluster, kimi_k3):
    """Issue 15: such a deployment saved without a warning (and then got capacity on every page)."""
    body = {**K3, "cluster": cluster.slug, "model": kimi_k3.slug}  # 32 H100s, 1M tokens of context
    r = platform_api.post("/api/v1/deployments/", body, format="json")
    assert r.status_code == 400, r.content
    message = r.json()["tp"][0]
    assert message.startswith("This layout does not fit") and "GiB" in message and "1,048,576 tokens" in message
    assert not Deployment.objects.exists()
    # At 128k tokens of context the same layout fits and is saved.
    r = platform_api.post("/api/v1/deployments/", {**body, "max_model_len": 131072}, format="json")
    assert r.status_code == 201, r.content
    # Editing it back to the model's full context is refused the same way.
    r = platform_api.patch("/api/v1/deployments/k3/", {"max_model_len": None}, format="json")
    assert r.status_code == 400 and r.json()["tp"][0].startswith("This layout does not fit")


@pytest.mark.django_db
def test_the_page_form_shows_the_deficit_beside_the_layout(client, make_user, cluster, kimi_k3):
    client.force_login(make_user("p", "platform"))
    form = {"slug": "k3", "cluster": cluster.slug, "model": kimi_k3.pk, "replicas": 1, "tp": 8, "pp": 1, "dp": 4}
    form |= {"ep": 32, "engine": "vllm", "kv_cache_dtype": "bf16", "gpu_memory_utilization": 0.9}
    form |= {"poll_interval_s": 15, "enabled": "on"}
    r = client.post("/deployments/new/", form)
    assert r.status_code == 400 and "has-error" in r.content.decode()  # the record forms re-render with errors, 400
    assert "This layout does not fit" in r.content.decode() and not Deployment.objects.exists()


@pytest.mark.django_db
def test_shrinking_a_cluster_below_its_deployments_is_refused_listing_them(platform_api, client, make_user, deployment):
    """Issue 15: 4 -> 2 nodes was accepted while the deployment needed 32 of 16 GPUs."""
    r = platform_api.patch(f"/api/v1/clusters/{deployment.cluster.slug}/", {"nodes": 2}, format="json")
    assert r.status_code == 400, r.content
    assert "k3-prod needs 32" in r.json()["nodes"][0] and "16 GPUs" in r.json()["nodes"][0]
    assert Cluster.objects.get().nodes == 4
    client.force_login(make_user("p", "platform"))
    cluster = deployment.cluster
    form = {"name": cluster.name, "slug": cluster.slug, "sku": cluster.sku_id, "nodes": 2, "provider": "acme"}
    form |= {"team": "platform", "hours_per_day": "24", "status": "active"}
    page = client.post(f"/clusters/{cluster.slug}/edit/", form)
    assert page.status_code == 400 and "k3-prod needs 32" in page.content.decode()
    assert Cluster.objects.get().nodes == 4
    # Growing it is fine.
    assert platform_api.patch(f"/api/v1/clusters/{cluster.slug}/", {"nodes": 8}, format="json").status_code == 200


@pytest.mark.django_db
def test_a_change_dated_in_the_future_takes_effect_on_its_date(platform_api, viewer_api, client, make_user, cluster):
    """Issue 15: a future-dated cluster change showed as the current hardware at once."""
    today = timezone.now().date()
    later = today + timedelta(days=10)
    r = platform_api.patch(
        f"/api/v1/clusters/{cluster.slug}/", {"nodes": 8, "effective_from": later.isoformat()}, format="json"
    )
    assert r.status_code == 200, r.content
    assert viewer_api.get(f"/api/v1/clusters/{cluster.slug}/").json()["nodes"] == 4  # still today's figures
    assert ClusterState.objects.get(cluster=cluster, effective_from=later).nodes == 8
    assert [s.nodes for s in cluster.scheduled_changes()] == [8]
    client.force_login(make_user("v", "viewer"))
    page = client.get(f"/clusters/{cluster.slug}/").content.decode()
    assert 'id="scheduled-changes"' in page and f"From {later:%Y-%m-%d}: 64" in page
    # The hourly task puts it in force on the day, once.
    assert Cluster.apply_due_changes(today + timedelta(days=9)) == []
    assert Cluster.apply_due_changes(later) == ["h100-pool"]
    assert Cluster.objects.get().nodes == 8 and Cluster.apply_due_changes(later) == []
    assert ClusterState.objects.filter(cluster=cluster).count() == 2  # applying records nothing new


@pytest.mark.django_db
def test_the_task_applying_scheduled_changes_is_on_beat(settings):
    from fleet.tasks import apply_cluster_changes_task

    assert apply_cluster_changes_task.name == "fleet.apply_cluster_changes"
    assert any(e["task"] == "fleet.apply_cluster_changes" for e in settings.CELERY_BEAT_SCHEDULE.values())


@pytest.mark.django_db
@pytest.mark.parametrize(("observed", "flagged"), [(10_000, True), (980_000, False), (1_200_000, True)])
def test_a_capacity_ratio_outside_the_band_is_flagged_on_the_fleet_and_deployment_pages(
    client, make_user, deployment, observed, flagged
):
    """Issue 15: a predicted/observed ratio of 0.01 went unflagged."""
    from fleet.models import EndpointPoll

    predicted = 1_000_000
    deployment.last_status = "up"
    deployment.last_metrics = {"observed_cache_tokens": observed, "predicted_cache_tokens": predicted}
    deployment.save()
    EndpointPoll.objects.create(
        deployment=deployment,
        polled_at=timezone.now(),
        status="up",
        observed_cache_tokens=observed,
        predicted_cache_tokens=predicted,
    )
    client.force_login(make_user("v", "viewer"))
    fleet = client.get("/").content.decode()
    assert ("ratio-flag" in fleet) is flagged
    if flagged:
        assert f"capacity ratio {observed / predicted:.2f}" in fleet
    page = client.get(f"/deployments/{deployment.slug}/").content.decode()
    assert ('id="calibration-flag"' in page) is flagged
    assert ("within 0.9\u20131.1" in page) is not flagged
