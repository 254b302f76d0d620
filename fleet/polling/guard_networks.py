"""The guard's address rules: which networks polled endpoints may live in, and which are always refused.

See :mod:`fleet.polling.guard` for the rules as a whole; :func:`address_refusal` is the verdict on one
address, IPv6 addresses embedding an IPv4 one included.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Networks polled endpoints may live in unless the caller says otherwise: loopback only (a demo or a
#: test endpoint on this machine). Production lists its serving networks (FLEETCAP_POLL_ALLOWED_NETWORKS):
#: allowing whole private ranges would let anyone who registers an endpoint probe every internal host.
DEFAULT_ALLOWED_NETWORKS: tuple[str, ...] = ("127.0.0.0/8", "::1/128")

#: Ports refused on loopback unless the caller says otherwise (``loopback_refused_ports``), with what
#: they are: PostgreSQL's and Redis's default ports, the database and broker fleetcap runs with. A
#: poller on the machine of its own database or broker must not be pointed at them; engines on this
#: machine (``make run``'s demo on 8100, the tests' fake servers on ephemeral ports) use other ports.
#: The Django side adds this installation's own ports (its database, broker, cache and web server:
#: ``fleet.egress``).
DEFAULT_LOOPBACK_REFUSED_PORTS: Mapping[int, str] = {
    5432: "PostgreSQL's default port",
    6379: "Redis's default port",
}

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


def parse_refused_ports(ports: Mapping[int, str] | Iterable[int | str] | None) -> dict[int, str]:
    """Loopback ports to refuse, each with what it is: a mapping port -> description, or ports alone
    (ints, or strings such as ``"5432, 6379"``); None gives :data:`DEFAULT_LOOPBACK_REFUSED_PORTS`,
    empty refuses none. Raises ValueError on an entry that is not a port number."""
    if ports is None:
        ports = DEFAULT_LOOPBACK_REFUSED_PORTS
    if isinstance(ports, str):
        ports = [part for part in ports.replace(",", " ").split() if part]
    items = ports.items() if isinstance(ports, Mapping) else ((port, "") for port in ports)
    parsed = {int(port): str(what) for port, what in items}
    if any(not 0 < port < 65536 for port in parsed):
        raise ValueError(f"not a TCP port number: {sorted(parsed)}")
    return parsed


def is_loopback(ip: IPAddress) -> bool:
    """Whether a connection to ``ip`` stays on this machine: a loopback address, or an IPv6 address
    embedding one (IPv4-mapped ``::ffff:127.0.0.1`` and the other embeddings, judged as refusing
    errs: the socket may go there)."""
    if ip.is_loopback:
        return True
    return isinstance(ip, ipaddress.IPv6Address) and any(v4.is_loopback for _, v4 in _embedded_ipv4(ip))


def loopback_port_refusal(address: str | IPAddress, port: int | None, refused_ports: Mapping[int, str]) -> str | None:
    """Why port ``port`` of ``address`` may not be contacted (a loopback address on a port of
    ``refused_ports``), or None when it may."""
    if port is None or port not in refused_ports:
        return None
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
    if not is_loopback(ip):
        return None
    what = refused_ports[port] or "kept for fleetcap's own services"
    return f"port {port} of this machine ({ip}) is refused: {what}"


def _describe(allowed: tuple[IPNetwork, ...]) -> str:
    return ", ".join(str(net) for net in allowed) or "none"
