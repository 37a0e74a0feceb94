"""SSRF edges: the IANA special-purpose registries, 6to4, Teredo and NAT64, ports, allow rules
that are still resolved, and refusals that name the rule, never the resolved address."""

from __future__ import annotations

import ipaddress

import pytest

from ingest.errors import FetchBlocked
from ingest.ssrf import is_forbidden, parse_allow_rules, resolve_target


@pytest.mark.parametrize(
    "address",
    [
        "192.0.0.8",
        "192.0.0.100",
        "192.0.0.169",
        "192.0.0.170",
        "192.0.2.1",
        "198.18.0.1",
        "198.51.100.7",
        "203.0.113.9",
        "100.64.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "0.1.2.3",
        "192.88.99.1",
        "2002:a9fe:a9fe::",
        "2002:7f00:1::",
        "2002:c0a8:101::1",  # 6to4 embedding 169.254.169.254, 127.0.0.1, 192.168.1.1
        "fec0::1",
        "2001::1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # site-local, Teredo
        "64:ff9b::a00:1",
        "64:ff9b::808:808",
        "64:ff9b:1::1",  # NAT64, even of a public address
        "100::1",
        "2001:2::1",
        "2001:db8::1",
        "3fff::1",
        "5f00::1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
    ],
)
def test_special_purpose_addresses_are_refused(address):
    assert is_forbidden(ipaddress.ip_address(address)) is not None
    with pytest.raises(FetchBlocked):
        resolve_target(f"http://[{address}]/" if ":" in address else f"http://{address}/")


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "192.0.0.9",
        "192.31.196.1",
        "2606:4700::1111",
        "2002:5db8:d822::1",
        "2001:4:112::1",
    ],
)
def test_globally_reachable_addresses_pass(address):
    assert is_forbidden(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("port", [22, 25, 6379, 8080, 5432])
def test_only_ports_80_and_443_unless_an_entry_names_the_port(port):
    public = lambda host, p: ["93.184.216.34"]  # noqa: E731
    with pytest.raises(FetchBlocked, match=f"port {port}"):
        resolve_target(f"http://docs.example.com:{port}/", resolver=public)
    allowed = parse_allow_rules([f"docs.example.com:{port}"])
    assert (
        resolve_target(f"http://docs.example.com:{port}/", resolver=public, allowed=allowed).port
        == port
    )
    # an allow-listed private network takes its default ports only, unless it names one
    with pytest.raises(FetchBlocked, match=f"port {port}"):
        resolve_target(f"http://10.1.1.1:{port}/", allowed=parse_allow_rules(["10.0.0.0/8"]))
    assert (
        resolve_target(f"http://10.1.1.1:{port}/", allowed=parse_allow_rules(["10.0.0.0/8:*"])).port
        == port
    )


def test_allow_listed_names_are_resolved_and_never_reach_metadata():
    allowed = parse_allow_rules(["wiki.corp:*", "169.254.0.0/16:*"])
    with pytest.raises(FetchBlocked, match="cloud metadata address, which is never fetched"):
        resolve_target(
            "http://wiki.corp/", allowed=allowed, resolver=lambda h, p: ["169.254.169.254"]
        )
    with pytest.raises(FetchBlocked, match="never fetched"):
        resolve_target("http://169.254.169.254/latest/", allowed=allowed)
    with pytest.raises(FetchBlocked, match="Teredo"):
        resolve_target(
            "http://wiki.corp/",
            allowed=parse_allow_rules(["wiki.corp:*", "[2001::/32]:*"]),
            resolver=lambda h, p: ["2001:0:4136:e378:8000:63bf:3fff:fdd2"],
        )


def test_refusals_name_the_rule_not_the_resolved_address():
    with pytest.raises(FetchBlocked) as caught:
        resolve_target("http://build.internal/", resolver=lambda h, p: ["10.20.30.40"])
    assert "private-use (RFC 1918)" in caught.value.message
    assert "10.20.30.40" not in caught.value.message + str(caught.value.details)


@pytest.mark.parametrize("entry", ["10.0.0.0/8:99999", "[::1", "wiki.corp:http", "a/b:1"])
def test_malformed_allow_entries_are_configuration_errors(entry):
    from ingest.fetch import allow_rules_from_settings
    from kb.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="KB_FETCH_ALLOWED_PRIVATE"):
        allow_rules_from_settings([entry])
