"""The whole suite as a leak detector: every response Django serves during the tests (test client, API
client and the live server the browser tests use) and every log record is searched for the tests'
endpoint API keys; a test during which one appears fails (at its teardown), naming where.

The keys are the ones the tests use (:data:`TEST_KEYS`) plus every key any test stores with
``Deployment.set_api_key`` during the session. Cheap: a substring search of each body and header
for a dozen short strings. Not covered: Celery worker subprocesses' own logs (the integration tests
start real workers whose output is not this process's logging).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

#: Endpoint API keys written into the tests (grep tests for api_key / set_api_key / SECRET).
TEST_KEYS = frozenset(
    {
        "sk-abcdef0123456789xyz",
        "sk-fleet-SECRET-4f9a2c",
        "sk-fleet-SECRET-77e1d0",
        "sk-live-0123456789abcdefghij",
        "sk-live-abcdefghijklmnop0123",
        "sk-live-endpoint-key-42",
        "sk-new-key-xyz",
        "sk-page-secret",
        "sk-rotate-me-0123456789",
        "sk-secret-do-not-leak-0123456789",
        "sk-wrong-key-99",
    }
)
#: Shorter strings would match by chance.
MIN_KEY_CHARS = 8


class SecretScanner:
    """Collects the keys in use and what was found where (thread-safe: the live server has its own)."""

    def __init__(self) -> None:
        self.keys: set[str] = set(TEST_KEYS)
        self.findings: list[str] = []
        self._lock = threading.Lock()

    def add_key(self, key: str | None) -> None:
        if key and len(key) >= MIN_KEY_CHARS:
            with self._lock:
                self.keys.add(key)

    def scan(self, where: str, text: str | bytes) -> None:
        if not text:
            return
        with self._lock:
            keys = list(self.keys)
        for key in keys:
            needle = key.encode() if isinstance(text, bytes) else key
            if needle in text:
                with self._lock:
                    self.findings.append(f"{key!r} in {where}")

    def scan_response(self, request, response) -> None:
        where = f"the response to {request.method} {request.path}"
        for name, value in response.items():
            self.scan(f"{where} (header {name})", f"{name}: {value}")
        if not getattr(response, "streaming", False):
            self.scan(where, response.content)


class _LogScan(logging.Handler):
    def __init__(self, scanner: SecretScanner) -> None:
        super().__init__(level=logging.DEBUG)
        self.scanner = scanner

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not format: its raw parts
            text = f"{record.msg} {record.args}"
        if record.exc_info and record.exc_info[1] is not None:
            text += f" {record.exc_info[1]!r}"
        self.scanner.scan(f"a log record of {record.name}", text)


SCANNER = SecretScanner()


def install(monkeypatch_scope: pytest.MonkeyPatch) -> None:
    """Wrap Django's request handling (every handler: test clients and the live server) and
    ``Deployment.set_api_key``; once per session."""
    from django.core.handlers.base import BaseHandler

    from fleet.models import Deployment

    get_response = BaseHandler.get_response
    set_api_key = Deployment.set_api_key

    def scanned_get_response(self, request):
        response = get_response(self, request)
        SCANNER.scan_response(request, response)
        return response

    def recording_set_api_key(self, key, *args, **kwargs):
        SCANNER.add_key(key)
        return set_api_key(self, key, *args, **kwargs)

    monkeypatch_scope.setattr(BaseHandler, "get_response", scanned_get_response)
    monkeypatch_scope.setattr(Deployment, "set_api_key", recording_set_api_key)


LOG_HANDLER = _LogScan(SCANNER)


@pytest.fixture(scope="session", autouse=True)
def _secret_scan_session() -> Iterator[SecretScanner]:
    """Installs the scan after Django is set up (its LOGGING replaces the root logger's handlers)."""
    import django

    django.setup()
    patcher = pytest.MonkeyPatch()
    install(patcher)
    yield SCANNER
    logging.getLogger().removeHandler(LOG_HANDLER)
    patcher.undo()


@pytest.fixture(autouse=True)
def _no_secret_leaked(_secret_scan_session: SecretScanner) -> Iterator[None]:
    """Fails the test during which a key appeared in a response or a log record."""
    root = logging.getLogger()
    if LOG_HANDLER not in root.handlers:  # (again: a test or a Celery app may reconfigure logging)
        root.addHandler(LOG_HANDLER)
    start = len(_secret_scan_session.findings)
    yield
    found = _secret_scan_session.findings[start:]
    if found:
        del _secret_scan_session.findings[start:]
        pytest.fail("API key leaked: " + "; ".join(sorted(set(found))[:5]), pytrace=False)
