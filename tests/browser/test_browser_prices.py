"""Issue 15, "Prices people would quote", as users meet it in Chromium: finance adds a quote and
sees it in force; a viewer is offered no edit; the history shows who changed what."""

from __future__ import annotations

from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import GpuQuote, Provider, Workload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="chat", name="Chat", team="dev", requests_per_day=100_000, mean_prompt_tokens=2_000,
        mean_output_tokens=300, p95_context_tokens=8_000, prefix_cache_hit_rate=0.5, peak_concurrency=64,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    Provider.objects.ensure("acme", Provider.Kind.NEO_CLOUD)  # a provider finance picks from the list
    for role in ("viewer", "finance", "platform"):
        make_user(role, role)


def test_finance_adds_a_quote_and_sees_it_in_force(open_page, live_server, world):
    page = open_page("finance")
    page.click("nav[aria-label=Main] >> text=Prices")
    page.wait_for_url(f"{live_server.url}/quotes/")
    h100 = page.locator("#prices-in-force tr[data-sku=h100-sxm-80gb]")
    # No provider quoted the fleet: the cheapest public list price is in force, never the seeds' 2.50.
    assert "2.69" in h100.inner_text() and "RunPod Community Cloud (list price)" in h100.inner_text()
    assert "2.50" not in h100.inner_text()
    page.click("text=Add a quote")
    page.select_option("#id_sku", label="NVIDIA H100 SXM 80GB")
    page.select_option("#id_provider", "acme")
    page.fill("#id_usd_per_gpu_hour", "2.10")
    today = date.today().isoformat()  # in force from today (the pages price "as of today")
    page.fill("#id_quoted_on", today)
    page.fill("#id_source", f"Offer from acme by email, {today}")
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{live_server.url}/quotes/?sku=h100-sxm-80gb")
    assert "Quote saved" in page.inner_text("main")
    quote = GpuQuote.objects.get(provider__name="acme")
    row = page.locator(f"#quotes tr[data-quote='{quote.pk}']")
    assert row.get_attribute("data-status") == "price" and "price in force" in row.inner_text()
    summary = page.locator("#prices-in-force tr[data-sku=h100-sxm-80gb]").inner_text()
    assert "2.10" in summary and f"acme, {today}" in summary
    seed = GpuQuote.objects.get(sku__slug="h100-sxm-80gb", provider=None)
    seed_row = page.locator(f"#quotes tr[data-quote='{seed.pk}']")
    assert seed_row.get_attribute("data-status") == "assumption" and "never in force" in seed_row.inner_text()
    # A bad price is an error beside its input, not a 500.
    page.click("text=Add a quote")
    page.select_option("#id_provider", "acme")
    page.fill("#id_usd_per_gpu_hour", "-3")
    page.fill("#id_quoted_on", today)
    page.click("button:has-text('Save')")
    assert "Must be greater than zero." in page.inner_text(".field.has-error")


def test_a_viewer_sees_prices_and_hardware_but_no_edit_buttons(open_page, live_server, world):
    page = open_page("viewer")
    for path, table in (("/quotes/", "#quotes"), ("/api-prices/", "#api-prices"), ("/skus/", "#skus"),
                        ("/workloads/", "#workloads")):  # fmt: skip
        page.goto(f"{live_server.url}{path}")
        assert page.locator(f"{table} tbody tr").count() >= 1
        main = page.locator("main")
        for action in ("Add a", "New price", "Edit", "Delete", "End / note", "Annotate"):
            assert main.get_by_text(action, exact=False).count() == 0, (path, action)
        assert main.get_by_role("link", name="History").count() >= 1
    # The form itself is refused inside the layout, not offered.
    response = page.goto(f"{live_server.url}/quotes/new/")
    assert response.status == 403


def test_history_shows_the_change(open_page, live_server, world):
    page = open_page("platform")
    page.click("nav[aria-label=Main] >> text=Hardware")
    page.click("text=Workloads")
    page.locator("#workloads tr[data-workload=chat]").get_by_role("link", name="Edit").click()
    page.fill("#id_ttft_slo_ms", "1500")
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{live_server.url}/workloads/")
    page.locator("#workloads tr[data-workload=chat]").get_by_role("link", name="History").click()
    entry = page.locator("table.history tbody tr").first
    text = entry.inner_text()
    assert "platform" in text and "update" in text and "TTFT SLO (ms)" in text and "2000" in text and "1500" in text
    # And a quote's history names who added it (finance, in its own session).
    finance = open_page("finance")
    finance.goto(f"{live_server.url}/quotes/?sku=b200-192gb")
    finance.locator("#quotes tr[data-status=list-price]").first.get_by_role("link", name="New price").click()
    finance.fill("#id_usd_per_gpu_hour", "6.49")
    finance.fill("#id_source", "https://lambda.ai/pricing (re-checked)")
    finance.click("button:has-text('Save')")
    finance.wait_for_url(f"{live_server.url}/quotes/?sku=b200-192gb")
    newest = GpuQuote.objects.get(usd_per_gpu_hour="6.49")
    finance.locator(f"#quotes tr[data-quote='{newest.pk}']").get_by_role("link", name="History").click()
    text = finance.locator("table.history tbody tr").first.inner_text()
    assert "finance" in text and "create" in text and "6.49" in text


def test_the_new_pages_report_no_content_security_policy_violation(open_page, live_server, world):
    page = open_page("platform")
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    pages = [
        "/quotes/",
        "/quotes/?sku=h100-sxm-80gb&list_price=false",
        "/api-prices/",
        "/skus/",
        "/skus/new/",
        "/skus/h100-sxm-80gb/delete/",
        "/workloads/",
        "/workloads/chat/edit/",
        "/history/sku/h100-sxm-80gb/",
    ]
    for path in pages:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
    assert violations == []
    page.goto(f"{live_server.url}/quotes/?list_price=false")
    assert page.locator("#quotes tr[data-status=list-price]").count() == 0
    # The fleet's own rows: the seeds' assumption, one per SKU, never in force.
    assert page.locator("#quotes tr[data-status=assumption]").count() == 12
    assert page.locator("#quotes tr[data-status=price]").count() == 0
