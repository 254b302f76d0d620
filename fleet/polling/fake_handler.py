"""The fake server's HTTP request handler: routes per engine and acts out each behaviour.

Holds the behaviours (:data:`BEHAVIOURS`, described in :mod:`fleet.polling.fakeserver`) and what the
handler records of each request (:class:`RecordedRequest`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from .fakeserver import FakeEngineServer

BEHAVIOURS = (
    "ok",
    "restart",
    "hang",
    "slow_body",
    "huge_body",
    "redirect",
    "wrong_model",
    "unauthorized",
    "loading",
    "engine_dead",
    "error_500",
    "garbage",
    "garbage_metrics",
)
DEFAULT_API_KEY = "fake-key"
HUGE_BODY_BYTES = 40 * 1024 * 1024


@dataclass(frozen=True)
class RecordedRequest:
    """What the fake server saw of one request (never the key itself)."""

    method: str
    path: str
    host: str
    has_authorization: bool


class FakeEngineHandler(BaseHTTPRequestHandler):
    server_version = "fake-engine/1"
    timeout = 10  # seconds: a client that stops reading cannot pin a handler thread forever

    @property
    def fake(self) -> FakeEngineServer:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests and demos do not want a line per request on stderr."""

    # -- responses ------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def _json(self, status: int, payload: Any, **headers: str) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", **headers)

    def _error(self, status: int, message: str, kind: str) -> None:
        self._json(status, {"error": {"code": status, "message": message, "type": kind}})

    def _drip(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) * 50))
        self.end_headers()
        try:
            for i in range(len(body) * 50):
                if self.fake.wait_stop(self.fake.drip_interval_s):
                    return
                self.wfile.write(body[i % len(body) : i % len(body) + 1])
                self.wfile.flush()
        except OSError:
            return

    def _huge(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        self.end_headers()  # no Content-Length: the body ends when the connection closes
        chunk = b"# padding " + b"x" * (64 * 1024 - 11) + b"\n"
        try:
            for _ in range(HUGE_BODY_BYTES // len(chunk)):
                if self.fake._stop.is_set():
                    return
                self.wfile.write(chunk)
        except OSError:
            return

    # -- routing ----------------------------------------------------------------------------------
    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/_fake/behaviour":
            wanted = parse_qs(parts.query).get("set", [""])[0]
            try:
                self.fake.set_behaviour(wanted)
            except ValueError as exc:
                return self._json(400, {"error": str(exc), "behaviours": list(BEHAVIOURS)})
            return self._json(200, {"behaviour": self.fake.behaviour})
        return self._error(404, "Not Found", "not_found_error")

    def do_GET(self) -> None:
        fake = self.fake
        path = urlsplit(self.path).path
        auth = self.headers.get("Authorization", "")
        fake.requests.append(RecordedRequest("GET", path, self.headers.get("Host", ""), bool(auth)))
        if path == "/_fake/behaviour":
            return self._json(200, {"behaviour": fake.behaviour, "behaviours": list(BEHAVIOURS)})
        behaviour = fake.behaviour
        route = self._route(path)
        if route is None:
            return self._error(404, "Not Found", "not_found_error")
        content_type = "text/plain; version=0.0.4; charset=utf-8" if route == "metrics" else "application/json"

        if behaviour == "hang":
            fake.wait_stop(fake.hang_s)  # never answers within any sane timeout; released by stop()
            return
        if behaviour == "slow_body":
            return self._drip(self._body(route, path) or b"{}", content_type)
        if behaviour == "huge_body":
            return self._huge(content_type)
        if behaviour == "redirect":
            return self._send(302, b"", "text/plain", Location="http://169.254.169.254/latest/meta-data/")
        if behaviour == "error_500":
            return self._send(500, b"Internal Server Error", "text/plain")
        if behaviour == "loading":
            return self._error(503, "Loading model", "unavailable_error")
        if route == "models" and (fake.api_key or behaviour == "unauthorized"):
            expected = fake.api_key or DEFAULT_API_KEY
            if auth != f"Bearer {expected}":
                return self._error(401, "Unauthorized", "authentication_error")
        if behaviour == "engine_dead" and route == "health":
            return self._send(503 if fake.engine.startswith("vllm") else 500, b"", "text/plain")
        if behaviour == "garbage" and route in ("models", "metrics"):
            return self._send(200, b"<html><body>Welcome to nginx!</body></html>", "text/html")
        if behaviour == "garbage_metrics" and route == "metrics":
            return self._send(200, b"vllm:num_requests_running{model_name= 3 {{{\n", content_type)
        if route == "metrics" and not fake.metrics_enabled:
            if fake.engine == "llamacpp":
                return self._error(
                    501,
                    "This server does not support metrics endpoint. Start it with `--metrics`",
                    "not_supported_error",
                )
            return self._error(404, "Not Found", "not_found_error")
        body = self._body(route, path)
        if body is None:
            return self._error(404, "Not Found", "not_found_error")
        return self._send(200, body, content_type)

    def _route(self, path: str) -> str | None:
        engine = self.fake.engine
        if path == "/v1/models":
            return "models"
        if path == "/metrics" and engine != "openai":
            return "metrics"
        if (engine in ("vllm", "vllm-v0", "sglang") and path == "/health") or (
            engine == "sglang" and path == "/health_generate"
        ):
            return "health"
        if engine == "llamacpp" and path in ("/health", "/v1/health"):
            return "health"
        if engine in ("vllm", "vllm-v0") and path == "/version":
            return "version"
        if engine == "llamacpp" and path == "/props":
            return "props"
        return None

    def _body(self, route: str, path: str) -> bytes | None:
        fake = self.fake
        if route == "models":
            other = "some-org/another-model" if fake.behaviour == "wrong_model" else None
            return json.dumps(fake.models_payload(other)).encode()
        if route == "metrics":
            return fake.metrics_text()
        if route == "health":
            return b'{"status":"ok"}' if fake.engine == "llamacpp" else b""
        if route == "version":
            return b'{"version":"0.10.1"}'
        if route == "props":
            return json.dumps(
                {
                    "default_generation_settings": {"n_ctx": 16384},
                    "total_slots": 4,
                    "model_path": f"/models/{fake.model_id}",
                }
            ).encode()
        return None
