"""What-if opened from a deployment (issue 28): ``?deployment=SLUG`` (the deployment page's "What if…" link)
starts from how it serves (model, SKU, layout, engine, KV dtype, max_model_len as the context, workload),
the result names each input changed from it, and picking another deployment in the page loads that one's."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from fleet.models import Deployment, Workload

pytestmark = pytest.mark.django_db
X = "\u00d7"  # the pages' multiplication sign


@pytest.fixture
def served(deployment):
    """k3-prod (Kimi K3, SGLang, tp 8 x dp 4, ep 32 on 32 H100s) serving 65,536 tokens for a coding agent."""
    workload = Workload.objects.create(
        slug="coding-agent", name="Coding agent", team="platform", requests_per_day=100_000,
        mean_prompt_tokens=6000, mean_output_tokens=400, p95_context_tokens=60000, peak_concurrency=64,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    Deployment.objects.filter(pk=deployment.pk).update(max_model_len=65536, workload=workload)
    return Deployment.objects.get(pk=deployment.pk)


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


def _value(html: str, name: str) -> str:
    """The value an input or select of the page shows."""
    match = re.search(rf'<input type="\w+" name="{name}" id="id_{name}" value="([^"]*)"', html)
    if match:
        return match.group(1)
    select = re.search(rf'<select name="{name}" id="id_{name}">(.*?)</select>', html, re.S)
    assert select, f"no input {name}"
    chosen = re.search(r'<option value="([^"]*)" selected>', select.group(1))
    return chosen.group(1) if chosen else ""


def _as_sent(html: str) -> dict[str, str]:
    """What the page's form sends: every input's value (the hidden ``loaded`` too)."""
    names = re.findall(r'<(?:input|select)[^>]* name="(\w+)"', html.split('id="whatif-form"')[1].split("</form>")[0])
    hidden = re.search(r'<input type="hidden" name="loaded" value="([^"]*)"', html)
    return {n: (hidden.group(1) if hidden else "") if n == "loaded" else _value(html, n) for n in names}


def _changes(html: str) -> str:
    line = re.search(r'<p id="whatif-changes"[^>]*>(.*?)</p>', html, re.S)
    assert line, "no changes line"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", line.group(1))).strip()


def test_a_deployment_link_starts_from_how_it_serves(viewer, served):
    html = viewer.get("/what-if/?deployment=k3-prod").content.decode()
    assert "This field is required" not in html
    shown = {n: _value(html, n) for n in ("model", "sku", "gpus", "tp", "pp", "dp", "ep", "engine", "kv_cache_dtype")}
    assert shown == {"model": "kimi-k3", "sku": "h100-sxm-80gb", "gpus": "32", "tp": "8", "pp": "1", "dp": "4",
                     "ep": "32", "engine": "sglang", "kv_cache_dtype": "bf16"}  # fmt: skip
    assert _value(html, "max_model_len") == "65536" and _value(html, "context_tokens") == "65536"
    assert 'name="workload" id="id_workload" value="coding-agent"' in html
    # The headline is at the served length, not the model's 1,048,576 tokens, and agrees with the layout.
    verdict = re.search(r'<p class="verdict">(.*?)</p>', html, re.S).group(1)
    assert "at 65,536 tokens" in verdict and "1,048,576" not in verdict
    assert f"32 {X} NVIDIA H100 SXM 80GB as 1 replica(s) of tp 8 {X} pp 1 {X} dp 4 (ep 32)" in html
    assert _changes(html) == "As k3-prod serves: no input changed from it."
    # The speed estimate takes the workload's request shape.
    assert "6,000-token prompts, 400-token answers: Coding agent's means" in html


def test_a_changed_input_is_named_against_the_deployment(viewer, served):
    sent = _as_sent(viewer.get("/what-if/?deployment=k3-prod").content.decode())
    assert sent["loaded"] == "k3-prod"
    html = viewer.get(
        "/what-if/?" + urlencode({**sent, "kv_cache_dtype": "fp8"}), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert _changes(html) == "Changed from k3-prod: KV dtype bf16 → fp8."
    assert 'data-changed="kv_cache_dtype"' in html and 'data-changed-form="whatif-form"' in html
    assert 'hx-swap-oob="true"' in html and "<form" not in html  # only the errors beside the inputs, not the form
    more = {**sent, "tp": "4", "ep": "16", "kv_cache_dtype": "fp8", "max_model_len": "32768", "context_tokens": "32768"}
    both = viewer.get("/what-if/?" + urlencode(more), HTTP_HX_REQUEST="true").content.decode()
    assert f"as 2 replica(s) of tp 4 {X} pp 1 {X} dp 4 (ep 16)" in both  # the same 32 GPUs: two replicas now
    assert _changes(both) == (
        "Changed from k3-prod: tp 8 → 4, ep 32 → 16, KV dtype bf16 → fp8, Context (tokens) 65,536 → 32,768, "
        "Max model length (tokens) 65,536 → 32,768."
    )


def test_fields_cleared_by_hand_take_the_deployments(viewer, served):
    html = viewer.get("/what-if/?deployment=k3-prod&loaded=k3-prod&pool=unified").content.decode()
    assert "This field is required" not in html
    verdict = re.search(r'<p class="verdict">(.*?)</p>', html, re.S).group(1)
    assert "at 65,536 tokens" in verdict
    assert f"tp 8 {X} pp 1 {X} dp 4 (ep 32)" in html and "no input changed" in _changes(html)


def test_picking_another_deployment_loads_its_inputs(viewer, served):
    Deployment.objects.create(
        slug="k3-small", cluster=served.cluster, model=served.model, tp=8, dp=2, ep=16, engine="vllm",
        max_model_len=32768,
    )  # fmt: skip
    sent = _as_sent(viewer.get("/what-if/?deployment=k3-prod").content.decode())
    r = viewer.get("/what-if/?" + urlencode({**sent, "deployment": "k3-small"}), HTTP_HX_REQUEST="true")
    html = r.content.decode()
    form = html[html.index('<form id="whatif-form"') :]
    assert 'hx-swap-oob="true"' in form.split(">")[0]  # the form is drawn again with the deployment's inputs
    assert _value(form, "dp") == "2" and _value(form, "engine") == "vllm" and _value(form, "context_tokens") == "32768"
    assert _as_sent(html)["loaded"] == "k3-small" and _value(form, "workload") == ""
    assert _changes(html) == "As k3-small serves: no input changed from it."
    pushed = parse_qs(urlsplit(r.headers["HX-Push-Url"]).query)
    assert pushed["deployment"] == ["k3-small"] and pushed["dp"] == ["2"]  # the URL to share is the loaded one
    # Clearing the picker keeps the inputs and drops the comparison.
    cleared = viewer.get("/what-if/?" + urlencode({**_as_sent(html), "deployment": ""}), HTTP_HX_REQUEST="true")
    assert 'id="whatif-changes"' not in cleared.content.decode() and _as_sent(cleared.content.decode())["loaded"] == ""


def test_an_unknown_deployment_is_named_beside_its_input(viewer, served):
    r = viewer.get("/what-if/?deployment=nope")
    assert r.status_code == 200 and "No deployment" in r.content.decode()
    # Typed in the page's picker (a search left by a click on a suggestion): it loads nothing, the form stays.
    sent = _as_sent(viewer.get("/what-if/?deployment=k3-prod").content.decode())
    html = viewer.get("/what-if/?" + urlencode({**sent, "deployment": "k3"}), HTTP_HX_REQUEST="true").content.decode()
    assert "<form" not in html and "No deployment named" in html.split('id="err-deployment"')[1].split("</span>")[0]


def test_the_deployment_page_links_to_what_if(viewer, served):
    html = viewer.get("/deployments/k3-prod/").content.decode()
    assert re.search(
        r'<a class="button" id="deployment-whatif" href="/what-if/\?deployment=k3-prod"[^>]*>What if…</a>', html
    )


def test_the_sizing_api_quotes_a_deployment_at_its_served_length(viewer_api, served):
    """The same rule behind the API: sized by deployment alone, the context is its max_model_len."""
    answer = viewer_api.post("/api/v1/sizing/", {"deployment": "k3-prod"}, format="json").json()
    assert answer["inputs"]["context_tokens"] == 65536 and answer["max_model_len"] == 65536
