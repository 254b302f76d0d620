"""Capacity snapshots (planner/snapshots.py, fleet/models/snapshots.py): computed by the worker's service,
never shown as current after an input changed, a failed recomputation keeps the previous figures marked
with its error, batched and idempotent, and every change that can move one sends its recomputation
through the outbox."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet.models import (
    CapacitySnapshot,
    Cluster,
    Deployment,
    GpuQuote,
    HardwareSku,
    ModelSpec,
    OutboxMessage,
    Provider,
)
from fleet.models.snapshots import describe_capacity
from planner import snapshots
from planner.snapshots import REFRESH_TASK, refresh_snapshots

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(db):
    """Two clusters of 8 H100s, Llama 3.1 70B on vLLM (2 replicas of tp 4) on each, a 2.00 quote in force."""
    call_command("load_catalog", stdout=StringIO())
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    GpuQuote.objects.filter(sku=sku).delete()
    GpuQuote.objects.create(
        sku=sku,
        provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("2.00"),
        quoted_on=date(2026, 1, 1),
        list_price=False,
    )
    out = []
    for i in range(2):
        c = Cluster.objects.create(
            slug=f"c{i}", name=f"C{i}", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="t"
        )
        out.append(
            Deployment.objects.create(
                slug=f"d{i}",
                cluster=c,
                model=llama,
                tp=4,
                replicas=2,
                engine="vllm",
                max_model_len=32768,
                last_status="up",
                last_metrics={"requests_running": 6.0},
            )
        )
    return out


def load(pk: int) -> Deployment:
    return Deployment.objects.select_related("cluster__sku", "model", "workload", "capacity_snapshot").get(pk=pk)


def test_the_stored_figures_are_the_engines(fleet):
    d = fleet[0]
    assert describe_capacity(load(d.pk))["state"] == "pending"
    summary = refresh_snapshots()
    assert summary.as_dict() == {"computed": 2, "failed": 0, "batches": 1}
    shown = describe_capacity(load(d.pk))
    assert shown["state"] == "current" and shown["reason"] == "" and shown["computed_at"] is not None
    figures, sized = shown["figures"], load(d.pk).sizing()
    assert figures["capacity_sequences"] == sized.max_concurrent_sequences > 0
    assert figures["kv_cache_tokens"] == sized.engine_kv_cache_tokens
    assert figures["gpu_blocks"] == sized.engine_num_blocks and figures["fits"] is True
    assert figures["planning_context_tokens"] == 32768
    # 8 GPUs at 2.00 USD per GPU-hour.
    assert figures["usd_per_gpu_hour"] == "2.00" or Decimal(figures["usd_per_gpu_hour"]) == Decimal("2")
    assert Decimal(figures["usd_per_hour"]) == Decimal("16")
    rate = figures["output_tokens_per_s"]
    assert rate == pytest.approx(load(d.pk).throughput().tokens_per_s_replica * 2)
    assert float(figures["usd_per_mtok_output"]) == pytest.approx(16 / (rate * 3600) * 1e6, abs=5e-5)
    # The speed at the batch the last poll saw: 6 running over 2 replicas = 3 per replica.
    speed = figures["speed"]
    assert speed["batch_per_replica"] == 3 and speed["calibrated"] is False
    from planner.corrections import estimate_for

    assert speed["tpot_ms"] == pytest.approx(estimate_for(load(d.pk), batch=3).tpot_s * 1e3)


def test_a_snapshot_is_never_current_after_its_inputs_changed(fleet):
    refresh_snapshots()
    d0, d1 = load(fleet[0].pk), load(fleet[1].pk)
    # A change the signal receivers see: marked stale in the same save, with what changed.
    d0.gpu_memory_utilization = 0.8
    d0.save()
    shown = describe_capacity(load(d0.pk))
    assert shown["state"] == "stale" and "Deployment d0 changed" in shown["reason"]
    assert shown["figures"]["capacity_sequences"] > 0  # the previous figures, said to be stale
    assert describe_capacity(load(d1.pk))["state"] == "current"
    # A change no receiver saw (a queryset update): the records' versions tell the reader.
    ModelSpec.objects.filter(pk=d1.model_id).update(updated=timezone.now() + timedelta(seconds=1))
    shown = describe_capacity(load(d1.pk))
    assert shown["state"] == "stale" and shown["reason"] == "Changed since it was computed: model."
    # A new GPU quote for the SKU marks both.
    refresh_snapshots()
    assert {describe_capacity(load(d.pk))["state"] for d in fleet} == {"current"}
    GpuQuote.objects.create(
        sku=d0.cluster.sku,
        provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("3.00"),
        quoted_on=timezone.now().date(),
    )
    for d in fleet:
        shown = describe_capacity(load(d.pk))
        assert shown["state"] == "stale" and "GPU quote acme on-demand for h100-sxm-80gb changed" in shown["reason"]
    refresh_snapshots()
    assert Decimal(describe_capacity(load(d0.pk))["figures"]["usd_per_hour"]) == Decimal("24")


def test_the_quote_it_priced_ending_makes_it_stale(fleet, settings):
    settings.SNAPSHOT_MAX_AGE_S = 10 * 86400  # not stale by age within the days looked at
    sku = fleet[0].cluster.sku
    today = timezone.now().date()
    GpuQuote.objects.filter(sku=sku).update(valid_until=today + timedelta(days=2))
    refresh_snapshots()
    snap = CapacitySnapshot.objects.get(pk=fleet[0].pk)
    assert snap.valid_until.date() == today + timedelta(days=3)  # valid_until is inclusive: stale the day after
    d = load(fleet[0].pk)
    later = snap.valid_until + timedelta(seconds=1)
    assert snap.state(snap.valid_until - timedelta(seconds=1)) == "current"
    assert snap.state(later) == "stale" and "stopped being in force" in snap.why_stale(later)
    assert describe_capacity(d)["state"] == "current", describe_capacity(d)["reason"]


def test_an_old_snapshot_is_stale(fleet, settings):
    refresh_snapshots()
    snap = CapacitySnapshot.objects.get(pk=fleet[0].pk)
    later = snap.computed_at + timedelta(seconds=settings.SNAPSHOT_MAX_AGE_S + 1)
    assert snap.state(later) == "stale" and "longer ago than the workers refresh it" in snap.why_stale(later)


def test_a_failed_recomputation_keeps_the_previous_figures_marked_stale_with_the_error(fleet, monkeypatch):
    refresh_snapshots()
    before = CapacitySnapshot.objects.get(pk=fleet[0].pk)

    def broken(*args, **kwargs):
        raise RuntimeError("the throughput engine blew up")

    monkeypatch.setattr(snapshots, "compute_figures", broken)
    summary = refresh_snapshots([fleet[0].pk])
    assert summary.as_dict() == {"computed": 0, "failed": 1, "batches": 1}
    after = CapacitySnapshot.objects.get(pk=fleet[0].pk)
    assert after.figures == before.figures and after.computed_at == before.computed_at
    assert after.error == "RuntimeError: the throughput engine blew up" and after.failed_at is not None
    shown = describe_capacity(load(fleet[0].pk))
    assert shown["state"] == "stale" and "The last recomputation failed" in shown["reason"]
    assert "the figures shown are the previous ones" in shown["reason"]
    monkeypatch.undo()
    refresh_snapshots([fleet[0].pk])
    assert describe_capacity(load(fleet[0].pk))["state"] == "current"
    assert CapacitySnapshot.objects.get(pk=fleet[0].pk).error == ""


def test_a_layout_that_cannot_be_sized_is_failed_with_the_engines_reason(fleet):
    Deployment.objects.filter(pk=fleet[1].pk).update(kv_cache_dtype="int3")  # no such KV dtype
    refresh_snapshots([fleet[1].pk])
    shown = describe_capacity(load(fleet[1].pk))
    assert shown["state"] == "failed" and shown["figures"] is None and "int3" in shown["error"]


def test_a_change_during_a_recomputation_keeps_the_snapshot_stale_for_its_own_run(fleet, monkeypatch):
    """The recomputation read the records before the change: storing it must not clear the change's mark."""
    real = snapshots.compute_batch

    def with_a_change_meanwhile(deployments, now):
        computed = real(deployments, now)
        d = Deployment.objects.get(pk=fleet[0].pk)
        d.gpu_memory_utilization = 0.85
        d.save()  # the receiver marks the snapshot stale now, after the batch started
        return computed

    refresh_snapshots()
    monkeypatch.setattr(snapshots, "compute_batch", with_a_change_meanwhile)
    refresh_snapshots([fleet[0].pk])
    assert describe_capacity(load(fleet[0].pk))["state"] == "stale"
    monkeypatch.undo()
    refresh_snapshots([fleet[0].pk])
    assert describe_capacity(load(fleet[0].pk))["state"] == "current"


def test_running_twice_stores_the_same_and_queries_do_not_grow_with_the_batch(fleet, settings):
    refresh_snapshots()
    first = {s.pk: (s.figures, s.inputs) for s in CapacitySnapshot.objects.all()}
    with CaptureQueriesContext(connection) as two:
        refresh_snapshots()
    assert {s.pk: (s.figures, s.inputs) for s in CapacitySnapshot.objects.all()} == first
    sku, llama = fleet[0].cluster.sku, fleet[0].model
    for i in range(2, 12):
        c = Cluster.objects.create(
            slug=f"c{i}", name=f"C{i}", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="t"
        )
        Deployment.objects.create(slug=f"d{i}", cluster=c, model=llama, tp=4, replicas=2)
    refresh_snapshots()  # creates the ten new snapshots (one INSERT more); then, as for two:
    with CaptureQueriesContext(connection) as twelve:
        refresh_snapshots()
    assert len(twelve) == len(two)  # one batch: the same handful of queries for 2 or 12 deployments
    settings.SNAPSHOT_BATCH = 5
    assert refresh_snapshots().as_dict() == {"computed": 12, "failed": 0, "batches": 3}


def test_the_whole_fleet_is_the_enabled_deployments_and_disabling_one_recomputes_it(fleet):
    Deployment.objects.filter(pk=fleet[1].pk).update(enabled=False)
    assert refresh_snapshots().computed == 1
    assert not CapacitySnapshot.objects.filter(pk=fleet[1].pk).exists()
    d0 = Deployment.objects.get(pk=fleet[0].pk)
    d0.enabled = False
    d0.save()  # its own change: marked stale, and recomputed when named, so it does not stay stale
    assert describe_capacity(load(d0.pk))["state"] == "stale"
    assert refresh_snapshots([d0.pk]).computed == 1
    assert describe_capacity(load(d0.pk))["state"] == "current"


def test_every_change_that_can_move_a_snapshot_records_its_recomputation(fleet):
    def messages() -> list[dict]:
        return [m.kwargs for m in OutboxMessage.objects.filter(task=REFRESH_TASK).order_by("id")]

    OutboxMessage.objects.all().delete()
    d0 = fleet[0]
    d0.cluster.save()
    assert messages()[-1] == {"deployments": [d0.pk], "workloads": []}
    d0.model.save()
    assert messages()[-1] == {"deployments": sorted(d.pk for d in fleet), "workloads": []}
    d0.cluster.sku.save()
    assert messages()[-1]["deployments"] == sorted(d.pk for d in fleet)
    count = len(messages())
    # The poller's live state is not an input: no message.
    Deployment.objects.get(pk=d0.pk).save(update_fields=["last_status", "last_metrics"])
    assert len(messages()) == count
    # Nothing affected (a quote of a SKU no deployment runs on, no decision priced it): no message.
    other = HardwareSku.objects.exclude(pk=d0.cluster.sku_id).first()
    GpuQuote.objects.create(
        sku=other, provider=Provider.objects.ensure("x"), usd_per_gpu_hour=Decimal("1"), quoted_on=date(2026, 1, 1)
    )
    assert len(messages()) == count


def test_the_beat_fans_the_fleet_out_in_batches(fleet, settings, monkeypatch):
    from fleet.project.celery import app
    from planner.answers import fan_out

    sku, llama = fleet[0].cluster.sku, fleet[0].model
    for i in range(2, 5):
        c = Cluster.objects.create(
            slug=f"c{i}", name=f"C{i}", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="t"
        )
        Deployment.objects.create(slug=f"d{i}", cluster=c, model=llama, tp=4, replicas=2)
    settings.SNAPSHOT_BATCH = 2
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append((name, kw["kwargs"])))
    OutboxMessage.objects.all().delete()
    summary = fan_out()
    assert summary == {"messages": 3, "sent": 3, "deployments": 5, "workloads": 0}
    ids = sorted(Deployment.objects.values_list("pk", flat=True))
    assert [kw["deployments"] for _, kw in sent] == [ids[0:2], ids[2:4], ids[4:5]]
    assert all(name == REFRESH_TASK and kw["served"] is False for name, kw in sent)


def test_the_api_gives_a_deployments_stored_capacity_with_its_state(fleet, make_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(make_user("api-viewer", "viewer"))
    body = client.get("/api/v1/deployments/d0/").json()
    assert body["capacity"] == {
        "state": "pending",
        "reason": "Not computed yet: a worker computes it shortly.",
        "computed_at": None,
        "error": "",
        "figures": None,
    }
    refresh_snapshots()
    capacity = client.get("/api/v1/deployments/d0/").json()["capacity"]
    snap = CapacitySnapshot.objects.get(pk=fleet[0].pk)
    assert capacity["state"] == "current" and capacity["reason"] == ""
    assert capacity["computed_at"] == snap.computed_at.isoformat().replace("+00:00", "Z")
    assert capacity["figures"]["capacity_sequences"] == load(fleet[0].pk).sizing().max_concurrent_sequences
    listed = {d["slug"]: d["capacity"]["state"] for d in client.get("/api/v1/deployments/").json()["results"]}
    assert listed == {"d0": "current", "d1": "current"}
    d1 = Deployment.objects.get(pk=fleet[1].pk)
    d1.replicas = 1
    d1.save()
    capacity = client.get("/api/v1/deployments/d1/").json()["capacity"]
    assert capacity["state"] == "stale" and "Deployment d1 changed" in capacity["reason"]


def test_an_owned_cluster_prices_at_its_own_cost_until_next_month_and_its_costs_move_it(fleet, settings):
    """Cluster c0 made owned: one node bought today for 250,000 USD (48 months), PUE 1.3, 0.12 USD/kWh at
    site fra1, no colocation or support. Its snapshot is priced at its own cost (basis owned), current
    until the first of next month; a new electricity price or purchase marks it stale."""
    from fleet.models import ClusterPurchase, ElectricityPrice, OwnedCosts

    settings.SNAPSHOT_MAX_AGE_S = 40 * 86400
    d0 = fleet[0]
    today = timezone.now().date()
    Cluster.objects.filter(pk=d0.cluster_id).update(ownership="owned")
    OwnedCosts.objects.create(cluster_id=d0.cluster_id, site="fra1", pue=Decimal("1.3"))
    ClusterPurchase.objects.create(cluster_id=d0.cluster_id, bought_on=today, nodes=1, price=250_000)
    ElectricityPrice.objects.create(site="fra1", valid_from=date(2025, 1, 1), usd_per_kwh=Decimal("0.12"))
    refresh_snapshots()
    snap = CapacitySnapshot.objects.get(pk=d0.pk)
    first_of_next = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
    assert snap.valid_until.date() == first_of_next
    # (250,000 / 48 / days + 8 x 700 W x 1.3 x 24 h / 1000 x 0.12) / (8 GPUs x 24 h), per this month's days.
    days = (first_of_next - today.replace(day=1)).days
    expected = (Decimal(250_000) / 48 / days + Decimal("5.6") * Decimal("1.3") * 24 * Decimal("0.12")) / (8 * 24)
    shown = describe_capacity(load(d0.pk))
    assert Decimal(shown["figures"]["usd_per_gpu_hour"]).quantize(Decimal("0.0001")) == expected.quantize(
        Decimal("0.0001")
    )
    ElectricityPrice.objects.create(site="fra1", valid_from=today, usd_per_kwh=Decimal("0.20"))
    shown = describe_capacity(load(d0.pk))
    assert shown["state"] == "stale" and "electricity price of site fra1" in shown["reason"]
    assert describe_capacity(load(fleet[1].pk))["state"] == "current"  # rented: not moved
