"""What-if opened from a deployment in Chromium (issue 28), on a desktop and on a 375 px phone: the
deployment page's "What if…" link starts from its served length and layout; changing tp recomputes the
result in place, names the change and marks the input; picking another deployment loads its inputs;
nothing breaks the content security policy."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(make_user):
    """Llama 3.1 70B on an H100 pool: llama-prod (vLLM, tp 8, 32,768 tokens) and llama-small (tp 2, 2 replicas)."""
    call_command("load_catalog", stdout=StringIO())
    cluster = Cluster.objects.create(
        slug="pool", name="Pool", sku=HardwareSku.objects.get(slug="h100-sxm-80gb"), nodes=2,
        provider=Provider.objects.ensure("acme"), team="platform",
    )  # fmt: skip
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    Deployment.objects.create(slug="llama-prod", cluster=cluster, model=llama, tp=8, engine="vllm", max_model_len=32768)
    Deployment.objects.create(
        slug="llama-small", cluster=cluster, model=llama, tp=2, replicas=2, engine="vllm", max_model_len=16384
    )
    make_user("viewer", "viewer")


def _sized(response) -> bool:
    return "/what-if/" in response.url and response.request.headers.get("hx-request") == "true"


@pytest.mark.parametrize("width", [1280, 375], ids=["desktop", "phone"])
def test_what_if_from_a_deployment_recomputes_and_marks_the_change(open_page, live_server, world, width):
    page = open_page("viewer")
    page.set_viewport_size({"width": width, "height": 900})
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    page.goto(f"{live_server.url}/deployments/llama-prod/")
    page.click("#deployment-whatif")
    page.wait_for_url(lambda url: "/what-if/?deployment=llama-prod" in url)
    # It starts from how llama-prod serves: its max_model_len as the context, its layout and engine.
    assert page.input_value("input[name=max_model_len]") == "32768"
    assert page.input_value("input[name=context_tokens]") == "32768"
    assert (page.input_value("input[name=gpus]"), page.input_value("input[name=tp]")) == ("8", "8")
    assert page.input_value("select[name=engine]") == "vllm"
    assert "at 32,768 tokens" in page.inner_text(".verdict")
    assert "1 replica(s) of tp 8" in page.inner_text("#whatif-result")
    assert "no input changed" in page.inner_text("#whatif-changes")
    assert page.locator("label.changed").count() == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # tp 8 -> 4: the result recomputes in place (two replicas on the same 8 GPUs), names and marks the change.
    with page.expect_response(_sized):
        page.fill("input[name=tp]", "4")
    page.wait_for_function("() => document.querySelector('#whatif-changes').textContent.includes('tp 8 → 4')")
    assert "2 replica(s) of tp 4" in page.inner_text("#whatif-result")
    assert "Changed from llama-prod" in page.inner_text("#whatif-changes")
    page.wait_for_selector("label.changed input[name=tp]")
    assert page.locator("label.changed").count() == 1
    assert "tp=4" in page.url and "deployment=llama-prod" in page.url  # the what-if can be shared
    # Picking another deployment loads its inputs (the form is drawn again) and clears the mark.
    picker = page.locator("#id_deployment")
    picker.fill("")
    with page.expect_response(lambda r: "/pick/deployments/" in r.url and "small" in r.url):
        picker.press_sequentially("small")
    with page.expect_response(_sized):
        page.click("#id_deployment-options button[data-pick='llama-small']")
    page.wait_for_function("() => document.querySelector('input[name=tp]').value === '2'")
    assert page.input_value("input[name=gpus]") == "4" and page.input_value("input[name=context_tokens]") == "16384"
    assert "As llama-small serves" in page.inner_text("#whatif-changes")
    assert page.locator("label.changed").count() == 0
    page.wait_for_url(lambda url: "deployment=llama-small" in url and "tp=2" in url)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert violations == []
