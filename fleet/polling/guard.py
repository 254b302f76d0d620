"""The one gate every outbound polling request goes through: :func:`check_url` at registration,
:func:`fetch_async` (and :func:`fetch`) at poll time. The rules are in docs/polling.md ("Guard rules").

aiohttp speaks HTTP; the guard picks where its sockets may go (:mod:`fleet.polling.guard_transport`:
every address checked at connect time, IP literals and DNS answers alike, the URL never rewritten),
refuses redirects, bounds the whole request by one deadline, caps the decoded body, never reads
proxies or ``.netrc`` from the environment, and keeps header values (the API key) out of every
message, log line and result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import time
import zlib
from collections.abc import Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from .guard_networks import (
    ALWAYS_REFUSED,
    DEFAULT_ALLOWED_NETWORKS,
    DEFAULT_LOOPBACK_REFUSED_PORTS,
    IPAddress,
    IPNetwork,
    address_refusal,
    is_loopback,
    loopback_port_refusal,
    parse_networks,
    parse_refused_ports,
)
from .guard_transport import READ_CHUNK, GuardedConnector, ResolveFailed, guarded_session, ssl_context
from .guard_urls import (
    UrlRefused,
    check_addresses,
    check_port,
    check_url,
    ip_literal,
    parse_ports,
    parse_url,
    resolve,
)

__all__ = [
    "ALWAYS_REFUSED",
    "DEFAULT_ALLOWED_NETWORKS",
    "DEFAULT_LOOPBACK_REFUSED_PORTS",
    "ERROR_KINDS",
    "REDACTED",
    "SECRET_HEADERS",
    "FetchResult",
    "IPAddress",
    "IPNetwork",
    "UrlRefused",
    "address_refusal",
    "check_addresses",
    "check_url",
    "display_url",
    "fetch",
    "fetch_async",
    "is_loopback",
    "loopback_port_refusal",
    "parse_networks",
    "parse_ports",
    "parse_refused_ports",
    "redact",
    "resolve",
    "run_sync",
]

logger = logging.getLogger("fleet.polling")
T = TypeVar("T")

#: Header names whose values are secrets: redacted from every message.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"})

REDACTED = "[redacted]"


@dataclass(frozen=True)
class FetchResult:
    """What one guarded request (a GET, or a webhook's POST) returned.

    ``status`` is the HTTP status (None when no response arrived), ``body`` at most ``max_bytes``
    bytes, ``elapsed_s`` the wall time of the whole request in seconds. ``error`` is None on a
    complete response (whatever its status) or one of :data:`ERROR_KINDS`; ``message`` explains it.
    """

    url: str
    status: int | None
    body: bytes
    elapsed_s: float
    error: str | None = None
    message: str = ""
    content_type: str = ""

    @property
    def ok(self) -> bool:
        """A complete response with a 2xx status."""
        return self.error is None and self.status is not None and 200 <= self.status < 300


#: ``refused``: the guard refused the URL or a resolved address; ``dns``: the host did not resolve;
#: ``connect``: the connection was refused or the network unreachable; ``tls``: the TLS handshake
#: or certificate check failed; ``timeout``: no response (connect or headers) in time;
#: ``deadline``: the response started but its body did not finish before the deadline;
#: ``redirect``: a 3xx (never followed); ``too_large``: the body exceeded ``max_bytes``;
#: ``protocol``: a malformed HTTP exchange; ``network``: any other transport failure.
ERROR_KINDS = (
    "refused",
    "dns",
    "connect",
    "tls",
    "timeout",
    "deadline",
    "redirect",
    "too_large",
    "protocol",
    "network",
)


# --------------------------------------------------------------------------------------------
# fetch()
# --------------------------------------------------------------------------------------------


def _secrets(headers: Mapping[str, str] | None) -> list[str]:
    found: list[str] = []
    for name, value in (headers or {}).items():
        if name.lower() in SECRET_HEADERS and value:
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in ("bearer", "basic", "token"):
                found.append(token)
    return sorted(found, key=len, reverse=True)


def _url_secrets(url: str) -> list[str]:
    """Credentials embedded in a URL (refused anyway, but never to be echoed)."""
    try:
        parts = urlsplit(str(url))
        found = [parts.password or "", parts.username or ""]
    except ValueError:
        return []
    return [value for value in found if value]


def display_url(url: str, secrets: Iterable[str] = ()) -> str:
    """``url`` as safe to show or log: no credentials, no query string, secrets redacted."""
    try:
        parts = urlsplit(str(url))
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        shown = f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else str(url).split("?", 1)[0]
    except ValueError:
        shown = str(url).split("?", 1)[0].rsplit("@", 1)[-1]
    return redact(shown, secrets)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (at least 4 characters long) replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def _cause_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _classify(exc: BaseException, phase: str, timeout_s: float) -> tuple[str, str]:
    """Map an exception raised during ``phase`` (``resolve``, ``connect``, ``request`` or ``body``)
    to an error kind and a message (secrets removed by the caller; aiohttp's own messages name the
    URL with its query string, so they are never shown whole)."""
    chain = _cause_chain(exc)
    resolve_failed = next((e for e in chain if isinstance(e, ResolveFailed)), None)
    if resolve_failed is not None:
        return "dns", str(resolve_failed)
    if isinstance(exc, TimeoutError):  # the deadline, and aiohttp's connect and read timeouts
        if phase == "body":
            return "deadline", f"the body did not finish within the {timeout_s:g} s deadline"
        if phase == "resolve":
            return "dns", f"the host did not resolve within the {timeout_s:g} s deadline"
        if phase == "connect" or isinstance(exc, aiohttp.ConnectionTimeoutError):
            return "timeout", f"no connection within the time limit ({timeout_s:g} s deadline)"
        return "timeout", f"no response within the time limit ({timeout_s:g} s deadline)"
    tls = next((e for e in chain if isinstance(e, ssl.SSLError | ssl.CertificateError)), None)
    if tls is not None:
        return "tls", f"TLS failed: {tls}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connect", f"cannot connect: {_os_error(exc.os_error)}"
    if isinstance(exc, aiohttp.ClientResponseError):  # a malformed status line or header
        return "protocol", f"malformed HTTP reply: {exc.message}"
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError | zlib.error):
        return "protocol", f"malformed HTTP exchange: {exc}"
    if isinstance(exc, OSError):
        return "network", f"{type(exc).__name__}: {_os_error(exc)}"
    return "network", f"{type(exc).__name__}"


def _os_error(exc: OSError) -> str:
    """The system's words for an error number ("Connection refused"), not asyncio's wrapping of it."""
    if exc.errno:
        return os.strerror(exc.errno)
    return exc.strerror or str(exc) or type(exc).__name__


def _decoder(encoding: str) -> Any:
    """A streaming decoder for a ``Content-Encoding`` (we ask for ``identity``; a server may not listen).

    Returns None for ``identity``; raises ``zlib.error`` for an encoding we do not decode.
    """
    encoding = encoding.lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise zlib.error(f"unsupported Content-Encoding {encoding!r}")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end from synchronous code, on a new event loop: in this thread, or in
    a helper thread when this one already runs a loop (as Playwright's sync API does)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fleet-poll-sync") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def fetch(url: str, **kwargs: Any) -> FetchResult:
    """:func:`fetch_async` from synchronous code (see :func:`run_sync`)."""
    return run_sync(fetch_async(url, **kwargs))


async def fetch_async(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 5.0,
    max_bytes: int = 4 * 1024 * 1024,
    allowed_networks: Iterable[str | IPNetwork] | None = None,
    allowed_ports: Iterable[int | str] | None = None,
    loopback_refused_ports: Mapping[int, str] | Iterable[int | str] | None = None,
    connect_timeout_s: float | None = None,
    read_timeout_s: float | None = None,
    verify: bool | str = True,
    method: str = "GET",
    data: bytes | None = None,
) -> FetchResult:
    """GET ``url`` (or ``method`` with the body ``data``: a budget alert's webhook POST) through the guard.
    Never raises for network trouble: see ``FetchResult.error``.

    ``timeout_s`` is the overall deadline in seconds (resolution, connect, TLS, headers and body);
    ``connect_timeout_s`` and ``read_timeout_s`` (seconds, default: only the deadline) bound a single
    connect or a single wait for bytes. ``max_bytes`` caps the (decoded) body in bytes. ``verify`` is
    True, False or a CA bundle path. ``allowed_ports``: the TCP ports the URL may name (None or empty:
    any); ``loopback_refused_ports``: ports refused on a loopback address (port -> what it is; None:
    ``DEFAULT_LOOPBACK_REFUSED_PORTS``), checked at every connect. Raises ValueError only for a
    malformed ``allowed_networks``, ``allowed_ports`` or ``loopback_refused_ports``.
    """
    allowed = parse_networks(allowed_networks)  # at once: a malformed setting raises
    ports = parse_ports(allowed_ports)
    refused = parse_refused_ports(loopback_refused_ports)
    start = time.monotonic()
    secrets = _secrets(headers)

    def result(status: int | None, body: bytes, error: str | None, message: str, ctype: str = "") -> FetchResult:
        message = redact(message, secrets)
        elapsed = time.monotonic() - start
        if error:
            logger.info("fetch %s: %s (%s) after %.3f s", safe_url, error, message, elapsed)
        else:
            logger.debug("fetch %s: HTTP %s, %d bytes in %.3f s", safe_url, status, len(body), elapsed)
        return FetchResult(safe_url, status, body, elapsed, error, message, ctype)

    secrets += _url_secrets(url)
    safe_url = display_url(url, secrets)
    try:
        parsed = parse_url(url)
        check_port(parsed, ports)
    except UrlRefused as exc:
        return result(None, b"", "refused", f"refused by the address guard: {exc.reason}")
    request_headers = {"Accept-Encoding": "identity", "User-Agent": "fleetcap-poller/1", "Connection": "close"}
    request_headers.update(headers or {})
    if not all(value.isascii() and value.isprintable() for value in request_headers.values()):
        # Never echo the value: it may be the API key.
        return result(None, b"", "protocol", "the request could not be sent: a header is not printable ASCII")

    try:
        tls = ssl_context(verify) if parsed.scheme == "https" else None
    except (OSError, ssl.SSLError) as exc:
        return result(None, b"", "tls", f"the CA bundle {verify!r} cannot be loaded: {exc}")

    session = guarded_session(allowed, refused, connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s)
    connector: GuardedConnector = session.connector  # type: ignore[assignment]
    status, ctype, body = None, "", bytearray()
    try:
        async with (
            asyncio.timeout(timeout_s),
            session,
            session.request(
                method, parsed, data=data, headers=request_headers, ssl=tls or True, allow_redirects=False
            ) as response,
        ):
            status = response.status
            ctype = response.headers.get("Content-Type", "")
            if 300 <= status < 400:
                where = ""
                with contextlib.suppress(ValueError, TypeError):
                    where = parsed.join(URL(response.headers.get("Location", ""))).host or ""
                return result(status, b"", "redirect", f"HTTP {status} redirect to {where or 'elsewhere'} not followed")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                return result(status, b"", "too_large", f"body of {declared} bytes exceeds the {max_bytes} byte cap")
            decoder = _decoder(response.headers.get("Content-Encoding", ""))
            async for chunk in response.content.iter_chunked(READ_CHUNK):
                # A compressed body is decoded as it comes, never past the cap (no zip bomb).
                body += decoder.decompress(chunk, max_bytes + 1 - len(body)) if decoder else chunk
                if len(body) > max_bytes:
                    return result(
                        status, bytes(body[:max_bytes]), "too_large", f"body exceeds the {max_bytes} byte cap"
                    )
            return result(status, bytes(body), None, "", ctype)
    except UrlRefused as exc:
        return result(None, b"", "refused", f"refused by the address guard: {exc.reason}")
    except (TimeoutError, OSError, aiohttp.ClientError, zlib.error) as exc:
        if status is not None:
            phase = "body"
        elif connector.connected:
            phase = "request"
        else:
            phase = "connect" if connector.resolver.resolved or ip_literal(parsed.host or "") else "resolve"
        kind, message = _classify(exc, phase, timeout_s)
        return result(status if kind == "deadline" else None, bytes(body), kind, message)
