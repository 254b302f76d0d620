"""spend_month: actual and projected apart, deployments and the unassigned rest, quote warnings, idle
cost from utilisation. Every expected figure is worked out by hand in the comment beside it."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D

import pytest

from planner.engine import (
    UNASSIGNED,
    ClusterState,
    DeploymentShare,
    EngineInputError,
    spend_month,
    utilisation_from_polls,
)

JUNE = (2026, 6)  # 30 days


def flat(rate: str):
    return lambda state, day: D(rate)


def eight(slug: str = "a", since: date = date(2026, 6, 1), **kw) -> ClusterState:
    return ClusterState(slug, kw.pop("team", "ml"), kw.pop("provider", "p"), kw.pop("sku", "h100"), since, 8, **kw)


def test_ten_days_spent_twenty_projected():
    # 8 GPUs x 24 h x 10 days x 2.50 = 4,800 USD spent; x 20 days = 9,600 projected.
    r = spend_month([eight()], *JUNE, today=date(2026, 6, 10), actual_rate=flat("2.50"))
    c = r.clusters[0]
    assert (c.actual.gpu_hours, c.actual.cost_usd) == (D(1920), D("4800.00"))
    assert (c.projected.gpu_hours, c.projected.cost_usd) == (D(3840), D("9600.00"))
    assert r.total.actual.cost_usd == D("4800.00") and r.total.projected.cost_usd == D("9600.00")
    assert (r.actual_days, r.projected_days, r.status) == (10, 20, "partial")


def test_a_past_month_is_all_actual_and_a_future_one_all_projected():
    past = spend_month([eight()], *JUNE, today=date(2026, 7, 3), actual_rate=flat("2.50"))
    assert past.status == "actual" and past.total.projected.cost_usd == 0
    assert past.total.actual.cost_usd == D("14400.00")  # 8 x 720 h x 2.50
    future = spend_month([eight()], *JUNE, today=date(2026, 5, 20), actual_rate=flat("2.50"))
    assert future.status == "projected" and future.total.actual.cost_usd == 0
    assert future.total.projected.cost_usd == D("14400.00")


def test_actual_days_use_each_days_quote_projected_days_todays():
    # 1-5 June at 2.00, from 6 June at 3.00; today is 10 June.
    def rate(state, day):
        return D("2.00") if day < date(2026, 6, 6) else D("3.00")

    r = spend_month([eight()], *JUNE, today=date(2026, 6, 10), actual_rate=rate)
    c = r.clusters[0]
    # actual: 192 GPU-h a day x (5 x 2.00 + 5 x 3.00) = 192 x 25 = 4,800; projected: 192 x 20 x 3.00 = 11,520
    assert c.actual.cost_usd == D("4800.00") and c.projected.cost_usd == D("11520.00")
    # projected days are priced at today's quote, not the day's: a quote changing on the 20th is not foreseen
    r = spend_month(
        [eight()],
        *JUNE,
        today=date(2026, 6, 10),
        actual_rate=flat("2.00"),
        projected_rate=lambda s, d: D("2.00") if d == date(2026, 6, 10) else D("9.99"),
    )
    assert r.clusters[0].projected.cost_usd == D("7680.00")  # 192 x 20 x 2.00


def test_deployments_take_their_gpus_and_the_rest_is_unassigned():
    # 8 GPUs: d1 holds 4 from 1 June, d2 holds 2 from 16 June; all June actual at 2.50.
    shares = [
        DeploymentShare("d1", "a", "llama", 4, date(2026, 6, 1)),
        DeploymentShare("d2", "a", "qwen", 2, date(2026, 6, 16)),
    ]
    r = spend_month([eight()], *JUNE, today=date(2026, 7, 1), actual_rate=flat("2.50"), deployments=shares)
    lines = {x.name: x for x in r.deployments}
    assert lines["d1"].actual.cost_usd == D("7200.00")  # 4 x 24 x 30 x 2.50
    assert lines["d2"].actual.cost_usd == D("1800.00")  # 2 x 24 x 15 x 2.50
    rest = lines[f"a {UNASSIGNED}"]
    # 4 GPUs 1-15 June + 2 GPUs 16-30 June: (4 x 15 + 2 x 15) x 24 x 2.50 = 5,400
    assert rest.kind == "unassigned" and rest.actual.cost_usd == D("5400.00") and rest.gpus == 4
    assert sum(x.actual.cost_usd for x in r.deployments) == r.clusters[0].actual.cost_usd == D("14400.00")
    models = {m.name: m.actual.cost_usd for m in r.by_model}
    assert models == {"llama": D("7200.00"), "qwen": D("1800.00"), UNASSIGNED: D("5400.00")}


def test_deployments_claiming_more_than_the_cluster_had_are_scaled_and_warned():
    # The cluster had 4 GPUs until 10 June (its history), 8 after; the deployment holds 8 (its layout now).
    states = [
        ClusterState("a", "ml", "p", "h100", date(2026, 6, 1), 4),
        ClusterState("a", "ml", "p", "h100", date(2026, 6, 11), 8),
    ]
    shares = [DeploymentShare("d", "a", "m", 8, date(2026, 6, 1))]
    r = spend_month(states, *JUNE, today=date(2026, 7, 1), actual_rate=flat("1.00"), deployments=shares)
    # (4 x 10 + 8 x 20) x 24 x 1.00 = 4,800, all the deployment's: nothing unassigned
    assert [x.name for x in r.deployments] == ["d"] and r.deployments[0].actual.cost_usd == D("4800.00")
    (w,) = r.warnings
    assert (w.kind, w.first_day, w.last_day, w.days) == ("over_assigned", date(2026, 6, 1), date(2026, 6, 10), 10)


def test_a_missing_quote_is_named_by_day_range_and_its_hours_are_unpriced_not_zero_priced():
    def rate(state, day):
        return None if date(2026, 6, 5) <= day <= date(2026, 6, 7) else D("2.50")

    r = spend_month([eight()], *JUNE, today=date(2026, 6, 10), actual_rate=rate)
    c = r.clusters[0]
    assert c.actual.unpriced_gpu_hours == D(576)  # 8 x 24 x 3 days
    assert c.actual.cost_usd == D("3360.00")  # 8 x 24 x 7 priced days x 2.50
    (w,) = r.warnings
    assert (w.kind, w.part, w.cluster, w.sku, w.provider) == ("missing", "actual", "a", "h100", "p")
    assert (w.first_day, w.last_day, w.days, w.gpu_hours) == (date(2026, 6, 5), date(2026, 6, 7), 3, D(576))
    assert "2026-06-05 to 2026-06-07" in w.message and "unpriced" in w.message


def test_a_cluster_priced_on_no_day_has_no_usd_figure():
    """Unpriced all month: its GPU-hours are said unpriced and its USD figures are null, never 0.00."""
    r = spend_month([eight()], *JUNE, today=date(2026, 6, 30), actual_rate=lambda s, d: None)
    (c,) = r.clusters
    line = c.to_dict()
    assert line["unpriced_gpu_hours"] == "5760.00"  # 8 x 720
    assert (line["cost_usd"], line["actual_cost_usd"], line["idle_cost_usd"]) == (None, None, None)
    assert line["gpu_hours"] == "0.00"


def test_idle_cost_from_utilisation_and_unknown_without_polls():
    shares = [
        DeploymentShare("d1", "a", "m", 4, date(2026, 6, 1)),
        DeploymentShare("d2", "a", "m", 4, date(2026, 6, 1)),
    ]
    r = spend_month(
        [eight()],
        *JUNE,
        today=date(2026, 6, 10),
        actual_rate=flat("2.50"),
        deployments=shares,
        utilisation={"d1": D("0.25")},
    )
    lines = {x.name: x for x in r.deployments}
    # d1: 4 x 24 x 10 x 2.50 = 2,400 spent; idle 2,400 x 0.75 = 1,800. d2: no polls, unknown.
    assert lines["d1"].idle_cost_usd == D("1800.00")
    assert lines["d2"].idle_cost_usd is None and lines["d2"].idle_unknown_usd == D("2400.00")
    c = r.clusters[0]
    assert c.idle_cost_usd == D("1800.00") and c.idle_unknown_usd == D("2400.00") and c.utilisation is None


def test_utilisation_is_running_over_admitted_capacity():
    # 3 polls seeing 8, 16 and 0 running of 32 admitted: 24 / (3 x 32) = 0.25
    assert utilisation_from_polls(24, 3, 32) == D("0.2500")
    # one request running out of 64 admitted is 1/64 busy, not busy
    assert utilisation_from_polls(1, 1, 64) == D("0.0156")
    assert utilisation_from_polls(0, 0, 64) is None and utilisation_from_polls(5, 2, None) is None
    assert utilisation_from_polls(500, 2, 64) == 1  # more running than predicted: capped


def test_a_scheduled_change_shows_in_the_projection():
    # Today is 10 June; a resize to 16 GPUs is recorded for 21 June.
    states = [eight(), ClusterState("a", "ml", "p", "h100", date(2026, 6, 21), 16)]
    r = spend_month(states, *JUNE, today=date(2026, 6, 10), actual_rate=flat("1.00"))
    # projected: 8 x 24 x 10 (11-20 June) + 16 x 24 x 10 (21-30 June) = 1,920 + 3,840 = 5,760
    assert r.clusters[0].projected.cost_usd == D("5760.00")


def test_bad_inputs_name_their_fields():
    with pytest.raises(EngineInputError) as exc:
        spend_month([eight()], 2026, 13, today=date(2026, 6, 1), actual_rate=flat("1"), utilisation={"d": 2})
    assert {"month", "utilisation.d"} <= set(exc.value.errors)


def test_a_clusters_changes_in_the_month_are_noted():
    states = [eight(), ClusterState("a", "research", "p", "h100", date(2026, 6, 16), 16)]
    notes = spend_month(states, *JUNE, today=date(2026, 7, 1), actual_rate=flat("1")).clusters[0].notes
    assert "From 2026-06-16: 8 -> 16 GPUs." in notes
    assert any("The team changed during the month (ml, research)" in n and "'research'" in n for n in notes)
