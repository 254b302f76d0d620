"""The guard's URL checks and name resolution: static URL rules, resolving a host, checking its addresses.

:func:`check_url` is the registration-time check; the connect-time check (:mod:`fleet.polling.guard_transport`)
uses :func:`resolve_in_thread` and :func:`check_addresses` at every connect.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future

from yarl import URL

from .guard_networks import (
    IPAddress,
    IPNetwork,
    address_refusal,
    loopback_port_refusal,
    parse_networks,
    parse_refused_ports,
)


class UrlRefused(ValueError):
    """The URL, or an address its host resolves to, is refused by the guard.

    ``reason`` is a sentence a person can act on; it never contains header values.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


#: A host name as resolved (IDNA-encoded): letters, digits, dots, hyphens, underscores.
_HOST_NAME = re.compile(r"[A-Za-z0-9._-]+")


def parse_url(url: str) -> URL:
    """Parse with yarl (aiohttp's parser, the one that will send the request) and apply the static rules."""
    try:
        parsed = URL(url)
    except (TypeError, ValueError) as exc:
        raise UrlRefused(f"not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise UrlRefused(f"scheme {parsed.scheme or '(none)'!r} refused: only http and https are allowed")
    if not parsed.raw_host:
        raise UrlRefused("the URL has no host")
    if parsed.raw_user is not None or parsed.raw_password is not None:
        raise UrlRefused("credentials in the URL are refused: set the endpoint's API key instead")
    if parsed.raw_query_string or parsed.raw_fragment or "?" in url or "#" in url:
        # No engine needs one (the poller appends its routes to the base URL), and a key put there
        # would be stored and shown in plain text: keys go in the write-only API key.
        raise UrlRefused("a query string or fragment in the URL is refused: set the endpoint's API key instead")
    if ip_literal(parsed.host or "") is None and not _HOST_NAME.fullmatch(parsed.raw_host):
        raise UrlRefused("not a valid URL: the host is not a host name or an IP address")
    return parsed


def parse_ports(ports: Iterable[int | str] | None) -> frozenset[int]:
    """Allowed TCP ports from ints or strings (``"8000, 30000"`` too); empty or None: any port.

    Raises ValueError on an entry that is not a port number (a bad setting fails at start-up)."""
    if ports is None:
        return frozenset()
    if isinstance(ports, str):
        ports = [part for part in ports.replace(",", " ").split() if part]
    parsed = frozenset(int(port) for port in ports)
    if any(not 0 < port < 65536 for port in parsed):
        raise ValueError(f"not a TCP port number: {sorted(parsed)}")
    return parsed


def check_port(parsed: URL, allowed_ports: frozenset[int]) -> None:
    """Raise :class:`UrlRefused` when the URL's port (its scheme's default when none) is not allowed.

    The URL's port is the port every connect goes to: redirects are never followed."""
    port = parsed.port
    if allowed_ports and port not in allowed_ports:
        shown = ", ".join(str(p) for p in sorted(allowed_ports))
        raise UrlRefused(f"port {port} is not one the poller may reach ({shown})")


def ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve_in_thread(host: str, port: int) -> Future[list[IPAddress]]:
    """``host``'s addresses from the system resolver, in a daemon thread: a resolver that hangs is
    left behind in it, never waited for (as a thread pool's worker would be, at shutdown).

    The future fails with ``OSError`` (``socket.gaierror``) when the name does not resolve.
    """
    future: Future[list[IPAddress]] = Future()
    future.set_running_or_notify_cancel()  # a running future cannot be cancelled: the thread always settles it

    def work() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
            if not found:
                raise socket.gaierror(f"{host!r} resolved to no address")
            future.set_result(list(dict.fromkeys(found)))
        except (OSError, ValueError) as exc:
            future.set_exception(exc if isinstance(exc, OSError) else socket.gaierror(str(exc)))

    threading.Thread(target=work, name="fleet-poll-resolve", daemon=True).start()
    return future


def resolve(host: str, port: int, timeout_s: float | None = None) -> list[IPAddress]:
    """Resolve ``host`` to its addresses (IP literals are returned as they are), waiting at most
    ``timeout_s`` seconds. Raises ``OSError`` (``socket.gaierror`` or ``TimeoutError``) when it fails.
    """
    literal = ip_literal(host)
    if literal is not None:
        return [literal]
    try:
        return resolve_in_thread(host, port).result(timeout_s)
    except TimeoutError:
        raise TimeoutError(f"resolving {host!r} took longer than {timeout_s:.2f} s") from None


def check_addresses(
    host: str,
    addresses: list[IPAddress],
    allowed: tuple[IPNetwork, ...],
    port: int | None = None,
    loopback_refused: Mapping[int, str] | None = None,
) -> None:
    """Raise :class:`UrlRefused` when any of ``host``'s resolved addresses is refused, or is a
    loopback address and ``port`` one of ``loopback_refused`` (port -> what it is; None: none)."""
    for ip in addresses:
        why = address_refusal(ip, allowed) or loopback_port_refusal(ip, port, loopback_refused or {})
        if why:
            shown = "" if ip_literal(host) is not None else f"{host!r} resolves to {ip}; "
            raise UrlRefused(f"{shown}{why}")


def check_url(
    url: str,
    allowed_networks: Iterable[str | IPNetwork] | None = None,
    *,
    allowed_ports: Iterable[int | str] | None = None,
    loopback_refused_ports: Mapping[int, str] | Iterable[int | str] | None = None,
    resolve_host: bool = True,
    timeout_s: float = 5.0,
) -> None:
    """Registration-time check of an endpoint's base URL; raises :class:`UrlRefused` with a reason.

    Applies the scheme, host, credential, query and port rules (``allowed_ports``: None or empty, any
    port), then (``resolve_host``) resolves the host and
    checks every address it resolves to; an unresolvable host is refused too, and so is a loopback
    address on one of ``loopback_refused_ports`` (None: ``DEFAULT_LOOPBACK_REFUSED_PORTS``). Polling
    repeats the address checks at every connect, so passing here is necessary, not sufficient.
    ``timeout_s`` bounds the name resolution, in seconds.
    """
    allowed = parse_networks(allowed_networks)
    ports = parse_ports(allowed_ports)
    refused = parse_refused_ports(loopback_refused_ports)
    parsed = parse_url(url)
    check_port(parsed, ports)
    port = parsed.port  # yarl gives http's and https's default ports
    literal = ip_literal(parsed.host or "")
    if literal is not None:
        check_addresses(str(literal), [literal], allowed, port, refused)
        return
    if not resolve_host:
        return
    host = parsed.raw_host or ""
    try:
        addresses = resolve(host, port or 0, timeout_s)
    except OSError as exc:
        raise UrlRefused(f"the host {host!r} does not resolve ({os_error_text(exc)})") from None
    check_addresses(host, addresses, allowed, port, refused)


def os_error_text(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
