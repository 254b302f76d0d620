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
    ):
        assert f"  {path}:" in text
