"""The outbound-request guard: URL rules, address rules (checked at connect time), redirects,
size cap, deadline, and secrets that never leak."""

from __future__ import annotations

import asyncio
import gzip
import http.server
import logging
import socket
import threading
import time

import pytest

from fleet.polling.fakeserver import FakeEngineServer
from fleet.polling.guard import (
    DEFAULT_ALLOWED_NETWORKS,
    DEFAULT_LOOPBACK_REFUSED_PORTS,
    UrlRefused,
    address_refusal,
    check_url,
    fetch,
    fetch_async,
    is_loopback,
    parse_networks,
    parse_refused_ports,
    redact,
)

SECRET = "sk-fleet-SECRET-4f9a2c"
AUTH = {"Authorization": f"Bearer {SECRET}"}
EVERYTHING = ["0.0.0.0/0", "::/0"]


@pytest.fixture
def server():
    baseline = {t.ident for t in threading.enumerate()}
    with FakeEngineServer("vllm", drip_interval_s=0.05) as srv:
        yield srv
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        leftover = [t for t in threading.enumerate() if t.ident not in baseline]
        if not leftover:
            break
        time.sleep(0.02)
    assert not leftover, leftover


# -- URL rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/", "file:///etc/passwd", "gopher://127.0.0.1:70/", "javascript:alert(1)", "127.0.0.1:8000"],
)
def test_only_http_and_https(url):
    with pytest.raises(UrlRefused, match=r"scheme|host"):
        check_url(url)


def test_credentials_in_url_refused_and_not_echoed():
    with pytest.raises(UrlRefused) as info:
        check_url(f"http://user:{SECRET}@127.0.0.1:8000/")
    assert SECRET not in str(info.value)
    result = fetch(f"http://user:{SECRET}@127.0.0.1:8000/")
    assert result.error == "refused" and SECRET not in repr(result)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "http://127.8.9.10/", "http://[::1]:8000"])
def test_default_networks_allow_loopback(url):
    check_url(url)


@pytest.mark.parametrize(
    "url", ["http://10.1.2.3:8000/", "https://192.168.1.5", "http://172.16.0.9", "http://[fd12::1]/"]
)
def test_default_networks_refuse_private_ranges_until_listed(url):
    """Loopback only by default: an operator lists the serving networks (FLEETCAP_POLL_ALLOWED_NETWORKS)."""
    with pytest.raises(UrlRefused, match="outside the allowed networks"):
        check_url(url)
    check_url(url, ["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12", "fc00::/7"])


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("169.254.169.254", "link-local"),  # AWS, GCP, Azure metadata
        ("169.254.0.1", "link-local"),
        ("fe80::1", "link-local"),
        ("fd00:ec2::254", "AWS"),  # inside fc00::/7, which an operator may allow
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.100.100.200", "carrier-grade NAT"),  # Alibaba metadata
        ("0.0.0.0", "this network"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),  # NAT64 of the metadata address
        ("::ffff:169.254.169.254", "169.254.169.254"),  # IPv4-mapped
        ("::ffff:100.64.0.1", "100.64.0.1"),
        ("2002:a9fe:a9fe::1", "169.254.169.254"),  # 6to4
    ],
)
def test_always_refused_even_when_everything_is_allowed(address, words):
    reason = address_refusal(address, parse_networks(EVERYTHING))
    assert reason and words in reason and "always refused" in reason
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(UrlRefused, match="always refused"):
        check_url(f"http://{host}/", EVERYTHING)
    assert fetch(f"http://{host}/", allowed_networks=EVERYTHING, timeout_s=0.5).error == "refused"


def test_public_address_refused_by_default():
    with pytest.raises(UrlRefused, match="outside the allowed networks"):
        check_url("http://8.8.8.8/")
    check_url("http://8.8.8.8/", ["8.8.8.0/24"])


def test_default_networks_constant_can_be_passed_as_is():
    assert address_refusal("127.0.0.1", DEFAULT_ALLOWED_NETWORKS) is None
    assert address_refusal("10.0.0.1", DEFAULT_ALLOWED_NETWORKS)
    assert address_refusal("8.8.8.8", DEFAULT_ALLOWED_NETWORKS)


def test_mapped_loopback_is_judged_by_its_ipv4():
    assert address_refusal("::ffff:127.0.0.1") is None
    assert "outside" in address_refusal("::ffff:127.0.0.1", ["10.0.0.0/8", "::/0"])


def test_nat64_of_a_public_address_needs_both_networks():
    assert "outside" in address_refusal("64:ff9b::808:808", ["64:ff9b::/96"])
    assert address_refusal("64:ff9b::808:808", ["64:ff9b::/96", "8.8.8.0/24"]) is None


def test_bad_network_setting_fails_loudly():
    with pytest.raises(ValueError):
        parse_networks(["10.0.0.0/33"])
    assert parse_networks("10.0.0.0/8, 127.0.0.0/8")[1].prefixlen == 8


# -- resolution is checked, at connect time ------------------------------------------------------


def test_hostname_resolving_to_refused_address(server):
    """localhost resolves to loopback; without loopback in the allowed networks it is refused,
    at registration and at fetch time, before any connection is made."""
    only_private = ["10.0.0.0/8", "192.168.0.0/16"]
    with pytest.raises(UrlRefused, match="'localhost' resolves to"):
        check_url(f"http://localhost:{server.port}/", only_private)
    result = fetch(f"http://localhost:{server.port}/v1/models", allowed_networks=only_private, timeout_s=0.5)
    assert result.error == "refused" and "localhost" in result.message
    assert server.request_count == 0
    assert fetch(f"http://localhost:{server.port}/v1/models", timeout_s=2).ok


def test_connects_to_the_checked_address_with_host_header_preserved(server, monkeypatch):
    real = socket.getaddrinfo
    calls = []

    def fake_getaddrinfo(host, port, *args, **kwargs):
        if host == "fleet-test.internal":
            calls.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    result = fetch(f"http://fleet-test.internal:{server.port}/v1/models", timeout_s=2)
    assert result.ok, result
    assert calls == ["fleet-test.internal"]  # resolved once, by the guard
    assert server.requests[-1].host == f"fleet-test.internal:{server.port}"


def test_dns_rebinding_after_registration_is_refused(server, monkeypatch):
    """check_url() saw a private address; at poll time the name points at the metadata service."""
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1", "169.254.169.254"])

    def rebinding(host, port, *args, **kwargs):
        if host == "rebind.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    check_url(f"http://rebind.test:{server.port}/")
    result = fetch(f"http://rebind.test:{server.port}/v1/models", timeout_s=1)
    assert result.error == "refused" and "169.254.169.254" in result.message


def test_one_refused_address_among_several_refuses_the_host(monkeypatch):
    def mixed(host, port, *args, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", mixed)
    with pytest.raises(UrlRefused, match=r"169\.254\.169\.254"):
        check_url("http://mixed.test/", ["10.0.0.0/8"])


def test_every_socket_is_checked_even_when_resolution_is_bypassed(server, monkeypatch):
    """The socket factory checks the address of each connect attempt itself: a resolver that let a
    refused address through (or an IP literal, which aiohttp never resolves) still gets no socket."""
    from fleet.polling import guard_transport

    async def unchecked(self, host, port=0, family=0):
        return [{"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET, "proto": 0,
                 "flags": socket.AI_NUMERICHOST}]  # fmt: skip

    monkeypatch.setattr(guard_transport.GuardedResolver, "resolve", unchecked)
    result = fetch(f"http://bypass.test:{server.port}/v1/models", allowed_networks=["10.0.0.0/8"], timeout_s=1)
    assert result.error == "refused" and "127.0.0.1 is outside the allowed networks" in result.message
    assert server.request_count == 0
    assert fetch(f"http://bypass.test:{server.port}/v1/models", timeout_s=2).ok


def test_a_hanging_resolver_ends_at_the_deadline(monkeypatch):
    real = socket.getaddrinfo

    def slow(host, port, *args, **kwargs):
        if host == "slow.test":
            time.sleep(1.5)
        return real("127.0.0.1" if host == "slow.test" else host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    start = time.monotonic()
    result = fetch("http://slow.test:8000/v1/models", timeout_s=0.3)
    assert result.error == "dns" and "did not resolve" in result.message
    assert time.monotonic() - start < 1.0  # not held up by the resolver's thread


def test_a_header_that_could_split_the_request_is_not_sent_or_echoed(server):
    result = fetch(f"{server.url}/v1/models", headers={"Authorization": f"Bearer {SECRET}\r\nX-Evil: 1"}, timeout_s=1)
    assert result.error == "protocol" and SECRET not in repr(result)
    assert server.request_count == 0


@pytest.mark.parametrize("url", ["http://exa mple.test/", "http://127.0.0.1:99999/", "http:///v1/models"])
def test_malformed_urls_are_refused(url):
    with pytest.raises(UrlRefused):
        check_url(url)
    assert fetch(url, timeout_s=0.5).error == "refused"


def test_unresolvable_host():
    with pytest.raises(UrlRefused, match="does not resolve"):
        check_url("http://no-such-host.invalid/")
    assert fetch("http://no-such-host.invalid/", timeout_s=2).error == "dns"
    check_url("http://no-such-host.invalid/", resolve_host=False)


# -- responses ----------------------------------------------------------------------------------


def test_ok_response(server):
    result = fetch(f"{server.url}/v1/models", timeout_s=2)
    assert result.ok and result.status == 200 and b"meta-llama" in result.body
    assert result.elapsed_s > 0 and "json" in result.content_type


def test_redirect_is_not_followed(server):
    server.set_behaviour("redirect")
    result = fetch(f"{server.url}/v1/models", timeout_s=1)
    assert result.error == "redirect" and result.status == 302
    assert "169.254.169.254" in result.message and "not followed" in result.message
    assert server.request_count == 1


def test_size_cap_streams_and_cuts(server):
    server.set_behaviour("huge_body")
    start = time.monotonic()
    result = fetch(f"{server.url}/metrics", timeout_s=5, max_bytes=1_000_000)
    assert result.error == "too_large" and len(result.body) <= 1_000_000
    assert time.monotonic() - start < 3


def test_declared_length_over_the_cap_is_refused_before_reading(server):
    result = fetch(f"{server.url}/v1/models", timeout_s=1, max_bytes=100)
    assert result.error == "too_large" and result.body == b""


def test_slow_drip_hits_the_deadline(server):
    """A byte every 50 ms never trips the read timeout; the overall deadline stops it."""
    server.set_behaviour("slow_body")
    start = time.monotonic()
    result = fetch(f"{server.url}/v1/models", timeout_s=0.5, read_timeout_s=0.4)
    elapsed = time.monotonic() - start
    assert result.error == "deadline" and "deadline" in result.message
    assert 0.45 <= elapsed < 0.5 + 1.0  # the deadline plus scheduling slack


def test_hang_times_out(server):
    server.set_behaviour("hang")
    start = time.monotonic()
    result = fetch(f"{server.url}/v1/models", timeout_s=0.5)
    assert result.error == "timeout" and result.status is None
    assert time.monotonic() - start < 0.5 + 1.0  # the timeout plus scheduling slack on a loaded machine


def test_connection_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = fetch(f"http://127.0.0.1:{port}/", timeout_s=0.5)
    assert result.error == "connect"


def test_proxy_environment_is_ignored(server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://169.254.169.254:3128")
    monkeypatch.setenv("ALL_PROXY", "http://169.254.169.254:3128")
    assert fetch(f"{server.url}/v1/models", timeout_s=2).ok


# -- secrets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["ok", "redirect", "hang", "slow_body", "huge_body", "unauthorized", "error_500"])
def test_api_key_never_in_results_messages_or_logs(server, behaviour, caplog):
    caplog.set_level(logging.DEBUG)
    server.set_behaviour(behaviour)
    result = fetch(f"{server.url}/v1/models", headers=AUTH, timeout_s=0.4, max_bytes=100_000)
    assert SECRET not in repr(result)
    assert SECRET not in caplog.text
    assert server.requests[-1].has_authorization


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/", "http://127.0.0.1:1/", "http://no-such-host.invalid/", "ftp://127.0.0.1/"],
)
def test_api_key_never_in_transport_errors(url, caplog):
    caplog.set_level(logging.DEBUG)
    result = fetch(url, headers=AUTH, timeout_s=0.5)
    assert result.error and SECRET not in repr(result) and SECRET not in caplog.text


def test_redact():
    assert redact(f"boom Bearer {SECRET} boom", [SECRET]) == "boom Bearer [redacted] boom"
    assert redact("abc", ["ab"]) == "abc"  # too short to be a secret worth hunting


# -- content encoding -------------------------------------------------------------------------


class _EncodedHandler(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the class's ``body`` under its ``encoding`` (ignoring Accept-Encoding)."""

    body, encoding = b"", "gzip"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Encoding", self.encoding)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def encoded_server():
    def serve(body: bytes, encoding: str) -> str:
        handler = type("FakeEngineHandler", (_EncodedHandler,), {"body": body, "encoding": encoding})
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/metrics"

    servers: list = []
    yield serve
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def test_a_gzip_body_is_decoded(encoded_server):
    text = b"vllm:num_requests_running 3\n" * 100
    result = fetch(encoded_server(gzip.compress(text), "gzip"), timeout_s=2)
    assert result.ok and result.body == text


def test_a_compressed_body_is_capped_after_decoding(encoded_server):
    """A small compressed body that inflates past the cap (a zip bomb) is cut at the cap."""
    bomb = gzip.compress(b"0" * 5_000_000)
    assert len(bomb) < 10_000
    result = fetch(encoded_server(bomb, "gzip"), timeout_s=2, max_bytes=100_000)
    assert result.error == "too_large" and len(result.body) == 100_000


def test_an_unknown_encoding_is_a_protocol_error(encoded_server):
    result = fetch(encoded_server(b"\x00\x01", "br"), timeout_s=2)
    assert result.error == "protocol" and "br" in result.message


# -- malformed replies ----------------------------------------------------------------------


@pytest.fixture
def raw_server():
    """A TCP server on 127.0.0.1 that answers every connection with the given bytes, then closes."""

    def serve(reply: bytes) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def run() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)
                    conn.sendall(reply)

        threading.Thread(target=run, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}/metrics"

    listeners: list[socket.socket] = []
    yield serve
    for listener in listeners:
        listener.close()


@pytest.mark.parametrize(
    "reply",
    [b"", b"SSH-2.0-OpenSSH_9.6\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
    ids=["closed", "not-http", "short-body", "bad-chunk"],
)  # fmt: skip
def test_a_malformed_reply_is_a_protocol_error(raw_server, reply, caplog):
    caplog.set_level(logging.DEBUG)
    result = fetch(raw_server(reply), headers=AUTH, timeout_s=2)
    assert result.error == "protocol", result
    assert SECRET not in repr(result) and SECRET not in caplog.text


# -- many requests on one event loop -----------------------------------------------------------


def test_hanging_requests_time_out_together_beside_answered_ones():
    """What a poll cycle relies on: on one loop, 20 hanging requests end at their one deadline,
    concurrently, and 20 answered ones are not held up by them."""
    with FakeEngineServer("vllm") as ok, FakeEngineServer("vllm", behaviour="hang") as hung:

        async def everything():
            requests = [fetch_async(f"{hung.url}/v1/models", timeout_s=0.5) for _ in range(20)]
            requests += [fetch_async(f"{ok.url}/v1/models", timeout_s=0.5) for _ in range(20)]
            return await asyncio.gather(*requests)

        start = time.monotonic()
        results = asyncio.run(everything())
        elapsed = time.monotonic() - start
    assert [r.error for r in results[:20]] == ["timeout"] * 20
    assert all(r.ok for r in results[20:])
    assert max(r.elapsed_s for r in results[20:]) < 0.5
    assert elapsed < 0.5 + 1.0  # one deadline, not twenty


def test_the_sync_wrapper_works_inside_a_running_event_loop(server):
    """Called from a thread that already runs a loop (Playwright's sync API does), fetch() runs its
    own loop in a helper thread instead of failing."""

    async def inside():
        return fetch(f"{server.url}/v1/models", timeout_s=2)

    assert asyncio.run(inside()).ok


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8000/?api_key=sk-abcdef0123456789xyz", "http://127.0.0.1:8000?token=x",
     "http://127.0.0.1:8000/#key=x", "http://127.0.0.1:8000/?"],
)  # fmt: skip
def test_a_query_string_or_fragment_is_refused_and_never_echoed(url):
    with pytest.raises(UrlRefused, match="query string or fragment") as info:
        check_url(url)
    assert "sk-abcdef0123456789xyz" not in str(info.value)
    result = fetch(url, timeout_s=0.5)
    assert result.error == "refused" and "sk-abcdef0123456789xyz" not in repr(result)


def test_only_the_allowed_ports_are_reached(server):
    """The URL's port (its scheme's default when none) must be listed; empty or None: any port."""
    other = server.port + 1 if server.port < 65535 else 1
    with pytest.raises(UrlRefused, match=f"port {server.port} is not one the poller may reach"):
        check_url(server.url, allowed_ports=[other])
    with pytest.raises(UrlRefused, match="port 80 is not"):
        check_url("http://127.0.0.1/", allowed_ports="8000, 30000")
    check_url("https://127.0.0.1/", allowed_ports=[443])
    check_url(server.url, allowed_ports=[server.port])
    check_url(server.url, allowed_ports=[])
    refused = fetch(f"{server.url}/v1/models", allowed_ports=[other], timeout_s=1)
    assert refused.error == "refused" and server.requests == []  # no connection was made
    assert fetch(f"{server.url}/v1/models", allowed_ports=[server.port], timeout_s=1).ok
    with pytest.raises(ValueError, match="port"):
        fetch(f"{server.url}/v1/models", allowed_ports=[70000])


# -- Loopback ports of fleetcap's own services (issue 29) --------------------------------------


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:5432/", "http://127.0.0.1:6379", "http://127.8.9.10:6379/", "http://[::1]:5432",
     "http://[::ffff:127.0.0.1]:6379", "http://localhost:5432"],
)  # fmt: skip
def test_the_guard_refuses_the_postgresql_and_redis_ports_on_loopback_by_default(url):
    """Before: with no ports configured, every loopback port was reachable, Redis and PostgreSQL included."""
    assert set(DEFAULT_LOOPBACK_REFUSED_PORTS) == {5432, 6379}
    port = url.rsplit(":", 1)[1].strip("/")
    refusal = f"port {port} of this machine .* is refused: (PostgreSQL|Redis)'s default port"
    with pytest.raises(UrlRefused, match=refusal):
        check_url(url)
    result = fetch(f"{url.rstrip('/')}/v1/models", timeout_s=1)
    assert result.error == "refused" and f"port {port} of this machine" in result.message


def test_the_refused_ports_are_only_refused_on_loopback():
    """Another host's 6379 is judged by the allowed networks and ports alone (production lists its ports)."""
    check_url("http://10.0.0.5:6379/", ["10.0.0.0/8"])
    check_url("http://127.0.0.1:8100/")  # make run's demo endpoint
    check_url("http://127.0.0.1:6379/", loopback_refused_ports=[])  # the caller may refuse none


def test_refused_ports_are_checked_at_every_connect(server, monkeypatch):
    """The socket factory checks the port of each connect attempt: a name that resolves to loopback, an
    IP literal, and a resolver bypassed all get no socket on a refused port."""
    from fleet.polling import guard_transport

    refused = {server.port: "the test's own service"}
    for url in (f"http://127.0.0.1:{server.port}/v1/models", f"http://localhost:{server.port}/v1/models"):
        result = fetch(url, loopback_refused_ports=refused, timeout_s=1)
        assert result.error == "refused" and f"port {server.port} of this machine" in result.message, result
        assert "the test's own service" in result.message
    with pytest.raises(UrlRefused, match="the test's own service"):
        check_url(f"http://localhost:{server.port}/", loopback_refused_ports=refused)

    async def unchecked(self, host, port=0, family=0):
        return [{"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET, "proto": 0,
                 "flags": socket.AI_NUMERICHOST}]  # fmt: skip

    monkeypatch.setattr(guard_transport.GuardedResolver, "resolve", unchecked)
    result = fetch(f"http://bypass.test:{server.port}/v1/models", loopback_refused_ports=refused, timeout_s=1)
    assert result.error == "refused" and f"port {server.port} of this machine (127.0.0.1)" in result.message
    assert server.request_count == 0
    assert fetch(f"http://127.0.0.1:{server.port}/v1/models", timeout_s=2).ok  # not refused by default


def test_refused_ports_parse_and_loopback_is_unwrapped():
    assert parse_refused_ports(None) == dict(DEFAULT_LOOPBACK_REFUSED_PORTS)
    assert parse_refused_ports("8000, 9000") == {8000: "", 9000: ""}
    assert parse_refused_ports({8000: "the web server"}) == {8000: "the web server"}
    assert parse_refused_ports([]) == {}
    with pytest.raises(ValueError, match="port"):
        parse_refused_ports([0])
    with pytest.raises(ValueError):
        fetch("http://127.0.0.1:8100/", loopback_refused_ports=["x"])
    import ipaddress

    for address in ("127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"):
        assert is_loopback(ipaddress.ip_address(address)), address
    for address in ("10.0.0.1", "::ffff:10.0.0.1", "fd00::1"):
        assert not is_loopback(ipaddress.ip_address(address)), address
