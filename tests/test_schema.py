"""The OpenAPI schema is generated without warnings and is valid OpenAPI 3."""

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_schema_validates_with_warnings_as_errors(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    assert text.startswith("openapi: 3")
    for path in (
        "/api/v1/skus/",
        "/api/v1/clusters/{slug}/",
        "/api/v1/gpu-quotes/{id}/",
        "/api/v1/workloads/",
        "/api/v1/route/",
        "/api/v1/route/litellm/",
    ):
        assert f"  {path}:" in text


def _schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def test_every_operation_documents_its_error_answers_with_the_error_body():
    schema = _schema()
    assert schema["components"]["schemas"]["Error"]["required"] == ["detail", "code"]
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    operations = [(path, method, op) for path, item in schema["paths"].items() for method, op in item.items()]
    assert len(operations) > 40
    for path, method, op in operations:
        for code in ("400", "401", "403", "429", "503"):
            assert op["responses"][code]["content"] == error, (method, path, code)
        if "{" in path:
            assert "404" in op["responses"], (method, path)
        if "requestBody" in op:
            assert {"413", "415"} <= set(op["responses"]), (method, path)


def test_numeric_inputs_and_page_size_show_their_limits():
    schema = _schema()
    sizing = schema["components"]["schemas"]["SizingRequestRequest"]["properties"]
    assert sizing["gpus"]["maximum"] == 1_000_000  # the engine's MAX_GPUS
    assert sizing["runtime_reserve_gib"]["maximum"] == 4096
    sku = schema["components"]["schemas"]["HardwareSkuRequest"]["properties"]
    assert sku["hbm_gb"]["maximum"] == 100_000  # the engine's MAX_HBM_GB: a SKU's figures go to it as they are
    assert sku["source"]["maxLength"] == 10_000  # free text, fleet.inputs.MAX_TEXT_CHARS
    cluster = schema["components"]["schemas"]["ClusterRequest"]["properties"]
    assert (cluster["nodes"]["minimum"], cluster["nodes"]["maximum"]) == (1, 1_000_000)
    model = schema["components"]["schemas"]["ModelSpecRequest"]["properties"]
    assert model["max_context_tokens"]["maximum"] == 100_000_000  # the engine's MAX_CONTEXT_TOKENS
    assert model["hidden_size"]["maximum"] == 2**31 - 1
    params = {p["name"]: p for p in schema["paths"]["/api/v1/skus/"]["get"]["parameters"]}
    assert params["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 500}
