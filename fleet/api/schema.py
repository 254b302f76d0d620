"""The API's contract: drf-spectacular postprocessing (every operation documents the error answers it can
give, each with the one error body, ``Error``; ``fleet.api.errors``) and the views that serve it.

The schema is the same for everyone (it describes shapes and rules, never a record), so ``SchemaView``
builds it once per process and format, i.e. once per release deployed, and serves the rendered bytes
from then on: building took 0.4-3.3 s and rendering the YAML another 0.1 s per request (bench/bench_schema.py,
docs/benchmarks.md "Schema"). Who may read it: ``settings.API_SCHEMA_PUBLIC``.
"""

from __future__ import annotations

import json
import threading
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny, IsAuthenticated

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error: detail and code; a 400 about the input adds each field's messages "
    "beside them (nested fields as dotted paths), a 409 for a protected delete adds used_by.",
    "properties": {
        "detail": {"type": "string", "description": "What went wrong, for a person."},
        "code": {"type": "string", "description": "Machine-readable: invalid, not_found, throttled, ..."},
    },
    "required": ["detail", "code"],
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}

DESCRIPTIONS = {
    "400": "Invalid input: a message per field (body fields, query parameters, or path).",
    "401": "Not authenticated (a Token or a session is needed).",
    "403": "The user's role does not hold the permission this needs.",
    "404": "No such record (or page).",
    "409": "Conflict: the record is still used by others, already exists, or is finished.",
    "413": "The request body is larger than the server accepts.",
    "415": "The body's content type is not JSON or a form.",
    "429": "Too many requests (the per-user API rate, or an expensive request's own per-user limit: calibrations, "
    "model imports, plans, prefix-cache traces); retry after the Retry-After header's seconds.",
    "503": "A service the request needs (the database, the task queue) is unreachable; retry later.",
}

METHODS = ("get", "put", "post", "patch", "delete")


def _codes(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    codes = ["400", "401", "403", "429", "503"]
    names = {p.get("name") for p in operation.get("parameters", [])}
    if "{" in path or names & {"page", "format"}:  # DRF answers an unknown ?format= with a 404
        codes.append("404")
    if method in ("post", "delete"):
        codes.append("409")
    if "requestBody" in operation:
        codes += ["413", "415"]
    return sorted(codes)


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, item in result.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            for code in _codes(path, method, operation):
                response = responses.setdefault(code, {"description": DESCRIPTIONS[code]})
                response["content"] = content
    return result


#: Every operation's example: the request a test sent and the answer it got (tests/test_api_examples.py, which
#: re-records the file with FLEETCAP_RECORD_EXAMPLES=1 and fails when an example stops working).
EXAMPLES_FILE = Path(__file__).with_name("examples.json")


@cache
def load_examples() -> dict[str, dict[str, Any]]:
    """The recorded examples by operation id (read once per process)."""
    return json.loads(EXAMPLES_FILE.read_text())


def attach_examples(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Each operation's recorded example as its request body's, its success answer's and its path and query
    parameters' examples: Kimi K3 on 16 H200s serving a coding agent, as a test called it."""
    examples = load_examples()
    for item in result.get("paths", {}).values():
        for method in METHODS:
            operation = item.get(method)
            example = examples.get(operation["operationId"]) if operation else None
            if example is None:
                continue
            summary = f"{example['summary']} (a recorded call: tests/test_api_examples.py)"
            query = "&".join(f"{k}={v}" for k, v in example["query"].items())
            call = f"{example['method']} {example['path']}" + (f"?{query}" if query else "")
            body = operation.get("requestBody", {}).get("content", {}).get(example["request_content_type"])
            if body is not None and example["request"] is not None:
                body["examples"] = {"k3": {"summary": summary, "description": call, "value": example["request"]}}
            answer = operation.get("responses", {}).get(str(example["status"]), {})
            shown = answer.get("content", {}).get(example["response_content_type"] or "")
            if shown is not None:
                shown["examples"] = {"k3": {"summary": summary, "description": call, "value": example["response"]}}
            values = _path_values(operation, example["path"], result, item)
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] in values:
                    parameter["example"] = values[parameter["name"]]
                elif parameter["in"] == "query" and parameter["name"] in example["query"]:
                    parameter["example"] = example["query"][parameter["name"]]
    return result


def _path_values(operation: dict[str, Any], path: str, result: dict[str, Any], item: dict[str, Any]) -> dict[str, str]:
    """The path parameters' values in ``path``, by the operation's template (its key in ``paths``)."""
    template = next(t for t, i in result["paths"].items() if i is item)
    names = [part[1:-1] for part in template.split("/") if part.startswith("{")]
    values = [v for t, v in zip(template.split("/"), path.split("/"), strict=False) if t.startswith("{")]
    return dict(zip(names, values, strict=False))


#: Rendered schemas by (format, media type, version, language): built once per process.
_RENDERED: dict[tuple[str, str, str, str], tuple[bytes, str, str]] = {}
_BUILD = threading.Lock()


def contract_permissions() -> list[Any]:
    """Anyone when the contract is public (``API_SCHEMA_PUBLIC``), else a token or a session."""
    return [AllowAny()] if settings.API_SCHEMA_PUBLIC else [IsAuthenticated()]


class SchemaView(SpectacularAPIView):
    """``GET /api/v1/schema/`` (YAML; ``?format=json`` or ``Accept: application/vnd.oai.openapi+json`` for
    JSON), rendered once per process and format."""

    def get_permissions(self) -> list[Any]:
        return contract_permissions()

    @extend_schema(exclude=True)
    def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        renderer, media_type = self.perform_content_negotiation(request)
        version = self.api_version or request.version or self._get_version_parameter(request) or ""
        key = (renderer.format, media_type, version, request.GET.get("lang") or "")
        hit = _RENDERED.get(key)
        if hit is None:
            with _BUILD:  # one build at a time: a burst of first requests waits for the one
                hit = _RENDERED.get(key)
                if hit is None:
                    response = super().get(request, *args, **kwargs)
                    response.accepted_renderer, response.accepted_media_type = renderer, media_type
                    response.renderer_context = self.get_renderer_context()
                    response.render()
                    hit = (response.content, response["Content-Type"], response["Content-Disposition"])
                    if response.status_code == 200:
                        _RENDERED[key] = hit
        content, content_type, disposition = hit
        return HttpResponse(content, content_type=content_type, headers={"Content-Disposition": disposition})


class DocsView(SpectacularSwaggerSplitView):
    """``GET /api/v1/docs/``: the offline Swagger UI over ``SchemaView``, readable as the schema is."""

    def get_permissions(self) -> list[Any]:
        return contract_permissions()
