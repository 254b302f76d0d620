"""Record and upload forms (issue 28, "Forms"): a new record's slug follows its name (``SlugFromName``), an
upload read once is kept across a refusal (``keep_upload_text``), messages name fields by their labels
(``field_words``), and controls show only where they apply (the stored API key's removal)."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from fleet.errors import InputError
from fleet.forms import ClusterForm, add_service_errors, field_words
from fleet.models import ModelSpec, Workload
from planner.forms import RentVsApiForm
from planner.models import Calibration

HF = Path(__file__).resolve().parent / "fixtures" / "hf-configs"
LOGS = Path(__file__).resolve().parent / "fixtures" / "startup_logs"
#: The text of every error a page shows (``role="alert"``), tags stripped.
ALERT = re.compile(r'role="alert"[^>]*>(.*?)</(?:p|span|div)>', re.S)


@pytest.fixture
def platform(client, make_user):
    client.force_login(make_user("pat", "platform"))
    return client


#: A workload's figures (the rent-vs-API and edit tests' own).
WORKLOAD = {
    "team": "dev", "requests_per_day": 50_000, "mean_prompt_tokens": 2_000, "mean_output_tokens": 500,
    "p95_context_tokens": 8_000, "prefix_cache_hit_rate": 0.5, "peak_concurrency": 50, "ttft_slo_ms": 2000,
    "tpot_slo_ms": 50,
}  # fmt: skip


def alerts(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", " ", text).strip() for text in ALERT.findall(html)]


# --- slugs from names -------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/clusters/new/", "/skus/new/", "/workloads/new/", "/models/new/", "/models/import/"])
def test_a_new_records_slug_follows_its_name(platform, path):
    html = platform.get(path).content.decode()
    slug = re.search(r'<input[^>]*name="slug"[^>]*>', html).group(0)
    assert 'data-slug-from="id_name"' in slug and 'maxlength="' in slug
    assert "js/slugs.js" in html


@pytest.mark.django_db
def test_a_stored_records_slug_is_left_alone(platform, cluster, kimi_k3):
    Workload.objects.create(slug="chat", name="Chat", **WORKLOAD)
    edits = ("/clusters/h100-pool/edit/", "/skus/h100-sxm-80gb/edit/", "/workloads/chat/edit/", "/models/kimi-k3/edit/")
    for path in edits:
        page = platform.get(path)
        assert page.status_code == 200, path
        assert "data-slug-from" not in page.content.decode(), path


@pytest.mark.django_db
def test_the_server_still_checks_the_slug(platform, sku):
    assert "data-slug-from" in str(ClusterForm()["slug"])
    r = platform.post("/clusters/new/", {"name": "Pool", "slug": "Not a slug!", "sku": sku.pk, "nodes": 1})
    assert r.status_code == 400 and "slug" in r.context["form"].errors


# --- files across a refusal -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_imported_config_is_kept_when_another_input_is_refused(platform):
    config = (HF / "nvidia--Qwen3-235B-A22B-NVFP4_config.json").read_bytes()
    quant = (HF / "nvidia--Qwen3-235B-A22B-NVFP4_hf_quant_config.json").read_bytes()
    files = {
        "config_file": SimpleUploadedFile("config.json", config),
        "quant_config_file": SimpleUploadedFile("hf_quant_config.json", quant),
    }
    r = platform.post("/models/import/", {**files, "name": "Q235", "slug": ""})  # no slug: refused
    assert r.status_code == 400 and "slug" in r.context["form"].errors
    form = r.context["form"]
    assert form["config_text"].value() == config.decode() and form["quant_config_text"].value() == quant.decode()
    assert "no need to choose it again" in r.content.decode()
    # The next submit sends the kept text (no file chosen): imported, with its quantisation.
    again = {"config_text": form["config_text"].value(), "quant_config_text": form["quant_config_text"].value()}
    r = platform.post("/models/import/", {**again, "name": "Q235", "slug": "q235"})
    assert r.status_code == 302 and ModelSpec.objects.get(slug="q235").weight_format == "nvfp4"


@pytest.mark.django_db
def test_choosing_the_kept_config_again_is_not_both(platform):
    config = (HF / "Qwen--Qwen3-0.6B_config.json").read_bytes()
    upload = SimpleUploadedFile("config.json", config)
    both = {"config_text": config.decode(), "config_file": upload, "name": "Q", "slug": "q"}
    r = platform.post("/models/import/", both)
    assert r.status_code == 302, r.context["form"].errors


@pytest.mark.django_db
def test_an_uploaded_log_is_kept_when_another_input_is_refused(platform, deployment):
    log = (LOGS / "vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log").read_text(encoding="utf-8")
    upload = SimpleUploadedFile("server.log", log.encode(), content_type="text/plain")
    r = platform.post("/deployments/k3-prod/calibrate/", {"upload": upload, "measured_on": "not a date"})
    assert r.status_code == 400 and not Calibration.objects.exists()
    assert r.context["calibration_form"]["log"].value() == log


@pytest.mark.django_db
def test_an_uploaded_trace_is_kept_when_another_input_is_refused(client, make_user):
    call_command("load_catalog", stdout=StringIO())
    client.force_login(make_user("v", "viewer"))
    trace = "request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens\nr0,0,1500,sys,1000\n"
    form = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "engine": "vllm", "tp": "0"}  # tp 0: refused
    r = client.post("/prefix-cache/", {**form, "trace_file": SimpleUploadedFile("t.csv", trace.encode())})
    assert r.status_code == 400 and "tp" in r.context["form"].errors
    assert r.context["form"]["trace_text"].value() == trace


# --- labels in messages -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_field_words_names_fields_by_their_labels():
    form = RentVsApiForm()
    assert field_words(form, "Required unless api_price names a stored price.") == (
        "Required unless API price names a stored price."
    )
    assert field_words(form, "breakeven.gpus too small", "breakeven.") == "GPUs too small"
    assert field_words(form, "layer_groups.1.kv_heads and e.g. this") == "layer_groups.1.kv_heads and e.g. this"
    form.fields["layer_groups"] = form.fields["gpus"].__class__(label="Layer groups")
    assert field_words(form, "see layer_groups.1.kv_heads") == "see Layer groups (1.kv_heads)"
    bound = RentVsApiForm({})
    bound.is_valid()
    add_service_errors(bound, InputError({"hours_per_day": ["Over api_price."], "unknown_thing": ["Bad."]}))
    assert bound.errors["hours_per_day"] == ["Over API price."] and "unknown_thing: Bad." in bound.errors["__all__"]


@pytest.mark.django_db
def test_rent_vs_api_without_an_api_price_names_the_fields_by_label(client, make_user):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(slug="agent", name="Agent", **WORKLOAD)
    client.force_login(make_user("f", "finance"))
    r = client.get("/rent-vs-api/", {"workload": "agent", "gpus": "8", "sku": "h100-sxm-80gb"})
    # The inline prices are no inputs of this page: the message names them by their records' labels.
    assert (
        "Input, cache hit (USD / M tokens): Required unless API price names a stored price."
        in (r.context["form"].errors["__all__"])
    )
    shown = alerts(r.content.decode())
    assert any("API price names a stored price" in text for text in shown), shown
    assert not [text for text in shown if re.search(r"\b[a-z]+_[a-z_]+\b", text)], shown


# --- controls only where they apply ----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_stored_keys_removal_shows_only_where_there_is_one(platform, deployment):
    assert 'name="clear_api_key"' not in platform.get("/deployments/new/").content.decode()
    assert 'name="clear_api_key"' in platform.get("/deployments/k3-prod/edit/").content.decode()
    deployment.set_api_key("")
    deployment.save()
    edit = platform.get("/deployments/k3-prod/edit/").content.decode()
    assert 'name="clear_api_key"' not in edit and "keep the stored key" not in edit
