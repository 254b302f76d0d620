"""Importing a model from its config.json: the service, ``POST /api/v1/models/import/`` and the page.

The figures themselves are the engine's (tests/engine/test_hf_config.py checks them against vLLM);
here: the record is created through the model's own validation with the derived assumptions, source
and Hub id, every role gets the create permission's answer, and bad input is a 400 beside its field,
never a 500.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from fleet import registration
from fleet.errors import ConflictError, InputError
from fleet.models import ModelSpec

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf-configs"
URL = "/api/v1/models/import/"


def config(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}_config.json").read_text())


# --- the service ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_service_creates_the_model_with_assumptions_source_and_hub_id():
    qwen = config("Qwen--Qwen3-32B")
    assert qwen.get("_name_or_path") is None
    model = registration.import_model(
        registration.ImportModelRequest(slug="qwen3-32b", name="Qwen3 32B", config=qwen, hf_model_id="Qwen/Qwen3-32B")
    )
    model.refresh_from_db()
    assert model.hf_model_id == "Qwen/Qwen3-32B"
    assert model.layer_groups == [{"kind": "full", "count": 64, "kv_heads": 8, "head_dim": 128}]
    assert model.source == "config.json of Qwen/Qwen3-32B (imported)"
    assert model.assumptions[0].startswith("Architecture: qwen3")
    assert any("computed from the dimensions" in a for a in model.assumptions)
    assert model.to_engine().num_layers == 64


@pytest.mark.django_db
def test_service_takes_the_hub_id_from_name_or_path_when_it_is_one():
    named = {**config("Qwen--Qwen3-8B"), "_name_or_path": "Qwen/Qwen3-8B"}
    model = registration.import_model(registration.ImportModelRequest(slug="q8", name="Q8", config=named))
    assert model.hf_model_id == "Qwen/Qwen3-8B"
    local = {**config("Qwen--Qwen3-8B"), "_name_or_path": "/models/qwen3-8b"}
    other = registration.import_model(registration.ImportModelRequest(slug="q8b", name="Q8", config=local))
    assert other.hf_model_id == ""


@pytest.mark.django_db
def test_service_errors_are_keyed_by_field_and_a_taken_slug_conflicts():
    with pytest.raises(InputError) as caught:
        registration.import_model(registration.ImportModelRequest(slug="x", name="X", config={"model_type": "qwen3"}))
    assert "config.num_hidden_layers" in caught.value.errors
    with pytest.raises(InputError) as caught:
        registration.import_model(
            registration.ImportModelRequest(slug="Bad Slug", name="X", config=config("Qwen--Qwen3-8B"))
        )
    assert "slug" in caught.value.errors
    with pytest.raises(InputError) as caught:
        registration.import_model(
            registration.ImportModelRequest(slug="q", name="X", config=config("Qwen--Qwen3-8B"), hf_model_id="nope")
        )
    assert "hf_model_id" in caught.value.errors
    registration.import_model(registration.ImportModelRequest(slug="q", name="X", config=config("Qwen--Qwen3-8B")))
    with pytest.raises(ConflictError):
        registration.import_model(registration.ImportModelRequest(slug="q", name="X", config=config("Qwen--Qwen3-8B")))


# --- the API -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_import_returns_the_model_as_the_detail_shows_it(platform_api):
    body = {
        "slug": "kimi-k3-imported",
        "name": "Kimi K3",
        "config": config("moonshotai--Kimi-K3"),
        "total_params": 2_800_000_000_000,
        "active_params": 104_000_000_000,
        "hf_model_id": "moonshotai/Kimi-K3",
    }
    r = platform_api.post(URL, body, format="json")
    assert r.status_code == 201, r.content
    detail = platform_api.get(f"/api/v1/models/{body['slug']}/").json()
    assert r.json() == detail
    assert r["Location"] == detail["url"]
    assert detail["hf_model_id"] == "moonshotai/Kimi-K3"
    assert [(g["kind"], g["count"]) for g in detail["layer_groups"]] == [("linear", 69), ("mla", 24)]
    assert detail["expert_weight_format"] == "mxfp4"
    assert any("KDA layers" in a for a in detail["assumptions"])


@pytest.mark.django_db
def test_api_import_with_a_modelopt_quant_config(platform_api):
    quant = json.loads((FIXTURES / "nvidia--DeepSeek-V3.1-NVFP4_hf_quant_config.json").read_text())
    body = {"slug": "dsv31-nvfp4", "name": "DeepSeek-V3.1 NVFP4", "config": config("nvidia--DeepSeek-V3.1-NVFP4")}
    r = platform_api.post(URL, {**body, "quant_config": quant}, format="json")
    assert r.status_code == 201, r.content
    assert (r.json()["weight_format"], r.json()["expert_weight_format"]) == ("nvfp4", "")
    parts = {(p["part"], p["format"]) for p in r.json()["weight_parts"]}
    assert {("attention", "bf16"), ("attention", "nvfp4"), ("routed_experts", "nvfp4"), ("lm_head", "bf16")} <= parts


@pytest.mark.django_db
def test_api_unknown_architecture_and_missing_fields_are_400s_naming_them(platform_api):
    r = platform_api.post(URL, {"slug": "x", "name": "X", "config": {"model_type": "falcon_h9"}}, format="json")
    assert r.status_code == 400 and "falcon_h9" in r.json()["config"][0]
    r = platform_api.post(URL, {"slug": "x", "name": "X", "config": {"model_type": "llama"}}, format="json")
    assert r.status_code == 400
    assert {"config.num_hidden_layers", "config.hidden_size", "config.num_attention_heads"} <= set(r.json())
    r = platform_api.post(URL, {"slug": "x", "name": "X", "config": config("zai-org--GLM-5")}, format="json")
    assert r.status_code == 400 and "indexer" in r.json()["config"][0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body,key",
    [
        ({"slug": "x", "name": "X", "config": [1, 2]}, "config"),
        ({"slug": "x", "name": "X", "config": "not an object"}, "config"),
        ({"slug": "x", "name": "X"}, "config"),
        ({"slug": "x", "name": "X", "config": {}, "total_params": 10**30}, "total_params"),
        ({"slug": "x", "name": "X", "config": {}, "weight_format": "fp3"}, "weight_format"),
        (
            {"slug": "x", "name": "X", "config": {"model_type": "llama", "num_attention_heads": -4}},
            "config.num_attention_heads",
        ),
        ({"slug": "x", "name": "X", "config": {"model_type": "llama", "hidden_size": 10**40}}, "config.hidden_size"),
        ({"slug": "x", "name": "X", "config": {"model_type": "qwen3"}, "quant_config": [1]}, "quant_config"),
    ],
)
def test_api_hostile_bodies_are_400s(platform_api, body, key):
    r = platform_api.post(URL, body, format="json")
    assert r.status_code == 400, r.content
    assert key in r.json()


@pytest.mark.django_db
def test_api_not_json_a_list_body_and_a_taken_slug(platform_api):
    r = platform_api.post(URL, "{not json", content_type="application/json")
    assert r.status_code == 400
    r = platform_api.post(URL, [{"slug": "x"}], format="json")
    assert r.status_code == 400
    body = {"slug": "q8", "name": "Q8", "config": config("Qwen--Qwen3-8B")}
    assert platform_api.post(URL, body, format="json").status_code == 201
    again = platform_api.post(URL, body, format="json")
    assert again.status_code == 409 and "already exists" in again.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "role,status",
    [(None, 403), ("viewer", 403), ("finance", 403), ("platform", 201), ("admin", 201)],
)
def test_api_import_needs_the_create_permission(client_for, role, status):
    api = client_for(role)
    r = api.post(URL, {"slug": "q8", "name": "Q8", "config": config("Qwen--Qwen3-8B")}, format="json")
    assert r.status_code == status
    assert api.user.has_perm("fleet.add_modelspec") == (status == 201)


@pytest.mark.django_db
def test_api_import_refuses_anonymous(client):
    r = client.post(URL, {"slug": "q8", "name": "Q8", "config": {}}, content_type="application/json")
    assert r.status_code in (401, 403)


def test_import_is_in_the_openapi_schema():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/models/import/"]["post"]
    assert {"201", "400", "409"} <= set(operation["responses"])


# --- the page ------------------------------------------------------------------------------

PAGE = "/models/import/"


@pytest.fixture
def platform_browser(client, make_user):
    client.force_login(make_user("pat", "platform"))
    return client


@pytest.mark.django_db
def test_page_imports_a_pasted_config_and_shows_groups_and_assumptions(platform_browser):
    text = (FIXTURES / "Qwen--Qwen3.5-27B_config.json").read_text()
    r = platform_browser.post(PAGE, {"config_text": text, "name": "Qwen3.5 27B", "slug": "qwen3.5-27b"})
    assert r.status_code == 302 and r["Location"] == "/models/qwen3.5-27b/"
    page = platform_browser.get(r["Location"]).content.decode()
    assert "imported from its config.json" in page
    assert '<td>Linear attention</td><td class="num">48</td>' in page
    assert '<td>Full attention</td><td class="num">16</td>' in page
    assert "Gated DeltaNet layers" in page  # an assumption


@pytest.mark.django_db
def test_page_imports_an_uploaded_config_with_its_quant_config(platform_browser):
    upload = SimpleUploadedFile("config.json", (FIXTURES / "nvidia--Qwen3-235B-A22B-NVFP4_config.json").read_bytes())
    quant = SimpleUploadedFile(
        "hf_quant_config.json", (FIXTURES / "nvidia--Qwen3-235B-A22B-NVFP4_hf_quant_config.json").read_bytes()
    )
    r = platform_browser.post(
        PAGE,
        {"config_file": upload, "quant_config_file": quant, "name": "Qwen3 235B NVFP4", "slug": "q235-nvfp4"},
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    assert ModelSpec.objects.get(slug="q235-nvfp4").weight_format == "nvfp4"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "data,field,words",
    [
        ({"config_text": "{not json"}, "config_text", "not valid JSON"),
        ({"config_text": "[1, 2]"}, "config_text", "must be a JSON object"),
        ({"config_text": "9" * 5000}, "config_text", "not valid JSON"),  # beyond Python's int digits limit
        ({"config_text": "[" * 100_000 + "]" * 100_000}, "config_text", "not valid JSON"),  # nested too deep
        ({"config_text": ""}, "config_text", "Paste the config.json"),
        ({"config_text": '{"model_type": "falcon_h9"}'}, "config_text", "falcon_h9"),
        ({"config_text": '{"model_type": "llama", "num_attention_heads": -2}'}, "config_text", "num_attention_heads:"),
        ({"config_text": '{"model_type": "qwen3"}', "total_params": "-5"}, "total_params", ""),
    ],
)
def test_page_errors_sit_beside_their_input(platform_browser, data, field, words):
    r = platform_browser.post(PAGE, {"name": "X", "slug": "x", **data})
    assert r.status_code == 400
    errors = r.context["form"].errors
    assert field in errors and words in " ".join(errors[field])
    assert not ModelSpec.objects.filter(slug="x").exists()


@pytest.mark.django_db
def test_page_refuses_a_file_over_the_cap_and_a_taken_slug(platform_browser):
    big = SimpleUploadedFile("config.json", b'{"a": "' + b"x" * 2_000_001 + b'"}')
    r = platform_browser.post(PAGE, {"config_file": big, "name": "X", "slug": "x"})
    assert r.status_code == 400 and "limit is 2,000,000" in " ".join(r.context["form"].errors["config_file"])
    text = (FIXTURES / "Qwen--Qwen3-8B_config.json").read_text()
    assert platform_browser.post(PAGE, {"config_text": text, "name": "Q", "slug": "q8"}).status_code == 302
    r = platform_browser.post(PAGE, {"config_text": text, "name": "Q", "slug": "q8"})
    assert r.status_code == 400 and "already exists" in " ".join(r.context["form"].errors["slug"])


@pytest.mark.django_db
@pytest.mark.parametrize("role,allowed", [("viewer", False), ("finance", False), ("platform", True), ("admin", True)])
def test_page_needs_the_create_permission(client, make_user, role, allowed):
    client.force_login(make_user(f"u-{role}", role))
    assert client.get(PAGE).status_code == (200 if allowed else 403)
    models_page = client.get("/models/").content.decode()
    assert ('href="/models/import/"' in models_page) == allowed


@pytest.mark.django_db
def test_page_sends_anonymous_users_to_log_in(client):
    r = client.get(PAGE)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")
