"""The one gate every outbound polling request goes through.

Rules (docs/polling.md, "Guard"):

* only ``http`` and ``https`` URLs with a host and without credentials in them;
* the host is resolved **by us, at connect time**, every resolved address is checked, and the
  socket is then opened to the checked address itself, so a DNS answer that changes between the
  check and the connect (DNS rebinding) cannot slip through. TLS keeps the URL's hostname for SNI
  and certificate checks, and the ``Host`` header is the URL's, because the URL is never rewritten:
  only the guarded network backend below httpx knows the IP;
* an address must lie in ``allowed_networks`` (default: loopback and private ranges) and never in
  the always-refused ranges (link-local and cloud metadata, CGNAT, "this network", multicast);
  an IPv6 address embedding an IPv4 one (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) is
  judged by the embedded IPv4 as well;
* redirects are never followed: a 3xx is returned as the error ``redirect``;
* connect and read timeouts, plus one overall deadline per request that also bounds every single
  socket operation, so a slow-drip body cannot outlive it;
* the body is streamed and cut at ``max_bytes`` (error ``too_large``);
* proxies and ``.netrc`` from the environment are ignored (``trust_env=False``): a proxy would make
  the connect-time check meaningless;
* header values (the API key) never appear in a message, a log line or a result.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpcore
import httpx

from .guard_networks import (
    ALWAYS_REFUSED,
    DEFAULT_ALLOWED_NETWORKS,
    IPAddress,
    IPNetwork,
    address_refusal,
    parse_networks,
)
from .guard_transport import _Deadline, _GuardedBackend, _GuardedTransport, _ResolveFailed
from .guard_urls import UrlRefused, _parse_url, check_addresses, check_url, resolve

__all__ = [
    "ALWAYS_REFUSED",
    "DEFAULT_ALLOWED_NETWORKS",
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
    "parse_networks",
    "redact",
    "resolve",
]

logger = logging.getLogger("fleet.polling")

#: Header names whose values are secrets: redacted from every message.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"})

REDACTED = "[redacted]"


@dataclass(frozen=True)
class FetchResult:
    """What one guarded GET returned.

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


def _classify(exc: BaseException, got_headers: bool, timeout_s: float) -> tuple[str, str]:
    """Map a transport exception to an error kind and a message (secrets removed by the caller)."""
    chain = _cause_chain(exc)
    refused = next((e for e in chain if isinstance(e, UrlRefused)), None)
    if refused is not None:
        return "refused", f"refused by the address guard: {refused.reason}"
    resolve_failed = next((e for e in chain if isinstance(e, _ResolveFailed)), None)
    if resolve_failed is not None:
        return "dns", str(resolve_failed)
    if isinstance(exc, httpx.TimeoutException):
        if got_headers:
            return "deadline", f"the body did not finish within the {timeout_s:g} s deadline"
        if isinstance(exc, httpx.ConnectTimeout):
            return "timeout", f"no connection within the time limit ({timeout_s:g} s deadline)"
        return "timeout", f"no response within the time limit ({timeout_s:g} s deadline)"
    if isinstance(exc, httpx.ConnectError):
        if any(isinstance(e, ssl.SSLError | ssl.CertificateError) for e in chain):
            return "tls", f"TLS failed: {exc}"
        return "connect", f"cannot connect: {exc or 'connection failed'}"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.LocalProtocolError | httpx.DecodingError):
        return "protocol", f"malformed HTTP exchange: {exc}"
    return "network", f"{type(exc).__name__}: {exc}"


def fetch(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 5.0,
    max_bytes: int = 4 * 1024 * 1024,
    allowed_networks: Iterable[str | IPNetwork] | None = None,
    connect_timeout_s: float | None = None,
    read_timeout_s: float | None = None,
    verify: bool | str = True,
) -> FetchResult:
    """GET ``url`` through the guard. Never raises for network trouble: see ``FetchResult.error``.

    ``timeout_s`` is the overall deadline in seconds (resolution, connect, TLS, headers and body);
    ``connect_timeout_s`` and ``read_timeout_s`` (seconds, default ``timeout_s``) bound a single
    connect or a single wait for bytes, and are themselves cut to what is left of the deadline.
    ``max_bytes`` caps the (decoded) body in bytes. ``verify`` is True, False or a CA bundle path.
    Raises ValueError only for a malformed ``allowed_networks``.
    """
    allowed = parse_networks(allowed_networks)
    start = time.monotonic()
    deadline = _Deadline(start + timeout_s)
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
        parsed = _parse_url(url)
    except UrlRefused as exc:
        return result(None, b"", "refused", f"refused by the address guard: {exc.reason}")

    backend = _GuardedBackend(allowed, deadline)
    timeout = httpx.Timeout(
        connect=min(connect_timeout_s or timeout_s, timeout_s),
        read=min(read_timeout_s or timeout_s, timeout_s),
        write=min(read_timeout_s or timeout_s, timeout_s),
        pool=timeout_s,
    )
    request_headers = {"Accept-Encoding": "identity", "User-Agent": "fleetcap-poller/1"}
    request_headers.update(headers or {})
    got_headers = False
    try:
        with (
            httpx.Client(
                transport=_GuardedTransport(backend, verify),
                timeout=timeout,
                follow_redirects=False,
                trust_env=False,
            ) as client,
            client.stream("GET", parsed, headers=request_headers) as response,
        ):
            got_headers = True
            status = response.status_code
            ctype = response.headers.get("content-type", "")
            if 300 <= status < 400:
                where = ""
                with contextlib.suppress(httpx.InvalidURL, ValueError):
                    where = parsed.join(response.headers.get("location", "")).host
                return result(status, b"", "redirect", f"HTTP {status} redirect to {where or 'elsewhere'} not followed")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                return result(status, b"", "too_large", f"body of {declared} bytes exceeds the {max_bytes} byte cap")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    return result(
                        status, bytes(body[:max_bytes]), "too_large", f"body exceeds the {max_bytes} byte cap"
                    )
                if deadline.remaining() <= 0:
                    return result(
                        status, bytes(body), "deadline", f"the body did not finish within the {timeout_s:g} s deadline"
                    )
            return result(status, bytes(body), None, "", ctype)
    except UrlRefused as exc:
        return result(None, b"", "refused", f"refused by the address guard: {exc.reason}")
    except httpx.HTTPError as exc:
        kind, message = _classify(exc, got_headers, timeout_s)
        return result(None, b"", kind, message)
    except (httpcore.ConnectError, httpcore.TimeoutException, OSError) as exc:  # defensive: unmapped
        kind, message = _classify(exc, got_headers, timeout_s)
        return result(None, b"", kind, message)
