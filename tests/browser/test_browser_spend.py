"""Spend as finance meets it in Chromium (issue 15, "Spend"): what was spent and what is projected
apart, the previous month all actual, the 12-month trend chart, and a missing quote said by name
instead of hidden."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from fleet.models import Cluster, GpuQuote, HardwareSku, Provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _first_of_previous_month(today: date) -> date:
    return (today.replace(day=1) - timedelta(days=1)).replace(day=1)


@pytest.fixture
def fleet(make_user):
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()  # the quotes below only: one SKU priced, one not
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    GpuQuote.objects.create(
        sku=h100, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2020, 1, 1)
    )
    since = _first_of_previous_month(timezone.now().date())
    Cluster(slug="priced", name="Priced", sku=h100, nodes=1, provider=Provider.objects.ensure("acme"), team="ml").save(
        effective_from=since
    )
    mi = HardwareSku.objects.get(slug="mi300x-192gb")
    Cluster(
        slug="unquoted", name="Unquoted", sku=mi, nodes=1, provider=Provider.objects.ensure("acme"), team="ml"
    ).save(effective_from=since)
    make_user("finance", "finance")


def test_spend_shows_spent_and_projected_apart_and_names_a_missing_quote(open_page, live_server, fleet):
    today = timezone.now().date()
    page = open_page("finance")
    page.goto(f"{live_server.url}/spend/")
    # This month: spent and projected in two separate tiles, each saying which it is.
    spent, projected = page.locator("#spend-actual"), page.locator("#spend-projected")
    assert "USD spent" in spent.inner_text() and "USD projected" in projected.inner_text()
    # 8 GPUs x 24 h x 2.50 = 480 USD a day: the spent tile counts the days through today.
    assert spent.locator(".n").inner_text() == f"{480 * today.day:,}.00"
    assert "actual (through" in page.inner_text("#spend-status")

    page.click("#spend-previous")
    previous = _first_of_previous_month(today)
    page.wait_for_url(f"**/spend/?month={previous:%Y-%m}")
    assert "is past: every figure is actual spend" in page.inner_text("#spend-status")
    assert page.locator("#spend-projected .n").inner_text() == "0.00"
    days = (today.replace(day=1) - previous).days
    assert page.locator("#spend-actual .n").inner_text() == f"{480 * days:,}.00"

    chart = page.locator("canvas#spend-trend")
    chart.wait_for()
    page.wait_for_function("() => document.querySelector('canvas#spend-trend').dataset.drawn === '1'")
    assert chart.bounding_box()["height"] > 50

    warning = page.locator("#spend-warnings .warning-missing").first
    text = warning.inner_text()
    assert "No quote in force for cluster unquoted (acme, mi300x-192gb)" in text
    assert f"{previous:%Y-%m}-01 to " in text and "unpriced" in text
