"""A priced cluster for tests: the seeds' 2.50 USD per GPU-hour is an assumption, in force nowhere
(issue 24), so tests that check the seeds' worked figures price their clusters at a provider's own
quote of that rate."""

from __future__ import annotations


def acme_quoting_the_seeds_rate(sku, on=None):
    """The provider ``acme`` with its own on-demand quote for ``sku`` at the seeds' 2.50 USD per GPU-hour
    (dated as the seeds' assumption, 2026-07-17, unless ``on``): the seeds' figures on a real quote, since
    the seeds' assumption itself is never in force."""
    from datetime import date
    from decimal import Decimal

    from fleet.models import GpuQuote, Provider

    acme = Provider.objects.ensure("acme")
    GpuQuote.objects.get_or_create(
        sku=sku,
        provider=acme,
        pricing_kind="on-demand",
        quoted_on=on or date(2026, 7, 17),
        defaults={"usd_per_gpu_hour": Decimal("2.50"), "source": "tests: the seeds' rate as acme's quote"},
    )
    return acme
