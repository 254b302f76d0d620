"""Every change to what a cluster costs is kept as a dated state, so past spend never changes."""

from __future__ import annotations

from datetime import date

import pytest
from django.utils import timezone

from fleet.models import Cluster, ClusterState, Provider


@pytest.mark.django_db
def test_creating_a_cluster_records_its_first_state(cluster):
    (state,) = cluster.states.all()
    assert state.effective_from == timezone.now().date()
    assert (state.gpus, state.hours_per_day, state.status, state.team) == (32, 24, "active", "platform")


@pytest.mark.django_db
def test_only_changes_that_cost_money_add_states(cluster):
    cluster.name = "renamed"
    cluster.region = "us"
    cluster.save()
    assert cluster.states.count() == 1
    cluster.nodes = 8
    cluster.save(effective_from=date(2099, 1, 1))
    assert [s.gpus for s in cluster.states.all()] == [32, 64]


@pytest.mark.django_db
def test_a_second_change_the_same_day_replaces_that_days_state(cluster):
    cluster.nodes = 2
    cluster.save(effective_from=date(2026, 7, 16))
    cluster.hours_per_day = 4
    cluster.save(effective_from=date(2026, 7, 16))
    states = list(cluster.states.filter(effective_from=date(2026, 7, 16)))
    assert len(states) == 1 and states[0].gpus == 16 and states[0].hours_per_day == 4


@pytest.mark.django_db
def test_api_dates_a_registration_and_a_resize(platform_api, sku):
    body = {
        "slug": "k3",
        "name": "K3",
        "sku": sku.slug,
        "nodes": 1,
        "provider": "acme",
        "team": "ml",
        "effective_from": "2026-07-01",
    }
    Provider.objects.ensure("acme")
    r = platform_api.post("/api/v1/clusters/", body, format="json")
    assert r.status_code == 201, r.json()
    assert "effective_from" not in r.json()
    r = platform_api.patch("/api/v1/clusters/k3/", {"nodes": 2, "effective_from": "2026-07-16"}, format="json")
    assert r.status_code == 200, r.json()
    states = [(s.effective_from.isoformat(), s.gpus) for s in ClusterState.objects.filter(cluster__slug="k3")]
    assert states == [("2026-07-01", 8), ("2026-07-16", 16)]
    assert Cluster.objects.get(slug="k3").total_gpus == 16
