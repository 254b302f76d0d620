"""GpuQuote.objects.in_force(sku, on): the engine's rules (planner.engine.quotes) filtered in SQL,
one query, checked against the engine on the engine tests' cases and on random fleets of quotes."""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.models import GpuQuote, HardwareSku
from planner.engine import PRICING_KINDS, Quote, quotes_in_force

D = Decimal


def add(sku, provider, usd, quoted_on, valid_until=None, kind="on-demand") -> GpuQuote:
    return GpuQuote.objects.create(
        sku=sku,
        provider=provider,
        usd_per_gpu_hour=D(usd),
        pricing_kind=kind,
        quoted_on=quoted_on,
        valid_until=valid_until,
    )


def engine_answer(sku: HardwareSku, on: date) -> dict[str, Quote]:
    quotes = [Quote.from_record(q, sku=sku.slug) for q in GpuQuote.objects.filter(sku=sku)]
    return quotes_in_force(quotes, on, sku=sku.slug)


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

    def cheapest(on, kind="on-demand"):
        found = GpuQuote.objects.in_force(sku, on).cheapest(kind)
        return None if found is None else found.id

    assert cheapest(date(2026, 7, 20)) == other.pk  # lambda's latest (3.00) vs coreweave 2.60
    assert set(GpuQuote.objects.in_force(sku, date(2026, 7, 20))) == {newer, other, reserved, spot}
    assert cheapest(date(2026, 7, 5)) == promo.pk  # the promo, in force until 10 July inclusive
    assert cheapest(date(2026, 7, 14)) == other.pk and cheapest(date(2026, 6, 30)) == old.pk
    assert cheapest(date(2026, 7, 20), "reserved") == reserved.pk
    assert cheapest(date(2026, 7, 20), "spot") == spot.pk and cheapest(date(2026, 8, 1), "spot") is None
    assert cheapest(date(2026, 5, 31)) is None
    assert GpuQuote.objects.in_force(sku, date(2026, 7, 20)).cheapest().sku == sku.slug


@pytest.mark.django_db
def test_ties_break_as_the_engine_breaks_them(sku):
    add(sku, "b-cloud", "2.00", date(2026, 7, 1))
    a = add(sku, "a-cloud", "2.00", date(2026, 7, 1))
    assert GpuQuote.objects.in_force(sku, date(2026, 7, 5)).cheapest().id == a.pk  # same price, day: name
    later = add(sku, "c-cloud", "2.00", date(2026, 7, 2))
    assert GpuQuote.objects.in_force(sku, date(2026, 7, 5)).cheapest().id == later.pk  # same price: latest
    cheaper_same_day = add(sku, "c-cloud", "1.50", date(2026, 7, 2))
    twin = add(sku, "c-cloud", "1.50", date(2026, 7, 2))  # same provider, day and price: the larger id
    assert set(GpuQuote.objects.in_force(sku, date(2026, 7, 5)).filter(provider="c-cloud")) == {twin}
    assert GpuQuote.objects.in_force(sku, date(2026, 7, 5)).cheapest().id == twin.pk != cheaper_same_day.pk


@pytest.mark.django_db
def test_one_query_whatever_the_number_of_quotes(sku):
    for n in range(40):
        add(sku, f"p{n % 7}", f"{1 + n / 10:.2f}", date(2026, 1, 1) + timedelta(days=n))
    with CaptureQueriesContext(connection) as queries:
        GpuQuote.objects.in_force(sku, date(2026, 2, 1)).cheapest()
    assert len(queries) == 1


@pytest.mark.django_db
def test_random_quotes_agree_with_the_engine(sku, h200):
    rng = random.Random(20260701)
    start = date(2026, 1, 1)
    for _ in range(160):
        quoted_on = start + timedelta(days=rng.randrange(60))
        valid_until = quoted_on + timedelta(days=rng.randrange(30)) if rng.random() < 0.4 else None
        add(
            rng.choice([sku, h200]),
            rng.choice(["lambda", "coreweave", "vast", "nebius"]),
            rng.choice(["1.20", "1.50", "2.00", "2.49", "3.10"]),
            quoted_on,
            valid_until,
            rng.choice(PRICING_KINDS),
        )
    for offset in range(0, 95, 3):
        on = start + timedelta(days=offset)
        for s in (sku, h200):
            expected = engine_answer(s, on)
            for kind in PRICING_KINDS:
                got = GpuQuote.objects.in_force(s, on).cheapest(kind)
                assert got == expected.get(kind), (s.slug, on, kind)
