"""Monthly spend from a dated history of cluster states (July 2026 = 31 days)."""

import json
from datetime import date, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.engine.costs.quotes import Quote, rate_from_quotes
from planner.engine.costs.spend import ClusterState, monthly_spend
from planner.engine.errors import EngineInputError

D = Decimal
RATES = {"h100": D("2.50"), "h200": D("3.50")}


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


def by_name(result):
    return {c.cluster: c for c in result.clusters}


def test_july_has_31_days():
    r = monthly_spend(FLEET, 2026, 7, RATES)
    assert r.days_in_month == 31


def test_resized_mid_month_is_pro_rated():
    a = by_name(monthly_spend(FLEET, 2026, 7, RATES))["a"]
    # 8 x 24 x 15 + 16 x 24 x 16 = 2,880 + 6,144 = 9,024 GPU-hours; x 2.50 = 22,560 USD
    assert a.gpu_hours == 9024
    assert a.cost_usd == D("22560.00")
    assert a.gpus == 16 and a.gpus_at_month_end == 16
    assert a.active_days == 31
    assert a.usd_per_gpu_hour == D("2.5000")
    assert any("8 -> 16 GPUs" in n for n in a.assumptions)


def test_created_mid_month():
    b = by_name(monthly_spend(FLEET, 2026, 7, RATES))["b"]
    # 20-31 July = 12 days: 8 x 24 x 12 = 2,304 GPU-hours x 3.50 = 8,064 USD
    assert b.active_days == 12
    assert b.gpu_hours == 2304
    assert b.cost_usd == D("8064.00")


def test_retired_mid_month():
    c = by_name(monthly_spend(FLEET, 2026, 7, RATES))["c"]
    # 1-10 July: 4 x 24 x 10 = 960 GPU-hours x 2.50 = 2,400 USD
    assert c.active_days == 10
    assert c.gpu_hours == 960
    assert c.cost_usd == D("2400.00")
    assert c.gpus == 4 and c.gpus_at_month_end == 0


def test_change_of_hours_per_day():
    d = by_name(monthly_spend(FLEET, 2026, 7, RATES))["d"]
    # 1-21 July: 8 x 24 x 21 = 4,032; 22-31 July: 8 x 4 x 10 = 320; 4,352 GPU-hours x 2.50 = 10,880
    assert d.gpu_hours == 4352
    assert d.cost_usd == D("10880.00")
    assert any("24 -> 4 h a day" in n for n in d.assumptions)


def test_planned_cluster_costs_nothing():
    assert "e" not in by_name(monthly_spend(FLEET, 2026, 7, RATES))


def test_subtotals_add_up_to_the_total():
    r = monthly_spend(FLEET, 2026, 7, RATES)
    # 9,024 + 2,304 + 960 + 4,352 = 16,640 GPU-hours; 22,560 + 8,064 + 2,400 + 10,880 = 43,904 USD
    assert r.total_gpu_hours == 16640
    assert r.total_cost_usd == D("43904.00")
    # search = a + c: 9,984 h, 24,960 USD; agents = b + d: 6,656 h, 18,944 USD
    assert r.by_team["search"].gpu_hours == 9984 and r.by_team["search"].cost_usd == D("24960.00")
    assert r.by_team["agents"].gpu_hours == 6656 and r.by_team["agents"].cost_usd == D("18944.00")
    # lambda = a + d: 13,376 h, 33,440 USD; coreweave = b + c: 3,264 h, 10,464 USD
    assert r.by_provider["lambda"].cost_usd == D("33440.00")
    assert r.by_provider["coreweave"].cost_usd == D("10464.00")
    assert r.by_provider["coreweave"].clusters == ["b", "c"]
    for groups in (r.by_team, r.by_provider):
        assert sum(g.cost_usd for g in groups.values()) == r.total_cost_usd
        assert sum(g.gpu_hours for g in groups.values()) == r.total_gpu_hours


def test_june_is_the_seeds_30_day_month():
    seeds = [state("node", date(2026, 1, 1), 8), state("part", date(2026, 1, 1), 8, hours=4)]
    r = by_name(monthly_spend(seeds, 2026, 6, RATES))
    assert r["node"].gpu_hours == 5760 and r["node"].cost_usd == D("14400.00")
    assert r["part"].gpu_hours == 960 and r["part"].cost_usd == D("2400.00")


def test_idle_cost_where_utilisation_is_given():
    r = monthly_spend(FLEET, 2026, 7, RATES, utilisation={"a": 0.75})
    a = by_name(r)["a"]
    # 22,560 x (1 - 0.75) = 5,640 USD
    assert a.idle_cost_usd == D("5640.00")
    assert by_name(r)["b"].idle_cost_usd is None
    assert r.by_team["search"].idle_cost_usd == D("5640.00")
    assert r.by_team["agents"].idle_cost_usd is None
    assert r.total_idle_cost_usd == D("5640.00")
    assert monthly_spend(FLEET, 2026, 7, RATES).total_idle_cost_usd is None


def test_rate_looked_up_per_day_from_quotes():
    quotes = [
        Quote("h100", "lambda", D("2.50"), "on-demand", date(2026, 6, 1)),
        Quote("h100", "lambda", D("2.00"), "on-demand", date(2026, 7, 16)),
        Quote("h100", "cheapco", D("1.00"), "on-demand", date(2026, 6, 1)),
    ]
    history = [state("a", date(2026, 7, 1), 8)]
    a = by_name(monthly_spend(history, 2026, 7, rate_from_quotes(quotes)))["a"]
    # 8 x 24 x 15 x 2.50 + 8 x 24 x 16 x 2.00 = 7,200 + 6,144 = 13,344 USD over 5,952 GPU-hours
    assert a.gpu_hours == 5952
    assert a.cost_usd == D("13344.00")
    assert a.usd_per_gpu_hour == D("2.2419")  # 13,344 / 5,952
    market = by_name(monthly_spend(history, 2026, 7, rate_from_quotes(quotes, match_provider=False)))["a"]
    assert market.cost_usd == D("5952.00")


def test_missing_rate_is_an_error():
    with pytest.raises(EngineInputError) as exc:
        monthly_spend(FLEET, 2026, 7, {"h100": D("2.50")})
    assert "rates" in exc.value.errors
    assert "'h200'" in exc.value.errors["rates"][0] and "12 day(s)" in exc.value.errors["rates"][0]


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
        monthly_spend([bad], 2026, 7, RATES)
    assert field in exc.value.errors


def test_bad_month_and_utilisation():
    with pytest.raises(EngineInputError) as exc:
        monthly_spend(FLEET, 2026, 13, RATES, utilisation={"a": 1.5})
    assert set(exc.value.errors) == {"month", "utilisation.a"}
    with pytest.raises(EngineInputError):
        monthly_spend(FLEET, 2026, 7, {"h100": D("-1"), "h200": D(1)})


def test_to_dict_is_json():
    d = monthly_spend(FLEET, 2026, 7, RATES, utilisation={"a": 0.75}).to_dict()
    assert d == json.loads(json.dumps(d))
    assert d["total_cost_usd"] == "43904.00"
    assert d["total_gpu_hours"] == "16640.00"
    assert list(d["by_team"]) == ["agents", "search"]
    assert d["clusters"][0]["cluster"] == "a" and d["clusters"][0]["idle_cost_usd"] == "5640.00"
    assert d["assumptions"]


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


@given(HISTORY, st.decimals(min_value=D("0.0001"), max_value=9, places=4))
def test_subtotals_always_add_up(history, odd_rate):
    r = monthly_spend(history, 2026, 7, {"h100": odd_rate, "h200": D("3.3333")})
    for groups in (r.by_team, r.by_provider):
        assert sum(g.cost_usd for g in groups.values()) == r.total_cost_usd
        assert sum(g.gpu_hours for g in groups.values()) == r.total_gpu_hours
    assert sum(c.cost_usd for c in r.clusters) == r.total_cost_usd
    for c in r.clusters:
        assert 1 <= c.active_days <= 31
        assert c.gpu_hours <= c.gpus * 24 * c.active_days


def test_month_to_date_counts_the_days_through_the_given_one():
    """``through``: the docstring's 8 GPUs 1-15 July and 16 from 16 July, through 20 July:
    8 x 24 x 15 + 16 x 24 x 5 = 4,800 GPU-hours; b (from 20 July) has its one day; d 20 days at 24 h."""
    r = monthly_spend(FLEET, 2026, 7, RATES, through=date(2026, 7, 20))
    rows = by_name(r)
    assert rows["a"].gpu_hours == 4800
    assert rows["a"].cost_usd == D("12000.00")
    assert rows["b"].active_days == 1 and rows["b"].gpu_hours == 8 * 24
    assert rows["d"].gpu_hours == 8 * 24 * 20
    assert any("through 2026-07-20" in note for note in r.assumptions)


def test_month_to_date_before_the_month_bills_nothing_and_the_last_day_bills_it_all():
    assert monthly_spend(FLEET, 2026, 7, RATES, through=date(2026, 6, 30)).clusters == []
    whole = monthly_spend(FLEET, 2026, 7, RATES)
    assert monthly_spend(FLEET, 2026, 7, RATES, through=date(2026, 7, 31)).total_cost_usd == whole.total_cost_usd
