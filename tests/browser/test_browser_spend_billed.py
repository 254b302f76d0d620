"""Billed against modelled and the budget on the spend page, in Chromium (issue 26, "Browser tests: ... the
spend page shows billed vs modelled and the budget").

Finance uploads a generated FOCUS bill on /bills/, adds a budget for the team on /budgets/new/, and reads
June 2026 on the spend page; a viewer reads the same figures with no upload or budget controls. Every page
either of them opens reports no Content-Security-Policy violation in the console.

The import: the upload queues ``fleet.import_bill`` through the outbox for a worker; no worker runs here.
The test runs the worker's part in this process, ``fleet.bills.run_import(bill id)``, as the service tests
do (tests/test_spend_bills_api.py), while the bill's page is open: its htmx refresh (every second) then
shows the import done, as it would for a real worker.

The clock (``django.utils.timezone.now``, which the live server's thread reads too) starts at 16 June 2026,
12:00 UTC and moves on with real time, so that June is the month in progress with fixed figures:

* Fleet: clusters ``alpha`` and ``beta``, team ``ml``, each 1 node of 8 H100s from 1 June 2026 at the
  provider's 2.50 USD/GPU-hour: 8 x 24 h x 2.50 = 480.00 USD a day each.
* Modelled spend through today (16 days, 1-16 June): 16 x 480 = 7,680.00 USD per cluster; projected for the
  14 days to come 6,720.00; the month 14,400.00 per cluster.
* The bill (June 2026), 4 rows: ``alpha``'s usage 8,064.00 (matched by the ResourceId's last segment),
  ``beta``'s usage 9,500.00 and a credit of -284.00 (matched by the tag ``fleetcap-cluster=beta``), and
  100.00 of a resource no cluster has (unmatched).
* alpha: billed 8,064.00 against 7,680.00 modelled: variance +384.00 USD = 384 / 7,680 = +5.0 %, within the
  default 10 % threshold (not flagged).
* beta: billed 9,500.00 - 284.00 = 9,216.00 against 7,680.00: variance +1,536.00 USD = +20.0 %, flagged.
* Unmatched: 100.00 USD in 1 row.
* Budget for team ml, 25,000.00 USD a month: spent 2 x 7,680.00 = 15,360.00; projected (spent + the rest of
  the month) 2 x 14,400.00 = 28,800.00, over the budget; projected / budget = 115 %.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from decimal import Decimal
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command
from django.utils import timezone
from focus_bills import focus_csv, row

from fleet.bills import import_path, run_import
from fleet.models import CloudBill, Cluster, GpuQuote, HardwareSku, Provider
from planner.models import Budget

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JUNE = (2026, 6)
TODAY = datetime(2026, 6, 16, 12, tzinfo=UTC)
BETA_TAG = {"fleetcap-cluster": "beta"}


@pytest.fixture
def june_16():
    """The clock at 16 June 2026, 12:00 UTC, moving on with real time (leases, ``finished_at`` still move)."""
    real_now = timezone.now
    start = real_now()
    with mock.patch("django.utils.timezone.now", side_effect=lambda: TODAY + (real_now() - start)):
        yield


@pytest.fixture
def fleet(make_user, settings, tmp_path, june_16):
    settings.BILL_DIR = tmp_path / "bills"
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()  # the one quote below only
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    acme = Provider.objects.ensure("acme")
    GpuQuote.objects.create(sku=h100, provider=acme, usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 5, 1))
    for slug in ("alpha", "beta"):
        Cluster(slug=slug, name=slug.title(), sku=h100, nodes=1, provider=acme, team="ml").save(
            effective_from=date(2026, 6, 1)
        )
    make_user("finance", "finance")
    make_user("viewer", "viewer")


def june_bill() -> bytes:
    return focus_csv(
        [
            row(JUNE, "2026-06-01", "2026-06-17", "8064.00", ResourceId="arn:aws:ec2:eu-west-1:123:instance/alpha"),
            row(JUNE, "2026-06-01", "2026-06-17", "9500.00", ResourceId="i-0beta", Tags=BETA_TAG),
            row(JUNE, "2026-06-01", "2026-06-17", "-284.00", ChargeCategory="Credit", Tags=BETA_TAG),
            row(JUNE, "2026-06-03", "2026-06-04", "100.00", ResourceId="i-0ffbeat"),
        ]
    )


def watch_csp(page) -> list[str]:
    """The page's Content-Security-Policy reports in the console, and its script errors (as test_browser_csp)."""
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    return violations


def cells(page, selector: str) -> list[str]:
    return [c.strip() for c in page.locator(f"{selector} td").all_inner_texts()]


def test_finance_uploads_a_bill_adds_a_budget_and_reads_billed_against_modelled(open_page, live_server, fleet):
    page = open_page("finance")
    violations = watch_csp(page)

    # The bill, uploaded through the form on /bills/; its page follows the import.
    page.goto(f"{live_server.url}/bills/")
    page.set_input_files("#id_file", files=[{"name": "june.csv", "mimeType": "text/csv", "buffer": june_bill()}])
    page.click("#bill-upload button[type=submit]")
    page.wait_for_url(re.compile(r"/bills/[0-9a-f-]{36}/$"))
    assert "june.csv stored; a worker is importing it." in page.inner_text("body")
    assert "Queued: 0 %" in page.inner_text("#bill-progress")
    bill = CloudBill.objects.get()
    assert bill.uploaded_by.username == "finance"
    assert run_import(str(bill.pk)).status == "done"  # the worker's part (see the module's docstring)
    done = page.locator("#bill-done")
    done.wait_for()  # the page's htmx refresh brings it
    text = done.inner_text()
    assert "4 rows, 4 new and 0 already stored" in text and "3 matched to clusters, 1 unmatched" in text
    assert "Charge months 2026-06" in text

    # The budget, through its page.
    page.goto(f"{live_server.url}/budgets/new/")
    page.fill("#id_team", "ml")
    page.fill("#id_amount_usd", "25000")
    page.fill("#id_emails", "finance@example.com")
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{live_server.url}/spend/#budgets")
    assert "Budget for team ml saved: 25,000.00 USD a month." in page.inner_text("body")
    assert Budget.objects.get().team == "ml"

    # The spend page for the bill's month, from the bill's own link.
    page.goto(f"{live_server.url}/bills/{bill.pk}/")
    page.click("#bill-done a:has-text('billed against modelled')")
    page.wait_for_url(f"{live_server.url}/spend/?month=2026-06")
    assert "16 days actual (through 2026-06-16), 14 projected" in page.inner_text("#spend-status")
    read_billed_and_budget(page)
    assert page.locator("#budget-add").is_visible()
    assert page.locator("#budgets-table a:has-text('Change')").count() == 1
    assert violations == []


def read_billed_and_budget(page) -> None:
    """What finance and a viewer alike read on /spend/?month=2026-06 (the figures of the module's docstring)."""
    billed = page.locator("#spend-billed")
    assert billed.is_visible()
    intro = billed.locator("p").first.inner_text()
    assert "What 1 cloud bill (FOCUS) charged this month" in intro
    assert "against the modelled USD spent (through 2026-06-16)" in intro
    assert "variance = billed \u2212 modelled (positive: billed more than modelled)" in intro
    assert "beyond 10.0 % either way is flagged" in intro
    assert "100.00 USD in 1 row matched no cluster" in intro
    headers = [h.strip() for h in billed.locator("thead th").all_inner_texts()]
    assert headers[:5] == ["Cluster", "Billed USD", "Modelled USD", "Variance USD", "Variance"]
    alpha, beta = billed.locator("tr[data-cluster=alpha]"), billed.locator("tr[data-cluster=beta]")
    # Cluster, billed, modelled, variance USD, variance %, rows, flag.
    assert cells(page, "#spend-billed tr[data-cluster=alpha]") == ["alpha", "8,064.00", "7,680.00", "384.00", "5.0 %",
                                                                   "1", ""]  # fmt: skip
    assert cells(page, "#spend-billed tr[data-cluster=beta]") == ["beta", "9,216.00", "7,680.00", "1,536.00", "20.0 %",
                                                                  "2", "beyond 10.0 %"]  # fmt: skip
    assert alpha.get_attribute("class") is None  # within the threshold: no flag
    assert beta.get_attribute("class") == "flagged"
    assert beta.get_by_role("alert").inner_text() == "beyond 10.0 %"

    budgets = page.locator("#budgets")
    assert budgets.is_visible()
    budget = page.locator("#budgets-table tbody tr[data-budget]")
    assert budget.count() == 1 and budget.get_attribute("class") == "over"
    texts = cells(page, "#budgets-table tbody tr[data-budget]")
    assert texts[:5] == ["team ml", "25,000.00", "15,360.00", "28,800.00 (over)", "115 %"]
    assert texts[5] == "1 address" and texts[6] == "none"
    assert "Projected = spent so far + the rest of June 2026" in budgets.inner_text()


def test_a_viewer_reads_billed_and_budgets_without_upload_or_budget_controls(open_page, live_server, fleet, tmp_path):
    """The same bill imported in this process (``manage.py import_bill``'s way) and the same budget."""
    source = tmp_path / "june.csv"
    source.write_bytes(june_bill())
    assert import_path(source).status == "done"
    Budget.objects.create(team="ml", amount_usd=Decimal("25000.00"), emails=["finance@example.com"])

    page = open_page("viewer")
    violations = watch_csp(page)
    page.goto(f"{live_server.url}/spend/?month=2026-06")
    read_billed_and_budget(page)
    assert page.locator("#budget-add").count() == 0
    assert page.locator("#budgets-table a").count() == 0  # no Change or Delete
    assert page.locator("#budgets-table thead th").count() == 7  # nor their column
    page.goto(f"{live_server.url}/bills/")
    assert page.locator("#bills tr[data-bill]").count() == 1
    assert page.locator("#bill-upload").count() == 0 and page.locator("input[type=file]").count() == 0
    assert page.goto(f"{live_server.url}/budgets/new/").status == 403
    assert violations == []
