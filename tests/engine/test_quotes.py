"""GPU quotes in force on a date: expired and future quotes ignored, the latest per provider wins,
the cheapest provider per pricing kind."""

from datetime import date, datetime
from decimal import Decimal
from types import SimpleNamespace

import pytest

from planner.engine.costs.quotes import Quote, quote_in_force, quotes_in_force, rate_from_quotes
from planner.engine.errors import EngineInputError

D = Decimal


def q(provider, usd, quoted_on, valid_until=None, kind="on-demand", sku="h100", id=None):
    return Quote(
        sku=sku,
        provider=provider,
        usd_per_gpu_hour=D(usd),
        pricing_kind=kind,
        quoted_on=quoted_on,
        valid_until=valid_until,
        id=id,
    )


OLD = q("lambda", "2.80", date(2026, 6, 1), id=1)
PROMO = q("lambda", "2.50", date(2026, 7, 1), valid_until=date(2026, 7, 10), id=2)
NEWER = q("lambda", "3.00", date(2026, 7, 15), id=3)
FUTURE = q("lambda", "1.00", date(2026, 8, 1), id=4)
OTHER = q("coreweave", "2.60", date(2026, 7, 2), id=5)
RESERVED = q("lambda", "1.90", date(2026, 6, 15), kind="reserved", id=6)
SPOT = q("vast", "1.20", date(2026, 7, 1), valid_until=date(2026, 7, 31), kind="spot", id=7)


def test_expired_quote_is_ignored():
    # on 20 July the promo (valid until 10 July) has passed: the older open-ended quote is in force
    assert quote_in_force([OLD, PROMO], date(2026, 7, 20)) == OLD
    # valid_until is inclusive
    assert quote_in_force([OLD, PROMO], date(2026, 7, 10)) == PROMO


def test_future_quote_is_ignored():
    assert quote_in_force([OLD, FUTURE], date(2026, 7, 20)) == OLD
    assert quote_in_force([FUTURE], date(2026, 7, 31)) is None
    # quoted_on is inclusive
    assert quote_in_force([OLD, FUTURE], date(2026, 8, 1)) == FUTURE


def test_latest_quote_of_a_provider_wins_even_if_dearer():
    # on 20 July lambda's latest quote (3.00, 15 July) supersedes its 2.80 of 1 June
    assert quote_in_force([OLD, PROMO, NEWER], date(2026, 7, 20)) == NEWER
    assert quote_in_force([OLD, PROMO, NEWER], date(2026, 7, 14)) == OLD


def test_cheapest_provider_per_pricing_kind():
    everything = [OLD, PROMO, NEWER, FUTURE, OTHER, RESERVED, SPOT]
    # 20 July: lambda on-demand 3.00 vs coreweave 2.60 -> coreweave; reserved 1.90; spot 1.20
    got = quotes_in_force(everything, date(2026, 7, 20))
    assert got == {"on-demand": OTHER, "reserved": RESERVED, "spot": SPOT}
    assert list(got) == ["on-demand", "reserved", "spot"]
    # 5 July: the lambda promo at 2.50 beats coreweave's 2.60
    assert quotes_in_force(everything, date(2026, 7, 5))["on-demand"] == PROMO
    # a datetime is read as its day
    assert quotes_in_force(everything, datetime(2026, 7, 5, 18, 30))["on-demand"] == PROMO
    assert quote_in_force(everything, date(2026, 7, 20), kind="spot") == SPOT
    assert quote_in_force(everything, date(2026, 8, 1), kind="spot") is None


def test_nothing_in_force():
    assert quotes_in_force([], date(2026, 7, 1)) == {}
    assert quotes_in_force([FUTURE], date(2026, 7, 1)) == {}


def test_ties_are_deterministic():
    a = q("b-cloud", "2.00", date(2026, 7, 1), id=10)
    b = q("a-cloud", "2.00", date(2026, 7, 1), id=11)
    c = q("a-cloud", "2.00", date(2026, 7, 3), id=12)
    assert quote_in_force([a, b], date(2026, 7, 5)) == b  # same price and date: provider name
    assert quote_in_force([a, c], date(2026, 7, 5)) == c  # same price: the latest quote
    same_day = q("a-cloud", "1.90", date(2026, 7, 3), id=13)
    assert quote_in_force([c, same_day], date(2026, 7, 5)) == same_day  # same provider and day: cheaper


def test_several_skus_need_a_sku():
    h200 = q("lambda", "3.50", date(2026, 7, 1), sku="h200")
    with pytest.raises(EngineInputError) as exc:
        quotes_in_force([OLD, h200], date(2026, 7, 20))
    assert "sku" in exc.value.errors
    assert quote_in_force([OLD, h200], date(2026, 7, 20), sku="h200") == h200


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
        quote_in_force([OLD], date(2026, 7, 1), kind="weekly")
    with pytest.raises(EngineInputError):
        quotes_in_force([OLD], "2026-07-01")


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
    state = SimpleNamespace(sku="h100", provider="lambda")
    assert lookup(state, date(2026, 7, 5)) == D("2.50")
    assert lookup(state, date(2026, 7, 20)) == D("3.00")
    assert lookup(SimpleNamespace(sku="h200", provider="lambda"), date(2026, 7, 20)) is None
    market = rate_from_quotes([OLD, PROMO, NEWER, cheap], match_provider=False)
    assert market(state, date(2026, 7, 20)) == D("1.00")
