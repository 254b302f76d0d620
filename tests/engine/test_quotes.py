"""GPU quotes in force on a date: expired and future quotes ignored, the latest per provider wins,
the cheapest provider per pricing kind."""

from datetime import date, datetime
from decimal import Decimal
from types import SimpleNamespace

import pytest

from planner.engine.costs.quotes import PriceInForce, Quote, price_in_force, rate_from_quotes, superseded
from planner.engine.errors import EngineInputError

D = Decimal


def q(provider, usd, quoted_on, valid_until=None, kind="on-demand", sku="h100", id=None, **extra):
    return Quote(
        sku=sku,
        provider=provider,
        usd_per_gpu_hour=D(usd),
        pricing_kind=kind,
        quoted_on=quoted_on,
        valid_until=valid_until,
        id=id,
        **extra,
    )


OLD = q("lambda", "2.80", date(2026, 6, 1), id=1)
PROMO = q("lambda", "2.50", date(2026, 7, 1), valid_until=date(2026, 7, 10), id=2)
NEWER = q("lambda", "3.00", date(2026, 7, 15), id=3)
FUTURE = q("lambda", "1.00", date(2026, 8, 1), id=4)
OTHER = q("coreweave", "2.60", date(2026, 7, 2), id=5)
RESERVED = q("lambda", "1.90", date(2026, 6, 15), kind="reserved", id=6)
SPOT = q("vast", "1.20", date(2026, 7, 1), valid_until=date(2026, 7, 31), kind="spot", id=7)


def sku_price(quotes, on, kind="on-demand", sku="h100"):
    found = price_in_force(quotes, on, sku=sku, kind=kind)
    return None if found is None else found.quote


def test_expired_quote_is_ignored():
    # on 20 July the promo (valid until 10 July) has passed: the older open-ended quote is in force
    assert sku_price([OLD, PROMO], date(2026, 7, 20)) == OLD
    # valid_until is inclusive
    assert sku_price([OLD, PROMO], date(2026, 7, 10)) == PROMO


def test_future_quote_is_ignored():
    assert sku_price([OLD, FUTURE], date(2026, 7, 20)) == OLD
    assert sku_price([FUTURE], date(2026, 7, 31)) is None
    # quoted_on is inclusive
    assert sku_price([OLD, FUTURE], date(2026, 8, 1)) == FUTURE


def test_latest_quote_of_a_provider_wins_even_if_dearer():
    # on 20 July lambda's latest quote (3.00, 15 July) supersedes its 2.80 of 1 June
    assert sku_price([OLD, PROMO, NEWER], date(2026, 7, 20)) == NEWER
    assert sku_price([OLD, PROMO, NEWER], date(2026, 7, 14)) == OLD


def test_a_sku_alone_is_priced_at_the_cheapest_provider_per_pricing_kind():
    everything = [OLD, PROMO, NEWER, FUTURE, OTHER, RESERVED, SPOT]
    # 20 July: lambda on-demand 3.00 vs coreweave 2.60 -> coreweave; reserved 1.90; spot 1.20
    assert sku_price(everything, date(2026, 7, 20)) == OTHER
    assert sku_price(everything, date(2026, 7, 20), kind="reserved") == RESERVED
    assert sku_price(everything, date(2026, 7, 20), kind="spot") == SPOT
    # 5 July: the lambda promo at 2.50 beats coreweave's 2.60; a datetime is read as its day
    assert sku_price(everything, date(2026, 7, 5)) == PROMO
    assert sku_price(everything, datetime(2026, 7, 5, 18, 30)) == PROMO
    assert sku_price(everything, date(2026, 8, 1), kind="spot") is None


def test_a_cluster_is_priced_at_its_own_provider_then_its_list_price_then_unpriced():
    """Issue 24: own quote > the provider's public list price > nothing; never another provider's
    cheaper quote, never an assumption."""
    cheap = q("cheapco", "1.00", date(2026, 6, 1), id=20)
    lambda_list = q("Lambda", "3.99", date(2026, 6, 1), id=21, list_price=True)
    seeds = q("", "2.50", date(2026, 6, 1), id=22, assumption=True)
    pool = [OLD, cheap, lambda_list, seeds]
    got = price_in_force(pool, date(2026, 7, 20), sku="h100", provider="LAMBDA")  # any case
    assert got.quote == OLD and got.basis == "own" and got.usd_per_gpu_hour == D("2.80")
    # without its own quote, its list price (and never cheapco's 1.00)
    got = price_in_force([cheap, lambda_list, seeds], date(2026, 7, 20), sku="h100", provider="lambda")
    assert got.quote == lambda_list and got.basis == "list"
    # a provider with neither: unpriced, whatever others quote and whatever the assumption says
    assert price_in_force(pool, date(2026, 7, 20), sku="h100", provider="nebius") is None
    # a SKU alone: the cheapest own quote, else the cheapest list price; an assumption never
    assert price_in_force(pool, date(2026, 7, 20), sku="h100").quote == cheap
    assert price_in_force([lambda_list, seeds], date(2026, 7, 20), sku="h100").quote == lambda_list
    assert price_in_force([seeds], date(2026, 7, 20), sku="h100") is None


def test_the_price_says_its_basis():
    seeds = q("", "2.50", date(2026, 6, 1), id=22, assumption=True)
    assert PriceInForce(seeds).basis == "assumption" and "assumption no provider quoted" in PriceInForce(seeds).note
    listed = q("Lambda", "3.99", date(2026, 6, 1), id=21, list_price=True)
    note = "Priced at 3.99 USD per GPU-hour: Lambda's on-demand public list price of 2026-06-01."
    assert PriceInForce(listed).note == note
    assert PriceInForce(listed).to_dict() == {
        "usd_per_gpu_hour": "3.9900",
        "quote": 21,
        "provider": "Lambda",
        "basis": "list",
        "pricing_kind": "on-demand",
        "valid_from": "2026-06-01",
        "valid_until": None,
    }
    with pytest.raises(EngineInputError):
        q("Lambda", "1", date(2026, 6, 1), list_price=True, assumption=True)


def test_nothing_in_force():
    assert sku_price([], date(2026, 7, 1)) is None
    assert sku_price([FUTURE], date(2026, 7, 1)) is None


def test_ties_are_deterministic():
    a = q("b-cloud", "2.00", date(2026, 7, 1), id=10)
    b = q("a-cloud", "2.00", date(2026, 7, 1), id=11)
    c = q("a-cloud", "2.00", date(2026, 7, 3), id=12)
    assert sku_price([a, b], date(2026, 7, 5)) == b  # same price and date: provider name
    assert sku_price([a, c], date(2026, 7, 5)) == c  # same price: the latest quote
    same_day = q("a-cloud", "1.90", date(2026, 7, 3), id=13)
    assert sku_price([c, same_day], date(2026, 7, 5)) == same_day  # same provider and day: cheaper


def test_other_skus_quotes_do_not_count():
    h200 = q("lambda", "3.50", date(2026, 7, 1), sku="h200")
    assert sku_price([OLD, h200], date(2026, 7, 20), sku="h200") == h200
    assert sku_price([OLD, h200], date(2026, 7, 20)) == OLD


def test_superseded_quotes():
    assert superseded([OLD, PROMO, NEWER, OTHER], date(2026, 7, 20)) == {1}
    assert superseded([OLD, PROMO, NEWER, OTHER], date(2026, 7, 5)) == {1}
    assert superseded([OLD, OTHER], date(2026, 7, 5)) == set()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"usd_per_gpu_hour": D("-1")}, "usd_per_gpu_hour"),
        ({"usd_per_gpu_hour": D("0")}, "usd_per_gpu_hour"),
        ({"pricing_kind": "weekly"}, "pricing_kind"),
        ({"valid_until": date(2026, 6, 30)}, "valid_until"),
        ({"quoted_on": "2026-07-01"}, "quoted_on"),
    ],
)
def test_bad_quotes(kwargs, field):
    args = {
        "sku": "h100",
        "provider": "lambda",
        "usd_per_gpu_hour": D("2.50"),
        "pricing_kind": "on-demand",
        "quoted_on": date(2026, 7, 1),
    } | kwargs
    with pytest.raises(EngineInputError) as exc:
        Quote(**args)
    assert field in exc.value.errors


def test_unknown_kind_and_bad_date():
    with pytest.raises(EngineInputError):
        price_in_force([OLD], date(2026, 7, 1), sku="h100", kind="weekly")
    with pytest.raises(EngineInputError):
        price_in_force([OLD], "2026-07-01", sku="h100")


def test_from_record_and_to_dict():
    row = SimpleNamespace(
        id=9,
        sku=SimpleNamespace(slug="h100"),
        provider="lambda",
        usd_per_gpu_hour=D("2.5000"),
        pricing_kind="reserved",
        quoted_on=date(2026, 7, 1),
        valid_until=None,
    )
    quote = Quote.from_record(row)
    assert quote.sku == "h100" and quote.id == 9
    assert quote.to_dict() == {
        "id": 9,
        "sku": "h100",
        "provider": "lambda",
        "usd_per_gpu_hour": "2.5000",
        "pricing_kind": "reserved",
        "quoted_on": "2026-07-01",
        "valid_until": None,
    }


def test_rate_from_quotes_uses_the_clusters_own_provider():
    cheap = q("cheapco", "1.00", date(2026, 6, 1))
    lookup = rate_from_quotes([OLD, PROMO, NEWER, cheap])
    state = SimpleNamespace(sku="h100", provider="Lambda")
    assert lookup(state, date(2026, 7, 5)) == D("2.50")
    assert lookup(state, date(2026, 7, 20)) == D("3.00")
    assert lookup(SimpleNamespace(sku="h200", provider="lambda"), date(2026, 7, 20)) is None
    # another provider's cluster is unpriced, never priced at cheapco's 1.00
    assert lookup(SimpleNamespace(sku="h100", provider="nebius"), date(2026, 7, 20)) is None
