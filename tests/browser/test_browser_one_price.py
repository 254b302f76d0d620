"""Issue 24, acceptance, price in Chromium: a 2 x 8 H200 cluster at CoreWeave is priced at CoreWeave's public list
price (6.305 USD/GPU-hour, from the catalogue) on the deployment page, the cluster page, the fleet page, rent vs API
and spend; finance adds CoreWeave's own quote of 3.40 through the quotes page's form and, once the workers'
recomputation has run, every one of those pages says 3.40. The seeds' 2.50 (an assumption no provider issued) is
the rate on none of them."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider, Workload
from planner.snapshots import refresh_snapshots

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LIST_PRICE, OWN_QUOTE, SEEDS_RATE = Decimal("6.305"), Decimal("3.40"), Decimal("2.50")
GPUS = 16


@pytest.fixture
def coreweave(make_user):
    call_command("load_catalog", stdout=StringIO())
    h200 = HardwareSku.objects.get(slug="h200-141gb")
    coreweave = Provider.objects.named("CoreWeave")
    # The catalogue as it is: CoreWeave's list price and the seeds' assumption for H200, nothing CoreWeave quoted us.
    assert GpuQuote.objects.filter(sku=h200, provider=coreweave, list_price=True, usd_per_gpu_hour=LIST_PRICE).exists()
    assert GpuQuote.objects.filter(sku=h200, provider=None, usd_per_gpu_hour=SEEDS_RATE).exists()
    assert not GpuQuote.objects.filter(sku=h200, provider=coreweave, list_price=False).exists()
    month_start = timezone.now().date().replace(day=1)
    cluster = Cluster(slug="cw-h200", name="CoreWeave H200", sku=h200, nodes=2, provider=coreweave, team="ml")
    cluster.save(effective_from=month_start)  # on all month: spend's month has one rate
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    workload = Workload.objects.create(
        slug="chat", name="Chat", team="web", requests_per_day=100_000, mean_prompt_tokens=1_000,
        mean_output_tokens=500, p95_context_tokens=4_000, prefix_cache_hit_rate=0.5, peak_concurrency=64,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    Deployment.objects.create(
        slug="llama-cw", cluster=cluster, model=model, tp=8, replicas=2, kv_cache_dtype="fp8", workload=workload
    )
    ApiPrice.objects.create(
        slug="llama-api", provider="api-co", model_name="llama-3.1-70b", model=model,
        input_cache_hit_usd_per_mtok="0.1", input_cache_miss_usd_per_mtok="0.5", output_usd_per_mtok="2",
        quoted_on=month_start - timedelta(days=30),
    )  # fmt: skip
    refresh_snapshots()
    make_user("finance", "finance")
    return cluster


#: Each page and its rate element (the figure shown, with the rate in ``data-usd-per-gpu-hour``).
PAGES = {
    "deployment page": ("/deployments/llama-cw/", "#deployment-cost"),
    "cluster page": ("/clusters/cw-h200/", "#cluster-price .cluster-price"),
    "fleet page": ("/", ".cluster-price[data-cluster=cw-h200]"),
    "rent vs API": ("/rent-vs-api/?deployment=llama-cw&api_price=llama-api&workload=chat", "#gpu-price"),
    "spend": ("/spend/", "#spend-clusters tr[data-cluster=cw-h200] td[data-usd-per-gpu-hour]"),
}


def rates_shown(page, base: str) -> dict[str, tuple[Decimal, str]]:
    """Every page's rate (its data attribute) and the text of its rate element; no page gives the seeds' 2.50
    as a GPU-hour rate."""
    out = {}
    for name, (path, selector) in PAGES.items():
        page.goto(f"{base}{path}")
        element = page.locator(selector)
        assert element.count() == 1, name
        rate = Decimal(element.get_attribute("data-usd-per-gpu-hour"))
        text = element.inner_text()
        body = page.inner_text("body")
        assert rate != SEEDS_RATE and "2.50 USD/GPU-hour" not in body and "2.50 USD/GPU-h" not in body, name
        out[name] = (rate, text)
    return out


def test_one_rate_on_every_page_and_an_own_quote_switches_them_all(open_page, live_server, coreweave):
    page = open_page("finance")
    before = rates_shown(page, live_server.url)
    for name, (rate, text) in before.items():
        assert rate == LIST_PRICE and "6.305" in text, (name, text)
    # The cost an hour where a page gives it: 16 GPUs at the rate.
    page.goto(f"{live_server.url}/deployments/llama-cw/")
    assert Decimal(page.get_attribute("#deployment-cost", "data-usd-per-hour")) == LIST_PRICE * GPUS

    # Finance adds CoreWeave's own quote (dated the first of the month, so this month's spend is at it throughout).
    month_start = timezone.now().date().replace(day=1)
    page.goto(f"{live_server.url}/quotes/")
    page.click("text=Add a quote")
    page.select_option("#id_sku", label=coreweave.sku.name)
    page.select_option("#id_provider", "CoreWeave")  # picked from the list by name
    page.fill("#id_usd_per_gpu_hour", "3.40")
    page.fill("#id_quoted_on", month_start.isoformat())
    page.fill("#id_source", f"CoreWeave's offer by email, {month_start.isoformat()}")
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{live_server.url}/quotes/?sku=h200-141gb")
    assert "Quote saved" in page.inner_text("main")
    assert GpuQuote.objects.get(provider__name="CoreWeave", list_price=False).usd_per_gpu_hour == OWN_QUOTE

    refresh_snapshots()  # what the worker does on the quote's change (planner.answers)
    after = rates_shown(page, live_server.url)
    for name, (rate, text) in after.items():
        assert rate == OWN_QUOTE and "3.40" in text and "6.305" not in text, (name, text)
    page.goto(f"{live_server.url}/deployments/llama-cw/")
    assert Decimal(page.get_attribute("#deployment-cost", "data-usd-per-hour")) == OWN_QUOTE * GPUS
    page.goto(f"{live_server.url}/clusters/cw-h200/")
    assert Decimal(page.get_attribute("#cluster-price .cluster-price", "data-usd-per-hour")) == OWN_QUOTE * GPUS
