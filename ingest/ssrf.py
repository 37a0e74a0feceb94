"""The SSRF guard: decide whether a URL may be fetched, and to which IP address.

Only http(s) on ports 80 and 443, unless an allow rule names the port. The host is resolved once and
every address checked against `SPECIAL_PURPOSE` (IANA's special-purpose registries, every block not
globally reachable, multicast, cloud metadata), an explicit table so the answer does not depend on
the Python version's `is_private`. IPv4-mapped and 6to4 addresses are checked by the IPv4 they
embed; Teredo and NAT64 are refused; integer spellings (`2130706433`, `127.1`) mean their address. A
private address passes only by `KB_FETCH_ALLOWED_PRIVATE`, a metadata address never.

A refusal names the rule, never the resolved address, so the guard is no oracle for internal DNS.
The fetcher connects to the returned address without resolving again, so DNS rebinding cannot follow
the check.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Callable, Iterable
from urllib.parse import urlsplit

from ingest.errors import DnsFailed, FetchBlocked, InvalidUrl, SchemeRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]
DEFAULT_PORTS = {"http": 80, "https": 443}

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.170.23",
        "100.100.100.200",
        "fd00:ec2::254",
        "192.0.0.192",
    )
)
# (block, what it is); blocks of the IANA special-purpose registries that are not globally
# reachable (https://www.iana.org/assignments/iana-ipv4-special-registry and -ipv6-), plus multicast
SPECIAL_PURPOSE: tuple[tuple[Network, str], ...] = tuple(
    (ipaddress.ip_network(block), label)
    for block, label in (
        ("0.0.0.0/8", "'this network' (RFC 791)"),
        ("10.0.0.0/8", "private-use (RFC 1918)"),
        ("100.64.0.0/10", "shared address space (RFC 6598)"),
        ("127.0.0.0/8", "loopback (RFC 1122)"),
        ("169.254.0.0/16", "link-local (RFC 3927)"),
        ("172.16.0.0/12", "private-use (RFC 1918)"),
        ("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
        ("192.0.2.0/24", "documentation (RFC 5737)"),
        ("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
        ("192.168.0.0/16", "private-use (RFC 1918)"),
        ("198.18.0.0/15", "benchmarking (RFC 2544)"),
        ("198.51.100.0/24", "documentation (RFC 5737)"),
        ("203.0.113.0/24", "documentation (RFC 5737)"),
        ("224.0.0.0/4", "multicast (RFC 5771)"),
        ("240.0.0.0/4", "reserved (RFC 1112)"),
        ("255.255.255.255/32", "limited broadcast (RFC 919)"),
        ("::/128", "unspecified (RFC 4291)"),
        ("::1/128", "loopback (RFC 4291)"),
        ("64:ff9b::/96", "NAT64 (RFC 6052)"),
        ("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
        ("100::/64", "discard-only (RFC 6666)"),
        ("100:0:0:1::/64", "dummy prefix (RFC 9780)"),
        ("2001::/23", "IETF protocol assignments (RFC 2928)"),
        ("2001::/32", "Teredo (RFC 4380)"),
        ("2001:2::/48", "benchmarking (RFC 5180)"),
        ("2001:db8::/32", "documentation (RFC 3849)"),
        ("3fff::/20", "documentation (RFC 9637)"),
        ("5f00::/16", "segment routing SIDs (RFC 9602)"),
        ("fc00::/7", "unique-local (RFC 4193)"),
        ("fe80::/10", "link-local (RFC 4291)"),
        ("fec0::/10", "deprecated site-local (RFC 3879)"),
        ("ff00::/8", "multicast (RFC 4291)"),
        ("::/96", "deprecated IPv4-compatible (RFC 4291)"),
    )
)
# blocks inside the ones above that the registries mark globally reachable
GLOBALLY_REACHABLE = tuple(
    ipaddress.ip_network(block)
    for block in (
        "192.0.0.9/32",
        "192.0.0.10/32",
        "2001:1::1/128",
        "2001:1::2/128",
        "2001:1::3/128",
        "2001:3::/32",
        "2001:4:112::/48",
        "2001:20::/28",
        "2001:30::/28",
    )
)
ALWAYS_REFUSED = ("Teredo", "NAT64")  # the embedded address is not where the packets go


@dataclass(frozen=True)
class AllowRule:
    """One `KB_FETCH_ALLOWED_PRIVATE` entry: a host name or a network, and which ports.
    `port` None means the default ports (80, 443); "*" any port."""

    host: str = ""
    network: Network | None = None
    port: int | str | None = None

    def matches(self, host: str, address: IPAddress) -> bool:
        if self.host:
            return host == self.host
        return (
            self.network is not None
            and address.version == self.network.version
            and address in self.network
        )

    def allows_port(self, port: int) -> bool:
        return (
            self.port == "*"
            or self.port == port
            or (self.port is None and port in DEFAULT_PORTS.values())
        )


def parse_allow_rules(entries: Iterable[str]) -> tuple[AllowRule, ...]:
    """`wiki.corp`, `wiki.corp:8443`, `10.20.0.0/16`, `10.20.0.0/16:*`, `127.0.0.1:*`,
    `[::1]:*`, `[fd00::/8]:443`; a bare IPv6 address or network takes the default ports."""
    rules = []
    for raw in entries:
        entry = raw.strip().lower()
        if not entry:
            continue
        target, port = entry, None
        if entry.startswith("["):
            close = entry.find("]")
            if close < 0:
                raise ValueError(f"{raw!r}: an IPv6 entry is written in brackets, e.g. '[::1]:*'")
            target, rest = entry[1:close], entry[close + 1 :]
            if rest:
                if not rest.startswith(":"):
                    raise ValueError(f"{raw!r}: expected ':port' after ']'")
                port = _port(rest[1:], raw)
        elif entry.count(":") == 1:
            target, port_text = entry.split(":")
            port = _port(port_text, raw)
        try:
            rules.append(AllowRule(network=ipaddress.ip_network(target, strict=False), port=port))
        except ValueError:
            if not target or "/" in target or ":" in target:
                raise ValueError(f"{raw!r} is neither a host name nor a network") from None
            rules.append(AllowRule(host=target.rstrip("."), port=port))
    return tuple(rules)


def _port(text: str, raw: str) -> int | str:
    if text == "*":
        return "*"
    if text.isdigit() and 1 <= int(text) <= 65535:
        return int(text)
    raise ValueError(f"{raw!r}: the port must be a number from 1 to 65535 or '*'")


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
        raise DnsFailed(f"Cannot resolve host {host!r}: {exc}", details={"host": host}) from exc
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
    """What special-purpose block `address` is in ("cloud metadata address", "private-use
    (RFC 1918)", ...), or None when it is globally reachable."""
    if address in METADATA_ADDRESSES:
        return "cloud metadata address"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return _embedded(address.ipv4_mapped, "IPv4-mapped")
        if address.sixtofour is not None:
            return _embedded(address.sixtofour, "6to4")
    if any(address.version == block.version and address in block for block in GLOBALLY_REACHABLE):
        return None
    found = [
        label
        for block, label in SPECIAL_PURPOSE
        if address.version == block.version and address in block
    ]
    if not found:
        return None
    return next((label for label in found if label.startswith(ALWAYS_REFUSED)), found[0])


def _embedded(ipv4: ipaddress.IPv4Address, kind: str) -> str | None:
    reason = is_forbidden(ipv4)
    return f"{kind} address embedding a {reason} address" if reason else None


def _parts(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL with a host, or raise FetchBlocked."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidUrl(f"Malformed URL {url!r}: {exc}") from exc
    scheme = (parts.scheme or "").lower()
    if scheme not in DEFAULT_PORTS:
        raise SchemeRefused(
            f"Only http and https URLs can be fetched, not {url!r}.",
            details={"url": url},
        )
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise InvalidUrl(f"The URL {url!r} has no host.")
    return scheme, host, port or DEFAULT_PORTS[scheme]


def check_unresolved(url: str, *, allowed: Iterable[AllowRule] = ()) -> None:
    """What `resolve_target` decides about `url` without asking DNS: the scheme, the host, an IP
    address written in the URL, and a port no allow rule could open. Saving a source asks this
    only: a name is resolved when it is fetched, so a save tells nothing of whether an internal name
    resolves, or to which kind of address."""
    _, host, port = _parts(url)
    allowed = tuple(allowed)
    if parse_ip_literal(host) is not None:
        resolve_target(url, allowed=allowed)  # an address, not a name: no DNS is asked
        return
    if port not in DEFAULT_PORTS.values() and not any(
        rule.allows_port(port) and (rule.network is not None or rule.host == host)
        for rule in allowed
    ):
        _refuse(
            url,
            host,
            f"uses port {port}; only 80 and 443 are fetched unless an entry such as "
            f"'{allow_entry(host, port)}' allows it",
            entry=allow_entry(host, port),
        )


def resolve_target(
    url: str, *, allowed: Iterable[AllowRule] = (), resolver: Resolver = system_resolver
) -> Target:
    """Check `url` and return the address to connect to, or raise FetchBlocked."""
    scheme, host, port = _parts(url)
    allowed = tuple(allowed)

    literal = parse_ip_literal(host)
    addresses = (
        [literal]
        if literal
        else [ipaddress.ip_address(a.split("%")[0]) for a in resolver(host, port)]
    )
    if not addresses:
        raise DnsFailed(f"Host {host!r} resolved to no address.")
    for address in addresses:
        rules = [rule for rule in allowed if rule.matches(host, address)]
        reason = is_forbidden(address)
        if reason == "cloud metadata address" or (reason and reason.startswith(ALWAYS_REFUSED)):
            _refuse(url, host, f"resolves to a {reason}, which is never fetched", entry="")
        if reason and not rules:
            _refuse(url, host, f"resolves to a {reason} address", entry=allow_entry(host, port))
        if port not in DEFAULT_PORTS.values() and not any(rule.allows_port(port) for rule in rules):
            _refuse(
                url,
                host,
                f"uses port {port}; only 80 and 443 are fetched unless an entry such as "
                f"'{allow_entry(host, port)}' allows it",
                entry=allow_entry(host, port),
            )
    return Target(url=url, scheme=scheme, host=host, port=port, address=str(addresses[0]))


def allow_entry(host: str, port: int) -> str:
    """The `KB_FETCH_ALLOWED_PRIVATE` entry that lets `host` through on `port`: the host itself
    (an IPv6 address in brackets), with the port unless it is 80 or 443."""
    name = f"[{host}]" if ":" in host else host
    return name if port in DEFAULT_PORTS.values() else f"{name}:{port}"


def _refuse(url: str, host: str, rule: str, *, entry: str) -> None:
    """Raise FetchBlocked; `entry` is the allow-list entry that would let the URL through ("" when
    none may), in the message and in `details["allow_entry"]`."""
    hint = f" It can be allowed with KB_FETCH_ALLOWED_PRIVATE={entry!r}." if entry else ""
    raise FetchBlocked(
        f"Refusing to fetch {url!r}: {host!r} {rule}.{hint}",
        details={"url": url, "host": host, "rule": rule, "allow_entry": entry},
    )
