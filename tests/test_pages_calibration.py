"""A deployment's page: calibrate from a startup log (paste or upload, with and without HTMX), the
latest calibration's table with its ratios, earlier ones, and who sees what."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from fleet.catalog.reference import model_record, sku_record
from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider
from planner.models import Calibration

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "startup_logs"
QWEN3_NEXT = (FIXTURES / "vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log").read_text(encoding="utf-8")
UNSUPPORTED = (FIXTURES / "vllm-0.13.0-LLaVA-Video-7B-Qwen2-tp1.log").read_text(encoding="utf-8")
PAGE, CALIBRATE = "/deployments/next/", "/deployments/next/calibrate/"


@pytest.fixture
def next_deployment(db) -> Deployment:
    record = model_record("qwen3-next-80b-a3b")
    model = ModelSpec.objects.create(**{**record, "expert_weight_format": record.get("expert_weight_format") or ""})
    sku = HardwareSku.objects.create(**sku_record("h200-141gb"))
    cluster = Cluster.objects.create(
        slug="h200", name="H200", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="ml"
    )
    return Deployment.objects.create(slug="next", cluster=cluster, model=model, tp=2, engine="vllm")


def row(page: str, label: str) -> str:
    match = re.search(r"<tr[^>]*><th>" + re.escape(label) + r".*?</tr>", page, re.S)
    assert match, label
    return match.group(0)


def test_platform_pastes_a_log_and_sees_logged_beside_predicted(client, make_user, next_deployment):
    client.force_login(make_user("p", "platform"))
    page = client.get(PAGE).content.decode()
    assert "Calibrate from startup log" in page and "No calibration yet" in page
    response = client.post(CALIBRATE, {"log": QWEN3_NEXT, "measured_on": "2025-10-23"})
    assert response.status_code == 302 and response["Location"] == f"{PAGE}#calibration"
    page = client.get(PAGE).content.decode()
    assert "taken on <strong>2025-10-23</strong>" in page
    concurrency = row(page, "Maximum concurrency at max_model_len")
    assert ">14.77<" in concurrency  # "Maximum concurrency for 262,144 tokens per request: 14.77x"
    assert "the logged KV memory" in concurrency
    assert ">973,760<" in row(page, "GPU KV cache size")  # "GPU KV cache size: 973,760 tokens"
    assert "the SKU's memory" in row(page, "Available KV cache memory per GPU")  # "44.59 GiB"


def test_a_ratio_outside_the_band_is_highlighted(client, make_user, next_deployment):
    def figure(name: str, ratio: float) -> dict:
        return {"name": name, "label": name, "unit": "tokens", "logged": 100, "predicted": 100 * ratio,
                "ratio": ratio, "basis": "logged_memory"}  # fmt: skip

    Calibration.objects.create(
        deployment=next_deployment, measured_on="2026-01-01", engine="vllm",
        figures=[figure("inside", 1.029), figure("below", 0.969), figure("above", 1.2)],
    )  # fmt: skip
    client.force_login(make_user("v", "viewer"))
    page = client.get(PAGE).content.decode()
    assert "off-band" not in row(page, "inside")
    for name in ("below", "above"):
        assert 'class="off-band"' in row(page, name) and "outside 0.97\u20131.03" in row(page, name)


def test_htmx_answers_the_partial_and_keeps_errors_beside_the_input(client, make_user, next_deployment):
    client.force_login(make_user("p", "platform"))
    response = client.post(CALIBRATE, {"log": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200  # HTMX swaps only 2xx
    partial = response.content.decode()
    assert partial.lstrip().startswith("<section") and 'id="calibration"' in partial
    assert "Paste the log or upload its file." in partial
    response = client.post(CALIBRATE, {"log": QWEN3_NEXT}, HTTP_HX_REQUEST="true")
    partial = response.content.decode()
    assert 'id="calibration-figures"' in partial and "<html" not in partial
    assert Calibration.objects.count() == 1


def test_an_uploaded_file_is_read(client, make_user, next_deployment):
    client.force_login(make_user("p", "platform"))
    upload = SimpleUploadedFile("server.log", QWEN3_NEXT.encode(), content_type="text/plain")
    assert client.post(CALIBRATE, {"upload": upload}).status_code == 302
    assert Calibration.objects.get().parsed["kv_cache_tokens"] == 973_760


def test_a_log_that_is_not_one_comes_back_beside_the_input(client, make_user, next_deployment):
    client.force_login(make_user("p", "platform"))
    response = client.post(CALIBRATE, {"log": "hello"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "No line of a vLLM or SGLang startup was found" in page and "Headroom" in page
    assert Calibration.objects.count() == 0


def test_unsupported_architecture_message_and_history(client, make_user, next_deployment):
    client.force_login(make_user("p", "platform"))
    client.post(CALIBRATE, {"log": QWEN3_NEXT, "measured_on": "2025-10-23"})
    client.post(CALIBRATE, {"log": UNSUPPORTED, "measured_on": "2026-01-14"})
    page = client.get(PAGE).content.decode()
    assert "LlavaQwenForCausalLM" in page and "older than the model" in page
    history = re.search(r'id="calibration-history".*?</table>', page, re.S).group(0)
    assert "2025-10-23" in history and "vllm 0.10.2" in history


def test_a_viewer_sees_calibrations_but_no_form_and_may_not_post(client, make_user, next_deployment):
    client.force_login(make_user("p", "platform"))
    client.post(CALIBRATE, {"log": QWEN3_NEXT})
    client.force_login(make_user("v", "viewer"))
    page = client.get(PAGE).content.decode()
    assert 'id="calibration-figures"' in page and "Calibrate from startup log" not in page
    assert client.post(CALIBRATE, {"log": QWEN3_NEXT}).status_code == 403
    assert Calibration.objects.count() == 1


def test_a_logged_secret_never_reaches_the_page(client, make_user, next_deployment):
    client.force_login(make_user("p", "platform"))
    secret = "sk-live-abcdefghijklmnop0123"
    log = QWEN3_NEXT.replace("'tensor_parallel_size': 2}", f"'tensor_parallel_size': 2, 'api_key': ['{secret}']}}")
    client.post(CALIBRATE, {"log": log})
    assert secret not in client.get(PAGE).content.decode()
    assert secret not in Calibration.objects.get().log_text


def _coloured(log: str) -> str:
    """The log as a terminal shows it: vLLM colours its process prefixes with ANSI sequences."""
    return "\n".join(f"\x1b[1;36m(EngineCore_DP0 pid=1)\x1b[0;0m {line}" for line in log.splitlines())


def test_a_log_pasted_with_its_terminal_colours_calibrates(client, make_user, next_deployment, platform_api):
    """The control-character check refused ESC in a pasted log (a 400 page) although the log parser
    strips colour codes; logs may carry ANSI sequences, and only logs, and still never a NUL."""
    client.force_login(make_user("p2", "platform"))
    response = client.post(CALIBRATE, {"log": _coloured(QWEN3_NEXT), "measured_on": "2025-10-23"})
    assert response.status_code == 302, response.content[:500]
    assert ">973,760<" in row(client.get(PAGE).content.decode(), "GPU KV cache size")
    r = platform_api.post("/api/v1/calibrations/", {"deployment": "next", "log": _coloured(QWEN3_NEXT)}, format="json")
    assert r.status_code == 201, r.content[:500]
    nul = client.post(CALIBRATE, {"log": QWEN3_NEXT + "\x00", "measured_on": "2025-10-23"})
    assert nul.status_code == 400
    # Anywhere else an escape character is still refused.
    assert client.post(CALIBRATE, {"log": QWEN3_NEXT, "measured_on": "2025-10-23\x1b[0m"}).status_code == 400
