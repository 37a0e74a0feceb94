"""The SSRF guard: decide whether a URL may be fetched, and to which IP address.

Every hop of every fetch goes through `resolve_target()`: only http(s); the host is resolved
once and every address it resolves to must be public (not loopback, private, link-local,
unique-local, shared/CGNAT, multicast, unspecified, reserved or a cloud metadata address,
also when spelled as an IPv4-mapped IPv6 address or as a decimal, octal or hex integer).
The fetcher then connects to the returned address, never resolving the name again, so DNS
rebinding cannot swap in a private address after the check.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Callable, Iterable
from urllib.parse import urlsplit

from ingest.errors import FetchBlocked

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254", "192.0.0.192")
)


@dataclass(frozen=True)
class Target:
    url: str
    scheme: str
    host: str
    port: int
    address: str  # the checked IP address to connect to


def system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchBlocked(
            f"Cannot resolve host {host!r}: {exc}", code="INGEST_DNS_FAILED", details={"host": host}
        ) from exc
    return list(dict.fromkeys(info[4][0] for info in infos))


def parse_ip_literal(host: str) -> IPAddress | None:
    """Read an IP address in any spelling browsers and libc accept: dotted, IPv6, and the
    integer forms `2130706433`, `0x7f000001`, `017700000001`, `0`, `127.1`."""
    candidate = host.strip("[]")
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(candidate))
    except (OSError, ValueError):
        return None


def is_forbidden(address: IPAddress) -> str | None:
    """The reason `address` must not be fetched, or None when it is a public address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return is_forbidden(address.ipv4_mapped)
    if address in METADATA_ADDRESSES:
        return "cloud metadata address"
    for attribute, label in (
        ("is_loopback", "loopback"),
        ("is_unspecified", "unspecified"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_private", "private"),
        ("is_reserved", "reserved"),
    ):
        if getattr(address, attribute):
            return f"{label} address"
    if not address.is_global:
        return "non-public address"
    return None


def resolve_target(
    url: str,
    *,
    allowed_hosts: Iterable[str] = (),
    allowed_networks: Iterable[ipaddress._BaseNetwork] = (),
    resolver: Resolver = system_resolver,
) -> Target:
    """Check `url` and return the address to connect to, or raise FetchBlocked."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise FetchBlocked(f"Malformed URL {url!r}: {exc}", code="INGEST_URL_INVALID") from exc
    scheme = (parts.scheme or "").lower()
    if scheme not in ("http", "https"):
        raise FetchBlocked(
            f"Only http and https URLs can be fetched, not {url!r}.",
            code="INGEST_URL_SCHEME", details={"url": url},
        )
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise FetchBlocked(f"The URL {url!r} has no host.", code="INGEST_URL_INVALID")
    port = port or (443 if scheme == "https" else 80)
    allowed_hosts = {h.lower().rstrip(".") for h in allowed_hosts}
    allowed_networks = tuple(allowed_networks)

    literal = parse_ip_literal(host)
    addresses = [literal] if literal else [ipaddress.ip_address(a.split("%")[0]) for a in resolver(host, port)]
    if not addresses:
        raise FetchBlocked(f"Host {host!r} resolved to no address.", code="INGEST_DNS_FAILED")
    for address in addresses:
        reason = is_forbidden(address)
        if reason is None or host in allowed_hosts or _in_networks(address, allowed_networks):
            continue
        raise FetchBlocked(
            f"Refusing to fetch {url!r}: {host!r} is a {reason} ({address}). "
            "Private targets can be allowed with KB_FETCH_ALLOWED_PRIVATE.",
            details={"url": url, "host": host, "address": str(address), "reason": reason},
        )
    chosen = addresses[0]
    return Target(url=url, scheme=scheme, host=host, port=port, address=str(chosen))


def _in_networks(address: IPAddress, networks: tuple) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return any(address.version == net.version and address in net for net in networks)
