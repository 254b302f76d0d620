"""Property tests (hypothesis) of the cost formulas. Decimal arithmetic is exact here, so the
linearity checks are equalities."""

from decimal import Decimal

from hypothesis import assume, given
from hypothesis import strategies as st

from planner.engine.costs import api_cost_usd, breakeven, breakeven_output_tokens_mix, rent_usd

GPUS = st.integers(1, 4096)
RATE = st.decimals(min_value=0, max_value=50, places=4)
PRICE = st.decimals(min_value=0, max_value=100, places=4)
OUT_PRICE = st.decimals(min_value=Decimal("0.01"), max_value=100, places=4)
FRACTION = st.decimals(min_value=0, max_value=1, places=4)
HOURS = st.decimals(min_value=Decimal("0.25"), max_value=24, places=2)
DAYS = st.integers(1, 31)
TOKENS = st.integers(0, 10**13)


@given(GPUS, st.integers(1, 16), RATE, HOURS, DAYS)
def test_rent_is_linear_in_gpus(gpus, k, rate, hours, days):
    assert rent_usd(gpus * k, rate, hours, days) == k * rent_usd(gpus, rate, hours, days)


@given(GPUS, RATE, RATE, HOURS, DAYS)
def test_rent_is_linear_in_rate(gpus, a, b, hours, days):
    assert rent_usd(gpus, a + b, hours, days) == rent_usd(gpus, a, hours, days) + rent_usd(gpus, b, hours, days)
    assert rent_usd(gpus, 3 * a, hours, days) == 3 * rent_usd(gpus, a, hours, days)


@given(TOKENS, TOKENS, TOKENS, TOKENS, FRACTION, PRICE, PRICE, OUT_PRICE)
def test_api_cost_never_decreases_with_more_tokens(i, o, di, do, hit_rate, hit, miss, out):
    base = api_cost_usd(i, o, hit_rate, hit, miss, out)
    assert api_cost_usd(i + di, o, hit_rate, hit, miss, out) >= base
    assert api_cost_usd(i, o + do, hit_rate, hit, miss, out) >= base
    assert api_cost_usd(i + di, o + do, hit_rate, hit, miss, out) >= base


@given(TOKENS, TOKENS, FRACTION, FRACTION, PRICE, PRICE, OUT_PRICE)
def test_more_cache_hits_never_raise_api_cost(i, o, r1, r2, hit, miss, out):
    assume(hit <= miss)
    low, high = sorted((r1, r2))
    assert api_cost_usd(i, o, high, hit, miss, out) <= api_cost_usd(i, o, low, hit, miss, out)


@given(RATE, TOKENS, st.integers(1, 10**13), FRACTION, FRACTION, PRICE, PRICE, OUT_PRICE)
def test_more_cache_hits_never_bring_the_mix_breakeven_closer(rate, i, o, r1, r2, hit, miss, out):
    assume(hit <= miss)
    rent = rate * 5760
    low, high = sorted((r1, r2))
    assert breakeven_output_tokens_mix(rent, i, o, high, hit, miss, out) >= breakeven_output_tokens_mix(
        rent, i, o, low, hit, miss, out
    )


@given(GPUS, RATE, TOKENS, st.integers(0, 10**13), FRACTION, PRICE, PRICE, OUT_PRICE)
def test_breakeven_result_is_consistent(gpus, rate, i, o, hit_rate, hit, miss, out):
    r = breakeven(
        gpus=gpus,
        usd_per_gpu_hour=rate,
        input_cache_hit_usd_per_mtok=hit,
        input_cache_miss_usd_per_mtok=miss,
        output_usd_per_mtok=out,
        monthly_input_tokens=i,
        monthly_output_tokens=o,
        cache_hit_rate=hit_rate,
    )
    # input can only add to the API bill, so the mix breakeven is never beyond the output-only one
    if r.breakeven_output_tokens_per_month_mix is not None:
        assert r.breakeven_output_tokens_per_month_mix <= r.breakeven_output_tokens_per_month
    assert r.cheaper in {"rent", "api"}
    assert r.monthly_rent_usd >= 0 and r.monthly_api_usd >= 0
    assert r.verdict and r.assumptions
