"""drf-spectacular postprocessing: every operation documents the error answers it can give, each
with the one error body (``Error``; ``fleet.api.errors``)."""

from __future__ import annotations

from typing import Any

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
