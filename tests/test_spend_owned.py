"""Spend of an owned cluster (planner.spend over fleet.owned): its own cost, not a quote, from the records.

The node: 8 H100s (700 W at full load, 70 W idle: the catalogue's) bought 2026-01-15 for 250,000 USD, 48
months, no residual; site "fra1" at 0.12 USD/kWh from 2025-01-01, PUE 1.3, one rack at 1,500 USD a month,
support 8% a year. June 2026 (30 days), all of it past:

- depreciation 5,208.33 + energy 628.99 (8 x 700 W x 1.3 x 720 h = 5,241.6 kWh x 0.12, full load: no polls)
  + colocation 1,500.00 + support 1,666.67 = 9,003.99 USD, exactly what the engine's month gives by hand
  (tests/engine/test_costs_owned.py); a rented cluster beside it keeps its quote (8 x 720 x 2.50 = 14,400).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import (
    Cluster,
    ClusterPurchase,
    ElectricityPrice,
    ExchangeRate,
    GpuQuote,
    HardwareSku,
    OwnedCosts,
    Provider,
)
from fleet.prices import PriceBook
from planner.spend import spend_for_month


@pytest.fixture
def owned(db) -> Cluster:
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    acme = Provider.objects.ensure("acme")
    GpuQuote.objects.create(sku=h100, provider=acme, usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 1, 1))
    rented = Cluster(slug="rented", name="Rented", sku=h100, nodes=1, provider=acme, team="ml")
    rented.save(effective_from=date(2026, 1, 15))
    own = Provider.objects.ensure("Own DC", kind=Provider.Kind.OWN)
    c = Cluster(slug="owned", name="Owned", sku=h100, nodes=1, provider=own, team="ml", ownership="owned")
    c.save(effective_from=date(2026, 1, 15))
    OwnedCosts.objects.create(
        cluster=c, site="fra1", pue=Decimal("1.3"), racks=1, usd_per_rack_month=1500, support_share_per_year="0.08"
    )
    ClusterPurchase.objects.create(cluster=c, bought_on=date(2026, 1, 15), nodes=1, price=250_000)
    ElectricityPrice.objects.create(site="fra1", valid_from=date(2025, 1, 1), usd_per_kwh=Decimal("0.12"))
    return c


def test_an_owned_cluster_spends_its_own_cost(owned):
    report = spend_for_month(2026, 6, today=date(2026, 7, 2))
    costs = {c.name: c.cost_usd for c in report.spend.clusters}
    assert costs == {"owned": Decimal("9003.99"), "rented": Decimal("14400.00")}
    assert any(a.startswith("Owned clusters are priced at their own cost") for a in report.spend.assumptions)


def test_its_price_in_force_is_owned(owned):
    price = PriceBook.load().for_cluster(
        Cluster.objects.select_related("sku", "provider").get(slug="owned"), date(2026, 6, 5)
    )
    assert price.basis == "owned" and price.usd_per_gpu_hour.quantize(Decimal("0.0001")) == Decimal("1.5632")


def test_an_owned_cluster_without_what_it_needs_is_unpriced_with_the_reason(owned):
    ClusterPurchase.objects.update(currency="EUR")
    report = spend_for_month(2026, 6, today=date(2026, 7, 2))
    line = next(c for c in report.spend.clusters if c.name == "owned")
    assert line.cost_usd == 0 and line.actual.unpriced_gpu_hours == Decimal("5760.00")
    assert any("owned: unpriced, its purchase of 2026-01-15 is in EUR" in a for a in report.spend.assumptions)
    ExchangeRate.objects.create(currency="EUR", on=date(2026, 1, 10), usd_per_unit=Decimal("1.10"))
    # 275,000 USD: depreciation 5,729.17, support 1,833.33; energy and colocation as before: 9,691.49.
    report = spend_for_month(2026, 6, today=date(2026, 7, 2))
    assert next(c for c in report.spend.clusters if c.name == "owned").cost_usd == Decimal("9691.49")
