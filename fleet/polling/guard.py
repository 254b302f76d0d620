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
import functools
import ipaddress
import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

logger = logging.getLogger("fleet.polling")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Networks polled endpoints may live in unless the caller says otherwise: loopback and private.
DEFAULT_ALLOWED_NETWORKS: tuple[str, ...] = (
    "127.0.0.0/8",
    "::1/128",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "fc00::/7",
)

#: Refused whatever ``allowed_networks`` says, with the reason shown to the person registering.
ALWAYS_REFUSED: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(net), why)
    for net, why in (
        ("169.254.0.0/16", "link-local (cloud metadata service)"),
        ("fe80::/10", "IPv6 link-local"),
        ("fd00:ec2::/32", "the AWS IPv6 metadata range (fd00:ec2::254)"),
        ("100.64.0.0/10", "carrier-grade NAT space (also Alibaba's metadata 100.100.100.200)"),
        ("0.0.0.0/8", "'this network' (0.0.0.0 reaches local services)"),
        ("::/128", "the unspecified address"),
        ("192.0.0.0/24", "IETF protocol assignments (also Oracle's metadata 192.0.0.192)"),
        ("224.0.0.0/4", "multicast"),
        ("ff00::/8", "IPv6 multicast"),
        ("255.255.255.255/32", "broadcast"),
    )
)

_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

#: Header names whose values are secrets: redacted from every message.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"})

REDACTED = "[redacted]"


class UrlRefused(ValueError):
    """The URL, or an address its host resolves to, is refused by the guard.

    ``reason`` is a sentence a person can act on; it never contains header values.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _ResolveFailed(httpcore.ConnectError):
    """The host name did not resolve (or not before the deadline)."""


class _DeadlineExceeded(httpcore.ReadTimeout):
    """The overall per-request deadline expired during a socket operation."""


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
# Address rules
# --------------------------------------------------------------------------------------------


def parse_networks(networks: Iterable[str | IPNetwork] | None) -> tuple[IPNetwork, ...]:
    """Turn CIDR strings (or networks) into networks; None gives :data:`DEFAULT_ALLOWED_NETWORKS`.

    Raises ValueError on a malformed entry, so a bad setting fails loudly at start-up.
    """
    if networks is None:
        networks = DEFAULT_ALLOWED_NETWORKS
    if isinstance(networks, str):
        networks = [part for part in networks.replace(",", " ").split() if part]
    if isinstance(networks, tuple) and all(
        isinstance(n, ipaddress.IPv4Network | ipaddress.IPv6Network) for n in networks
    ):
        return networks  # already parsed
    parsed = []
    for net in networks:
        if isinstance(net, ipaddress.IPv4Network | ipaddress.IPv6Network):
            parsed.append(net)
        else:
            parsed.append(ipaddress.ip_network(str(net).strip(), strict=False))
    return tuple(parsed)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """IPv4 addresses an IPv6 address carries, with the embedding's name."""
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if ip.ipv4_mapped is not None:
        found.append(("IPv4-mapped", ip.ipv4_mapped))
    if ip in _NAT64_WELL_KNOWN or ip in _NAT64_LOCAL_USE:
        # RFC 6052: with a /96 prefix the IPv4 address is the last 32 bits. Local-use prefixes
        # may be shorter, but checking the last 32 bits errs on the side of refusing.
        found.append(("NAT64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    if ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    if ip.teredo is not None:
        found.append(("Teredo", ip.teredo[1]))
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:
        found.append(("IPv4-compatible", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    return found


def _refused_range(ip: IPAddress) -> str | None:
    for net, why in ALWAYS_REFUSED:
        if ip.version == net.version and ip in net:
            return why
    return None


def _allowed(ip: IPAddress, allowed: tuple[IPNetwork, ...]) -> bool:
    return any(ip.version == net.version and ip in net for net in allowed)


def address_refusal(address: str | IPAddress, allowed_networks: Iterable[str | IPNetwork] | None = None) -> str | None:
    """Why ``address`` may not be contacted, or None when it may.

    An address must not be in :data:`ALWAYS_REFUSED` and must be in ``allowed_networks``.
    An IPv6 address embedding an IPv4 address is judged by the IPv4 address too: IPv4-mapped and
    IPv4-compatible addresses by the IPv4 address alone (the socket goes there), translation
    prefixes (NAT64, 6to4, Teredo) by both the IPv6 address and the embedded IPv4 address.
    """
    allowed = parse_networks(allowed_networks)
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
    why = _refused_range(ip)
    if why:
        return f"{ip} is {why}: always refused"
    embedded = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else []
    for kind, v4 in embedded:
        why = _refused_range(v4)
        if why:
            return f"{ip} embeds {v4} ({kind}), which is {why}: always refused"
    direct = [v4 for kind, v4 in embedded if kind in ("IPv4-mapped", "IPv4-compatible")]
    if direct:
        if not all(_allowed(v4, allowed) for v4 in direct):
            return f"{ip} embeds {direct[0]}, which is outside the allowed networks ({_describe(allowed)})"
        return None
    if not _allowed(ip, allowed):
        return f"{ip} is outside the allowed networks ({_describe(allowed)})"
    for kind, v4 in embedded:
        if not _allowed(v4, allowed):
            return f"{ip} embeds {v4} ({kind}), which is outside the allowed networks ({_describe(allowed)})"
    return None


def _describe(allowed: tuple[IPNetwork, ...]) -> str:
    return ", ".join(str(net) for net in allowed) or "none"


# --------------------------------------------------------------------------------------------
# URL checks and resolution
# --------------------------------------------------------------------------------------------


def _parse_url(url: str) -> httpx.URL:
    """Parse with httpx's parser (the one that will send the request) and apply the static rules."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise UrlRefused(f"not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise UrlRefused(f"scheme {parsed.scheme or '(none)'!r} refused: only http and https are allowed")
    if not parsed.host:
        raise UrlRefused("the URL has no host")
    if parsed.userinfo:
        raise UrlRefused("credentials in the URL are refused: set the endpoint's API key instead")
    return parsed


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int, timeout_s: float | None = None) -> list[IPAddress]:
    """Resolve ``host`` to its addresses (IP literals are returned as they are).

    Uses the system resolver in a daemon thread so that ``timeout_s`` (seconds) bounds the wait.
    Raises ``OSError`` (``socket.gaierror`` or ``TimeoutError``) when it fails.
    """
    literal = _ip_literal(host)
    if literal is not None:
        return [literal]
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            box["error"] = exc

    if timeout_s is None:
        work()
    else:
        worker = threading.Thread(target=work, name="fleet-poll-resolve", daemon=True)
        worker.start()
        worker.join(max(timeout_s, 0.0))
        if worker.is_alive():
            raise TimeoutError(f"resolving {host!r} took longer than {timeout_s:.2f} s")
    if "error" in box:
        raise box["error"]
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _canon, sockaddr in box.get("infos", []):
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise socket.gaierror(f"{host!r} resolved to no address")
    return addresses


def check_addresses(host: str, addresses: list[IPAddress], allowed: tuple[IPNetwork, ...]) -> None:
    """Raise :class:`UrlRefused` when any of ``host``'s resolved addresses is refused."""
    for ip in addresses:
        why = address_refusal(ip, allowed)
        if why:
            shown = "" if _ip_literal(host) is not None else f"{host!r} resolves to {ip}; "
            raise UrlRefused(f"{shown}{why}")


def check_url(
    url: str,
    allowed_networks: Iterable[str | IPNetwork] | None = None,
    *,
    resolve_host: bool = True,
    timeout_s: float = 5.0,
) -> None:
    """Registration-time check of an endpoint's base URL; raises :class:`UrlRefused` with a reason.

    Applies the scheme, host and credential rules, then (``resolve_host``) resolves the host and
    checks every address it resolves to; an unresolvable host is refused too. Polling repeats the
    address check at every connect, so passing here is necessary, not sufficient.
    ``timeout_s`` bounds the name resolution, in seconds.
    """
    allowed = parse_networks(allowed_networks)
    parsed = _parse_url(url)
    host = parsed.host
    literal = _ip_literal(host)
    if literal is not None:
        check_addresses(host, [literal], allowed)
        return
    if not resolve_host:
        return
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        addresses = resolve(host, port, timeout_s)
    except OSError as exc:
        raise UrlRefused(f"the host {host!r} does not resolve ({_os_error_text(exc)})") from None
    check_addresses(host, addresses, allowed)


def _os_error_text(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


# --------------------------------------------------------------------------------------------
# The guarded network backend (below httpx, above the socket)
# --------------------------------------------------------------------------------------------


class _Deadline:
    """One request's overall deadline (monotonic seconds) and the clamp it applies to each wait."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def clamp(self, timeout: float | None) -> tuple[float, bool]:
        """The timeout to use for one socket operation, and whether the deadline is what binds."""
        remaining = self.remaining()
        if timeout is None or remaining < timeout:
            return max(remaining, 0.0), True
        return timeout, False


class _GuardedStream(httpcore.NetworkStream):
    """Wraps a socket stream so every read and write is bounded by the request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        limit, binding = self._deadline.clamp(timeout)
        if limit <= 0:
            raise _DeadlineExceeded("the request's deadline expired")
        try:
            return self._inner.read(max_bytes, limit)
        except httpcore.ReadTimeout as exc:
            if binding:
                raise _DeadlineExceeded("the request's deadline expired") from exc
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        limit, _binding = self._deadline.clamp(timeout)
        if limit <= 0:
            raise httpcore.WriteTimeout("the request's deadline expired")
        self._inner.write(buffer, limit)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        limit, _binding = self._deadline.clamp(timeout)
        if limit <= 0:
            raise httpcore.ConnectTimeout("the request's deadline expired")
        return _GuardedStream(self._inner.start_tls(ssl_context, server_hostname, limit), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Resolves the host itself, checks every address, then connects to a checked address.

    httpcore passes the URL's host here and keeps using it for SNI and certificate checks, so
    only the socket's destination changes: it is an address we have just checked.
    """

    def __init__(self, allowed: tuple[IPNetwork, ...], deadline: _Deadline) -> None:
        self._allowed = allowed
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()
        self.connected_to: str | None = None

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        limit, _binding = self._deadline.clamp(timeout)
        try:
            addresses = resolve(host, port, limit)
        except OSError as exc:
            raise _ResolveFailed(f"the host {host!r} does not resolve ({_os_error_text(exc)})") from None
        check_addresses(host, addresses, self._allowed)  # raises UrlRefused, before any connect
        last: Exception | None = None
        for ip in addresses:
            limit, _binding = self._deadline.clamp(timeout)
            if limit <= 0:
                raise httpcore.ConnectTimeout("the request's deadline expired while connecting")
            try:
                stream = self._inner.connect_tcp(
                    str(ip), port, timeout=limit, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            self.connected_to = str(ip)
            return _GuardedStream(stream, self._deadline)
        assert last is not None
        raise last

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        raise UrlRefused("unix sockets are refused")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@functools.lru_cache(maxsize=8)
def _ssl_context(verify: bool | str) -> ssl.SSLContext:
    """One TLS context per ``verify`` value (building one costs ~15 ms, which would skew latencies)."""
    return httpx.create_ssl_context(verify=verify, trust_env=False)


class _GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with the connection pool swapped for one on the guarded backend.

    Relies on ``HTTPTransport`` keeping its pool in ``_pool`` (true for httpx 0.23 to 0.28); the
    guard tests fail loudly if that ever changes, because resolution would no longer be checked.
    """

    def __init__(self, backend: _GuardedBackend, verify: bool | str) -> None:
        ssl_context = _ssl_context(verify)
        super().__init__(verify=ssl_context, trust_env=False, retries=0)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=1,
            max_keepalive_connections=0,
            http1=True,
            http2=False,
            retries=0,
            network_backend=backend,
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
