"""The what-if page's deployment picker in Chromium (issue 30): typing shows the server's suggestions
under the input, choosing one puts its slug in and the sizing follows it; nothing breaks the content
security policy."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    """40 Llama 3.1 70B deployments (tp 4, tp 8 on every fifth), one per cluster: more than one answer suggests."""
    call_command("load_catalog", stdout=StringIO())
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    clusters = Cluster.objects.bulk_create(
        Cluster(slug=f"pool-{i:02d}", name=f"Pool {i:02d}", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"),
                team="platform")
        for i in range(40)
    )  # fmt: skip
    Deployment.objects.bulk_create(
        Deployment(slug=f"llama-{c.slug}", cluster=c, model=llama, tp=8 if i % 5 == 0 else 4)
        for i, c in enumerate(clusters)
    )
    make_user("viewer", "viewer")


WHAT_IF = "/what-if/?model=llama-3.1-70b&sku=h100-sxm-80gb&gpus=8&tp=8"
SUGGESTED = "#id_deployment-options button[data-pick]"


def _suggested(page) -> list[str]:
    return page.locator(SUGGESTED).evaluate_all("buttons => buttons.map(b => b.dataset.pick)")


def test_typing_in_the_deployment_picker_suggests_and_choosing_fills_it(open_page, live_server, world):
    page = open_page("viewer")
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    page.goto(live_server.url + WHAT_IF)
    picker = page.locator("#id_deployment")
    assert page.locator("#id_deployment-options").is_hidden()  # nothing listed until asked
    # Focus asks for the first suggestions; typing narrows them (the server searches, 20 at most).
    picker.click()
    page.wait_for_function(f"() => document.querySelectorAll('{SUGGESTED}').length === 20")
    assert "type more to narrow them" in page.inner_text("#id_deployment-options [role=status]")
    sized: list[str] = []
    page.on("request", lambda r: sized.append(r.url) if "/what-if/" in r.url else None)
    with page.expect_response(lambda r: "/pick/deployments/" in r.url and "pool-2" in r.url):
        picker.press_sequentially("pool-2")
    page.wait_for_function(f"() => document.querySelectorAll('{SUGGESTED}').length === 10")
    assert _suggested(page) == [f"llama-pool-2{i}" for i in range(10)]
    page.wait_for_timeout(600)  # past the live form's 400 ms: typing a search is not a what-if of "pool-2"
    assert sized == [] and page.locator("#err-deployment").inner_text() == ""
    assert page.locator("#id_deployment-options").is_visible()
    choice = page.locator(f"{SUGGESTED}[data-pick='llama-pool-25']")
    assert choice.inner_text() == "llama-pool-25 Llama-3.1-70B-Instruct on Pool 25"
    # Choosing one fills the field, closes the list, and the sizing follows it (the live form's change).
    with page.expect_response(lambda r: "/what-if/" in r.url and "deployment=llama-pool-25" in r.url):
        choice.click()
    assert picker.input_value() == "llama-pool-25"
    assert page.locator("#id_deployment-options").is_hidden() and _suggested(page) == []
    page.wait_for_url(lambda url: "deployment=llama-pool-25" in url)
    page.wait_for_selector("#whatif-capacity")
    assert page.locator("#err-deployment").inner_text() == "" and "Check the inputs" not in page.inner_text(
        "#whatif-result"
    )
    assert violations == []


def test_the_suggestions_work_from_the_keyboard(open_page, live_server, world):
    page = open_page("viewer")
    page.goto(live_server.url + WHAT_IF)
    picker = page.locator("#id_deployment")
    picker.focus()
    with page.expect_response(lambda r: "/pick/deployments/" in r.url and "pool-3" in r.url):
        picker.press_sequentially("pool-3")
    page.wait_for_function(f"() => document.querySelectorAll('{SUGGESTED}').length === 10")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.pick") == "llama-pool-31"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.id") == "id_deployment"  # back in the input
    page.keyboard.press("Escape")
    assert page.locator("#id_deployment-options").is_hidden()
    with page.expect_response(lambda r: "/pick/deployments/" in r.url and "pool-35" in r.url):
        page.keyboard.type("5")
    page.wait_for_function(f"() => document.querySelectorAll('{SUGGESTED}').length === 1")
    page.keyboard.press("ArrowDown")
    with page.expect_response(lambda r: "/what-if/" in r.url and "deployment=llama-pool-35" in r.url):
        page.keyboard.press("Enter")
    assert picker.input_value() == "llama-pool-35"
    assert page.evaluate("document.activeElement.id") == "id_deployment"


def test_an_unknown_slug_is_said_beside_the_picker(open_page, live_server, world):
    page = open_page("viewer")
    page.goto(live_server.url + WHAT_IF)
    page.fill("#id_deployment", "no-such-thing")
    page.locator("#id_deployment").blur()
    page.wait_for_selector("#err-deployment:has-text(\"No deployment named 'no-such-thing'.\")")
    assert "Check the inputs" in page.inner_text("#whatif-result")
