"""The guard's hooks into aiohttp: a resolver and a socket factory that check addresses, the TLS
contexts, and the session one guarded request runs in.

aiohttp does the HTTP (its C parser); the guard decides where a socket may go. Two checks, both at
connect time: :class:`GuardedResolver` resolves the host (in a daemon thread) and refuses it when any
address it resolves to is refused, and the socket factory checks the address of every socket aiohttp
opens, IP literals included (aiohttp does not ask the resolver for those). The URL is never
rewritten, so the ``Host`` header, TLS SNI and the certificate check keep the URL's hostname.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import os
import socket
import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from .guard_networks import IPNetwork
from .guard_urls import check_addresses, os_error_text, resolve_in_thread

#: Bytes read from the socket at a time (aiohttp's read buffer).
READ_CHUNK = 65536


class ResolveFailed(OSError):
    """The host name did not resolve."""


@functools.lru_cache(maxsize=8)
def ssl_context(verify: bool | str) -> ssl.SSLContext:
    """One TLS context per ``verify`` value (building one costs ~15 ms, which would skew latencies).

    ``True``: the system's trust store (OpenSSL's default paths, which ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` can move); a path: that CA bundle file (or folder of hashed CA files);
    ``False``: no verification at all (a private test endpoint only). Raises ``OSError`` or
    ``ssl.SSLError`` when the bundle cannot be read.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the hostname
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if verify is True:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    elif os.path.isdir(verify):
        context.load_verify_locations(capath=verify)
    else:
        context.load_verify_locations(cafile=verify)
    return context


class GuardedResolver(AbstractResolver):
    """Resolves a host and checks every address; one refused address refuses the host.

    Raises :class:`~fleet.polling.guard_urls.UrlRefused` (a ValueError, which aiohttp passes through
    unwrapped) or :class:`ResolveFailed` (an OSError, which aiohttp wraps as a DNS error).
    ``resolved`` says whether a resolution finished (to tell a slow resolver from a slow connect).
    """

    def __init__(self, allowed: tuple[IPNetwork, ...], loopback_refused: Mapping[int, str]) -> None:
        self._allowed = allowed
        self._loopback_refused = loopback_refused
        self.resolved = False

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_UNSPEC) -> list[ResolveResult]:
        try:
            addresses = await asyncio.wrap_future(resolve_in_thread(host, port))
        except OSError as exc:
            raise ResolveFailed(f"the host {host!r} does not resolve ({os_error_text(exc)})") from None
        self.resolved = True
        check_addresses(host, addresses, self._allowed, port, self._loopback_refused)
        return [
            {"hostname": host, "host": str(ip), "port": port, "proto": 0, "flags": socket.AI_NUMERICHOST,
             "family": socket.AF_INET6 if ip.version == 6 else socket.AF_INET}
            for ip in addresses
        ]  # fmt: skip

    async def close(self) -> None:
        """Nothing to release: every resolution has its own thread."""


def _socket_factory(allowed: tuple[IPNetwork, ...], loopback_refused: Mapping[int, str]) -> Any:
    """A socket factory for aiohttp that refuses a socket to an address (and port) the guard refuses:
    the check on the address each connect attempt actually goes to."""

    def make(addr_info: tuple[Any, ...]) -> socket.socket:
        family, type_, proto, _canonical, sockaddr = addr_info
        address = ipaddress.ip_address(sockaddr[0])
        check_addresses(str(address), [address], allowed, int(sockaddr[1]), loopback_refused)
        return socket.socket(family, type_, proto)

    return make


class GuardedConnector(aiohttp.TCPConnector):
    """aiohttp's TCP connector with the guarded resolver and socket factory: one connection per
    request, no DNS cache, connect attempts one address at a time (a refused address stops them).

    ``connected`` says whether a connection was made (aiohttp's tracing would tell too, but sends
    its signals on every request and every body chunk, a measurable share of the guard's CPU).
    """

    def __init__(self, allowed: tuple[IPNetwork, ...], loopback_refused: Mapping[int, str]) -> None:
        self.resolver = GuardedResolver(allowed, loopback_refused)
        self.connected = False
        super().__init__(
            resolver=self.resolver,
            socket_factory=_socket_factory(allowed, loopback_refused),
            use_dns_cache=False,
            force_close=True,
            happy_eyeballs_delay=None,
        )

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        connection = await super().connect(req, traces, timeout)
        self.connected = True
        return connection


def guarded_session(
    allowed: tuple[IPNetwork, ...],
    loopback_refused: Mapping[int, str],
    *,
    connect_timeout_s: float | None,
    read_timeout_s: float | None,
) -> aiohttp.ClientSession:
    """A session for one guarded request on a :class:`GuardedConnector`: no cookies, no proxies or
    ``.netrc`` from the environment, bodies left encoded (the guard decodes them under its cap).

    ``connect_timeout_s`` bounds one connect attempt, ``read_timeout_s`` one wait for bytes
    (seconds; None: only the caller's deadline). The caller's ``asyncio.timeout`` is the deadline.
    """
    # ceil_threshold: aiohttp rounds longer timeouts up to whole seconds; these are exact.
    timeout = aiohttp.ClientTimeout(sock_connect=connect_timeout_s, sock_read=read_timeout_s, ceil_threshold=1e9)
    return aiohttp.ClientSession(
        connector=GuardedConnector(allowed, loopback_refused),
        timeout=timeout,
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
        trust_env=False,
        read_bufsize=READ_CHUNK,
    )
