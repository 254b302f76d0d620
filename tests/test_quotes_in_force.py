"""The price book (``fleet.prices.PriceBook``): GPU quotes read in one query, SQL only prefiltering,
and the one engine rule (``planner.engine.price_in_force``) deciding; checked on the engine tests'
cases and on random fleets of quotes against the rule asked of every row unfiltered."""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.models import GpuQuote, HardwareSku, Provider
from fleet.prices import PriceBook
from planner.engine import PRICING_KINDS, Quote, price_in_force

D = Decimal


def add(sku, provider, usd, quoted_on, valid_until=None, kind="on-demand", list_price=False) -> GpuQuote:
    return GpuQuote.objects.create(
        sku=sku,
        provider=None if provider is None else Provider.objects.ensure(provider),
        usd_per_gpu_hour=D(usd),
        pricing_kind=kind,
        quoted_on=quoted_on,
        valid_until=valid_until,
        list_price=list_price,
    )


def every_row() -> list[Quote]:
    """Every stored quote, one by one through ``Quote.from_record`` (no prefilter at all)."""
    return [Quote.from_record(q) for q in GpuQuote.objects.select_related("sku", "provider")]


@pytest.fixture
def h200(db):
    return HardwareSku.objects.create(
        slug="h200",
        name="H200",
        vendor="NVIDIA",
        hbm_gb=141,
        hbm_bandwidth_tbps=4.8,
        bf16_tflops=989,
        interconnect_gbps=900,
    )


@pytest.mark.django_db
def test_the_engine_tests_cases(sku, h200):
    old = add(sku, "lambda", "2.80", date(2026, 6, 1))
    promo = add(sku, "lambda", "2.50", date(2026, 7, 1), valid_until=date(2026, 7, 10))
    newer = add(sku, "lambda", "3.00", date(2026, 7, 15))
    add(sku, "lambda", "1.00", date(2026, 8, 1))  # future
    other = add(sku, "coreweave", "2.60", date(2026, 7, 2))
    reserved = add(sku, "lambda", "1.90", date(2026, 6, 15), kind="reserved")
    spot = add(sku, "vast", "1.20", date(2026, 7, 1), valid_until=date(2026, 7, 31), kind="spot")
    add(h200, "lambda", "0.10", date(2026, 6, 1))  # another SKU never counts
    add(sku, None, "0.50", date(2026, 6, 1))  # an assumption: never in force
    book = PriceBook.load()

    def sku_price(on, kind="on-demand"):
        found = book.for_sku(sku.slug, on, kind)
        return None if found is None else found.quote.id

    def cluster_price(provider, on):
        found = book.for_rented(sku.slug, provider, on)
        return None if found is None else found.quote.id

    assert sku_price(date(2026, 7, 20)) == other.pk  # lambda's latest (3.00) vs coreweave 2.60
    assert sku_price(date(2026, 7, 5)) == promo.pk  # the promo, in force until 10 July inclusive
    assert sku_price(date(2026, 7, 14)) == other.pk and sku_price(date(2026, 6, 30)) == old.pk
    assert sku_price(date(2026, 7, 20), "reserved") == reserved.pk
    assert sku_price(date(2026, 7, 20), "spot") == spot.pk and sku_price(date(2026, 8, 1), "spot") is None
    assert sku_price(date(2026, 5, 31)) is None  # the assumption of 1 June would be the only one
    # A cluster at lambda pays lambda's latest, never coreweave's cheaper quote; one at vast (spot only)
    # has no on-demand price: unpriced.
    assert cluster_price("Lambda", date(2026, 7, 20)) == newer.pk
    assert cluster_price("coreweave", date(2026, 7, 20)) == other.pk
    assert cluster_price("vast", date(2026, 7, 20)) is None


@pytest.mark.django_db
def test_a_list_price_prices_its_providers_cluster_and_a_sku_without_quotes(sku):
    listed = add(sku, "Lambda", "3.99", date(2026, 6, 1), list_price=True)
    book = PriceBook.load()
    assert book.for_rented(sku.slug, "lambda", date(2026, 7, 1)).basis == "list"
    assert book.for_sku(sku.slug, date(2026, 7, 1)).quote.id == listed.pk
    own = add(sku, "Lambda", "3.10", date(2026, 6, 15))  # negotiated: displaces the list price
    book = PriceBook.load()
    assert book.for_rented(sku.slug, "LAMBDA", date(2026, 7, 1)).quote.id == own.pk
    assert book.for_sku(sku.slug, date(2026, 7, 1)).basis == "own"


@pytest.mark.django_db
def test_ties_break_as_the_engine_breaks_them(sku):
    add(sku, "b-cloud", "2.00", date(2026, 7, 1))
    a = add(sku, "a-cloud", "2.00", date(2026, 7, 1))
    assert PriceBook.load().for_sku(sku.slug, date(2026, 7, 5)).quote.id == a.pk  # same price, day: name
    later = add(sku, "c-cloud", "2.00", date(2026, 7, 2))
    assert PriceBook.load().for_sku(sku.slug, date(2026, 7, 5)).quote.id == later.pk  # same price: latest
    cheaper_same_day = add(sku, "c-cloud", "1.50", date(2026, 7, 2))
    twin = add(sku, "c-cloud", "1.50", date(2026, 7, 2))  # same provider, day and price: the larger id
    got = PriceBook.load().for_rented(sku.slug, "c-cloud", date(2026, 7, 5)).quote.id
    assert got == twin.pk != cheaper_same_day.pk


@pytest.mark.django_db
def test_one_query_whatever_the_number_of_quotes(sku):
    for n in range(40):
        add(sku, f"p{n % 7}", f"{1 + n / 10:.2f}", date(2026, 1, 1) + timedelta(days=n))
    with CaptureQueriesContext(connection) as queries:
        book = PriceBook.load([sku.pk], until=date(2026, 2, 1))
        for n in range(7):
            book.for_rented(sku.slug, f"p{n}", date(2026, 2, 1))
        book.for_sku(sku.slug, date(2026, 2, 1))
    assert len(queries) == 1


@pytest.mark.django_db
def test_random_quotes_the_prefilter_never_changes_the_answer(sku, h200):
    """SQL only prefilters (SKU, kind, quoted on or before the day): on random fleets the book's answer
    for every cluster provider and for the SKU alone is the rule asked of every row unfiltered."""
    rng = random.Random(20260701)
    start = date(2026, 1, 1)
    providers = ["lambda", "coreweave", "vast", "nebius"]
    for _ in range(160):
        quoted_on = start + timedelta(days=rng.randrange(60))
        valid_until = quoted_on + timedelta(days=rng.randrange(30)) if rng.random() < 0.4 else None
        provider = rng.choice([*providers, None])
        add(
            rng.choice([sku, h200]),
            provider,
            rng.choice(["1.20", "1.50", "2.00", "2.49", "3.10"]),
            quoted_on,
            valid_until,
            rng.choice(PRICING_KINDS),
            list_price=provider is not None and rng.random() < 0.3,
        )
    everything = every_row()
    for offset in range(0, 95, 3):
        on = start + timedelta(days=offset)
        for s in (sku, h200):
            for kind in PRICING_KINDS:
                book = PriceBook.load([s.pk], until=on, kind=kind)
                for provider in (*providers, None):
                    expected = price_in_force(everything, on, sku=s.slug, provider=provider, kind=kind)
                    got = (
                        book.for_sku(s.slug, on, kind)
                        if provider is None
                        else book.for_rented(s.slug, provider, on, kind)
                    )
                    assert got == expected, (s.slug, on, kind, provider)
