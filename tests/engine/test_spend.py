"""The pro-rating rules of monthly spend from a dated history of cluster states (July 2026 = 31 days),
through ``spend_month`` with ``today`` after the month, so every day is actual. Every expected figure
is worked out by hand in the comment beside it."""

from datetime import date, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.engine import ClusterState, DeploymentShare, EngineInputError, spend_month

D = Decimal
RATES = {"h100": D("2.50"), "h200": D("3.50")}
AFTER_JULY = date(2026, 8, 10)


def state(cluster, effective_from, gpus, hours=24, status="active", team="search", provider="lambda", sku="h100"):
    return ClusterState(
        cluster=cluster,
        team=team,
        provider=provider,
        sku=sku,
        effective_from=effective_from,
        gpus=gpus,
        hours_per_day=hours,
        status=status,
    )


FLEET = [
    # a: resized mid-month, 8 GPUs 1-15 July then 16 GPUs from 16 July (and 64 from August: not July)
    state("a", date(2026, 7, 1), 8),
    state("a", date(2026, 7, 16), 16),
    state("a", date(2026, 8, 1), 64),
    # b: created mid-month (mid-day: the whole day counts), 20-31 July = 12 days
    state("b", datetime(2026, 7, 20, 14, 30), 8, team="agents", provider="coreweave", sku="h200"),
    # c: retired mid-month; active since June, retired from 11 July -> 1-10 July = 10 days
    state("c", date(2026, 6, 1), 4, provider="coreweave"),
    state("c", date(2026, 7, 11), 4, status="retired", provider="coreweave"),
    # d: switched to 4 h a day from 22 July -> 21 days at 24 h, 10 days at 4 h
    state("d", date(2026, 5, 1), 8, team="agents"),
    state("d", date(2026, 7, 22), 8, hours=4, team="agents"),
    # e: planned, never active
    state("e", date(2026, 7, 1), 32, status="planned", team="agents"),
]


def rates(table=RATES):
    return lambda st_, day: table.get(st_.sku)


def july(history=FLEET, today=AFTER_JULY, **kw):
    return spend_month(history, 2026, 7, today, rates(kw.pop("table", RATES)), **kw)


def by_name(result):
    return {c.name: c for c in result.clusters}


def test_july_has_31_days_and_is_all_actual_after_it():
    r = july()
    assert (r.days_in_month, r.actual_days, r.projected_days) == (31, 31, 0)
    assert r.total.projected.cost_usd == 0


def test_resized_mid_month_is_pro_rated():
    a = by_name(july())["a"]
    # 8 x 24 x 15 + 16 x 24 x 16 = 2,880 + 6,144 = 9,024 GPU-hours; x 2.50 = 22,560 USD
    assert a.actual.gpu_hours == 9024
    assert a.actual.cost_usd == D("22560.00")
    assert a.gpus == 16 and a.active_days == 31
    assert any("8 -> 16 GPUs" in n for n in a.notes)


def test_created_mid_month():
    b = by_name(july())["b"]
    # 20-31 July = 12 days: 8 x 24 x 12 = 2,304 GPU-hours x 3.50 = 8,064 USD
    assert b.active_days == 12
    assert b.actual.gpu_hours == 2304
    assert b.actual.cost_usd == D("8064.00")


def test_retired_mid_month():
    c = by_name(july())["c"]
    # 1-10 July: 4 x 24 x 10 = 960 GPU-hours x 2.50 = 2,400 USD
    assert c.active_days == 10
    assert c.actual.gpu_hours == 960
    assert c.actual.cost_usd == D("2400.00")
    assert c.gpus == 4


def test_change_of_hours_per_day():
    d = by_name(july())["d"]
    # 1-21 July: 8 x 24 x 21 = 4,032; 22-31 July: 8 x 4 x 10 = 320; 4,352 GPU-hours x 2.50 = 10,880
    assert d.actual.gpu_hours == 4352
    assert d.actual.cost_usd == D("10880.00")
    assert any("24 -> 4 h a day" in n for n in d.notes)


def test_planned_cluster_costs_nothing():
    assert "e" not in by_name(july())


def test_subtotals_add_up_to_the_total():
    r = july()
    # 9,024 + 2,304 + 960 + 4,352 = 16,640 GPU-hours; 22,560 + 8,064 + 2,400 + 10,880 = 43,904 USD
    assert r.total.actual.gpu_hours == 16640
    assert r.total.actual.cost_usd == D("43904.00")
    teams = {t.name: t for t in r.by_team}
    providers = {p.name: p for p in r.by_provider}
    # search = a + c: 9,984 h, 24,960 USD; agents = b + d: 6,656 h, 18,944 USD
    assert teams["search"].actual.gpu_hours == 9984 and teams["search"].actual.cost_usd == D("24960.00")
    assert teams["agents"].actual.gpu_hours == 6656 and teams["agents"].actual.cost_usd == D("18944.00")
    # lambda = a + d: 33,440 USD; coreweave = b + c: 10,464 USD
    assert providers["lambda"].actual.cost_usd == D("33440.00")
    assert providers["coreweave"].actual.cost_usd == D("10464.00")
    assert providers["coreweave"].members == ["b", "c"]
    for groups in (r.by_team, r.by_provider):
        assert sum(g.actual.cost_usd for g in groups) == r.total.actual.cost_usd
        assert sum(g.actual.gpu_hours for g in groups) == r.total.actual.gpu_hours


def test_june_is_the_seeds_30_day_month():
    """The seeds' table: 8 GPUs always on = 5,760 GPU-hours = 14,400 USD; 8 GPUs 4 h a day = 960 = 2,400."""
    seeds = [state("node", date(2026, 1, 1), 8), state("part", date(2026, 1, 1), 8, hours=4)]
    r = by_name(spend_month(seeds, 2026, 6, date(2026, 7, 1), rates()))
    assert r["node"].actual.gpu_hours == 5760 and r["node"].actual.cost_usd == D("14400.00")
    assert r["part"].actual.gpu_hours == 960 and r["part"].actual.cost_usd == D("2400.00")


def test_idle_cost_where_utilisation_is_given():
    """A deployment holding all 16 of a's GPUs from 16 July at 75% utilisation: its share is 16 x 24 x 16 x
    2.50 = 15,360 USD, idle 15,360 x 0.25 = 3,840; the other 7,200 USD of a (1-15 July, nobody's) are
    unassigned: idle unknown."""
    share = DeploymentShare("a-llm", "a", "llama", 16, date(2026, 7, 16))
    r = july(deployments=[share], utilisation={"a-llm": 0.75})
    lines = {d.name: d for d in r.deployments}
    assert lines["a-llm"].actual.cost_usd == D("15360.00")
    assert lines["a-llm"].idle_cost_usd == D("3840.00")
    a = by_name(r)["a"]
    assert a.actual.cost_usd == D("22560.00") and a.idle_unknown_usd == D("7200.00")
    assert by_name(july())["a"].idle_cost_usd in (None, D(0))  # no utilisation given: no idle figure


def test_a_day_without_a_rate_is_unpriced_and_named_not_guessed():
    """b's SKU has no rate: its 2,304 GPU-hours are unpriced (not priced at zero) with a 'missing' warning
    for its 12 days."""
    r = july(table={"h100": D("2.50")})
    b = by_name(r)["b"]
    assert b.actual.cost_usd == 0 and b.actual.unpriced_gpu_hours == 2304
    (warning,) = [w for w in r.warnings if w.cluster == "b"]
    assert (warning.kind, warning.sku, warning.days) == ("missing", "h200", 12)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (state("x", date(2026, 7, 1), 0), "states.0.gpus"),
        (state("x", date(2026, 7, 1), 8, hours=25), "states.0.hours_per_day"),
        (state("x", date(2026, 7, 1), 8, hours=0), "states.0.hours_per_day"),
        (state("x", date(2026, 7, 1), 8, status="paused"), "states.0.status"),
        (state("x", "2026-07-01", 8), "states.0.effective_from"),
        (state("", date(2026, 7, 1), 8), "states.0.cluster"),
    ],
)
def test_bad_states(bad, field):
    with pytest.raises(EngineInputError) as exc:
        july([bad])
    assert field in exc.value.errors


def test_bad_month_and_utilisation():
    with pytest.raises(EngineInputError) as exc:
        spend_month(FLEET, 2026, 13, AFTER_JULY, rates(), utilisation={"a": 1.5})
    assert {"month", "utilisation.a"} <= set(exc.value.errors)


def test_a_rate_that_is_not_a_price_is_refused_not_left_unpriced():
    """A lookup answering -1 USD/GPU-hour is an error naming the SKU's rate, not a silently unpriced day
    (it was recorded and then ignored before this test)."""
    with pytest.raises(EngineInputError) as exc:
        july(table={"h100": D("-1"), "h200": D(1)})
    assert "rates.h100" in exc.value.errors


HISTORY = st.lists(
    st.builds(
        state,
        cluster=st.sampled_from(["a", "b", "c", "d"]),
        effective_from=st.dates(date(2026, 6, 1), date(2026, 8, 15)),
        gpus=st.integers(1, 64),
        hours=st.decimals(min_value=D("0.25"), max_value=24, places=2),
        status=st.sampled_from(["active", "active", "retired", "planned"]),
        team=st.sampled_from(["search", "agents"]),
        provider=st.sampled_from(["lambda", "coreweave"]),
        sku=st.sampled_from(["h100", "h200"]),
    ),
    max_size=12,
)


@given(
    HISTORY, st.decimals(min_value=D("0.0001"), max_value=9, places=4), st.dates(date(2026, 6, 25), date(2026, 8, 5))
)
def test_subtotals_always_add_up(history, odd_rate, today):
    r = spend_month(history, 2026, 7, today, rates({"h100": odd_rate, "h200": D("3.3333")}))
    for part in ("actual", "projected"):
        total = getattr(r.total, part)
        for groups in (r.by_team, r.by_provider, r.clusters):
            assert sum(getattr(g, part).cost_usd for g in groups) == total.cost_usd
            assert sum(getattr(g, part).gpu_hours for g in groups) == total.gpu_hours
    for c in r.clusters:
        assert 1 <= c.active_days <= 31
        assert c.actual.gpu_hours + c.projected.gpu_hours <= c.gpus * 24 * c.active_days


def test_month_to_date_counts_the_days_through_today():
    """Today 20 July: a 8 x 24 x 15 + 16 x 24 x 5 = 4,800 GPU-hours spent (12,000 USD), the other 11 days
    projected; b (from 20 July) has its one day; d 20 days at 24 h."""
    r = july(today=date(2026, 7, 20))
    rows = by_name(r)
    assert rows["a"].actual.gpu_hours == 4800
    assert rows["a"].actual.cost_usd == D("12000.00")
    assert rows["b"].actual.gpu_hours == 8 * 24
    assert rows["d"].actual.gpu_hours == 8 * 24 * 20
    assert (r.actual_days, r.projected_days) == (20, 11)


def test_before_the_month_nothing_is_spent_and_after_it_everything_is():
    before = july(today=date(2026, 6, 30))
    assert before.total.actual.cost_usd == 0 and before.total.projected.cost_usd > 0
    assert july(today=date(2026, 7, 31)).total.actual.cost_usd == july().total.actual.cost_usd
