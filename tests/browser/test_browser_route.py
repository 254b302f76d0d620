"""The route page in Chromium: a platform engineer types a request class and sees the ranking with its
reasons; a change re-ranks in place (HTMX), an impossible class says so beside its input, and nothing
breaks the content security policy."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    call_command("load_catalog", stdout=StringIO())
    now = timezone.now()
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    GpuQuote.objects.create(
        sku=sku, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=now.date()
    )
    cluster = Cluster.objects.create(
        slug="pool", name="Pool", sku=sku, nodes=2, provider=Provider.objects.ensure("acme"), team="platform"
    )
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    for slug, age in (("llama-live", 5), ("llama-lost", 3600)):
        Deployment.objects.create(
            slug=slug, cluster=cluster, model=llama, tp=4, replicas=2, engine="vllm", max_model_len=32768,
            base_url="http://127.0.0.1:8000", last_status="up", last_polled=now - timedelta(seconds=age),
            last_metrics={"requests_running": 4.0, "kv_cache_usage": 0.2},
        )  # fmt: skip
    ApiPrice.objects.filter(model=llama).delete()  # the catalogue's own Llama prices: this test's one is the API
    ApiPrice.objects.create(
        slug="llama-hosted", provider="Hosted", model_name="llama-3.1-70b-instruct", model=llama,
        input_cache_hit_usd_per_mtok=Decimal("0.10"), input_cache_miss_usd_per_mtok=Decimal("0.90"),
        output_usd_per_mtok=Decimal("0.90"), context_window=131072, quoted_on=now.date(),
    )  # fmt: skip
    make_user("platform", "platform")


def test_a_platform_engineer_ranks_a_request_class(open_page, live_server, world):
    page = open_page("platform")
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    page.click("nav >> text=Route")
    page.wait_for_selector("#route-table")
    page.select_option("select[name=model]", "llama-3.1-70b")
    page.wait_for_selector("#route-table tr[data-slug='llama-live']")
    rows = page.locator("#route-table tbody tr")
    assert rows.first.get_attribute("data-slug") == "llama-live"
    assert "Send it to deployment llama-live" in page.inner_text("#route-best")
    lost = page.inner_text("#route-table tr[data-slug='llama-lost']")
    assert "Stale: last poll" in lost and "no" in lost
    assert "Warm prefix" in page.inner_text("#route-table tr[data-slug='llama-live']")
    # A 1 ms TPOT contract no deployment meets: the hosted API (latency unknown) moves first.
    with page.expect_response(lambda r: "/route/" in r.url and r.request.headers.get("hx-request") == "true"):
        page.fill("input[name=tpot_slo_ms]", "1")
    page.wait_for_function("() => document.querySelector('#route-table tbody tr').dataset.slug === 'llama-hosted'")
    assert "misses the latency SLO" in page.inner_text("#route-table tr[data-slug='llama-live']")
    assert "tpot_slo_ms=1" in page.url  # the ranking's URL can be shared
    # An impossible class: the message sits beside the context input.
    with page.expect_response(lambda r: "/route/" in r.url and r.request.headers.get("hx-request") == "true"):
        page.fill("input[name=prompt_tokens]", "9000")
    page.wait_for_selector("#err-context_tokens:has-text('prompt + output')")
    assert "Check the inputs" in page.inner_text("#route-result")
    assert violations == []
