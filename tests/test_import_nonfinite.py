"""Non-finite numbers (``Infinity``, ``-Infinity``, ``NaN``) in an imported config.json: read by the
import's API body and page, ignored where the importer does not read them (Nemotron-H's
``time_step_limit``), refused by name where it does; every other API body still refuses them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fleet.models import ModelSpec
from planner.engine import EngineInputError, finite_config, model_record_from_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf-configs"
NEMOTRON = FIXTURES / "nvidia--Nemotron-H-56B-Base-8K_config.json"
URL = "/api/v1/models/import/"
PAGE = "/models/import/"


def body(config_text: str, slug: str = "nemotron-h-56b", **fields: str) -> str:
    """An import body as raw JSON text (a JSON library would refuse to write Infinity)."""
    head = json.dumps({"slug": slug, "name": "Nemotron-H 56B", **fields})
    return f'{head[:-1]}, "config": {config_text}}}'


def with_key(key: str, constant: str) -> str:
    """The Nemotron-H config text with ``key``'s value replaced by a JSON constant."""
    text, count = re.subn(rf'"{key}": [^,\n]+', f'"{key}": {constant}', NEMOTRON.read_text(), count=1)
    assert count == 1
    return text


def test_the_fixture_carries_infinity():
    assert '"time_step_limit": [\n        0.0,\n        Infinity\n    ]' in NEMOTRON.read_text()


def test_finite_config_replaces_and_says_where():
    config = {"a": [0.0, float("inf")], "b": {"c": float("nan")}, "d": 1.5}
    replaced, found = finite_config(config)
    assert replaced == {"a": [0.0, None], "b": {"c": None}, "d": 1.5}
    assert found == {"config.a.1": "Infinity", "config.b.c": "NaN"}
    clean = {"d": [1.5]}
    assert finite_config(clean) == (clean, {}) and finite_config(clean)[0] is clean


@pytest.mark.parametrize("constant", [float("inf"), float("-inf"), float("nan")])
def test_engine_refuses_a_read_key_by_name(constant):
    config = json.loads(NEMOTRON.read_text())
    with pytest.raises(EngineInputError) as exc:
        model_record_from_config({**config, "hidden_size": constant}, name="N")
    assert exc.value.errors == {"config.hidden_size": [f"Must be a finite number (got {json.dumps(constant)})."]}


@pytest.mark.django_db
def test_api_imports_a_config_with_infinity_where_it_is_not_read(platform_api):
    r = platform_api.post(URL, body(NEMOTRON.read_text()), content_type="application/json")
    assert r.status_code == 201, r.content
    assert "Infinity" not in r.content.decode() and "NaN" not in r.content.decode()
    assert ModelSpec.objects.get(slug="nemotron-h-56b").hidden_size == 8192


@pytest.mark.django_db
@pytest.mark.parametrize(
    "key,constant",
    [("hidden_size", "Infinity"), ("num_attention_heads", "NaN"), ("hybrid_override_pattern", "-Infinity")],
)
def test_api_refuses_a_read_key_naming_it(platform_api, key, constant):
    r = platform_api.post(URL, body(with_key(key, constant)), content_type="application/json")
    assert r.status_code == 400, r.content
    assert r.json()[f"config.{key}"] == [f"Must be a finite number (got {constant})."]
    assert r.json()["detail"] == f"config.{key}: Must be a finite number (got {constant})."
    assert not ModelSpec.objects.filter(slug="nemotron-h-56b").exists()


@pytest.mark.django_db
def test_api_refuses_non_finite_outside_the_config(platform_api):
    text = body(NEMOTRON.read_text())[:-1] + ', "total_params": Infinity}'
    r = platform_api.post(URL, text, content_type="application/json")
    assert r.status_code == 400 and r.json()["total_params"] == ["Must be a finite number (got Infinity)."]


@pytest.mark.django_db
def test_other_endpoints_still_refuse_non_finite_numbers(platform_api):
    text = '{"model": "kimi-k3", "sku": "h100-sxm-80gb", "runtime_reserve_gib": NaN}'
    r = platform_api.post("/api/v1/sizing/", text, content_type="application/json")
    assert r.status_code == 400 and "NaN" in r.json()["detail"]


@pytest.fixture
def platform_browser(client, make_user):
    client.force_login(make_user("pat", "platform"))
    return client


@pytest.mark.django_db
def test_page_imports_a_config_with_infinity(platform_browser):
    data = {"config_text": NEMOTRON.read_text(), "name": "Nemotron-H 56B", "slug": "nemotron-h-56b"}
    r = platform_browser.post(PAGE, data)
    assert r.status_code == 302 and r["Location"] == "/models/nemotron-h-56b/"
    assert ModelSpec.objects.get(slug="nemotron-h-56b").hidden_size == 8192


@pytest.mark.django_db
def test_page_refuses_a_read_key_beside_the_config(platform_browser):
    data = {"config_text": with_key("hidden_size", "Infinity"), "name": "N", "slug": "nemotron-h-56b"}
    r = platform_browser.post(PAGE, data)
    assert r.status_code == 400
    assert "hidden_size: Must be a finite number (got Infinity)." in r.content.decode()
