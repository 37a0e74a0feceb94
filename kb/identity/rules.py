"""Which namespaces a person's groups give, and in which role: pure, so every case is a plain
test."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CURATOR = "curator"


@dataclass(frozen=True)
class Rule:
    group: str
    namespace_id: int
    role: str  # reader | curator


ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def group_key(group: str) -> str:
    """Groups are compared without surrounding space and without the case of ASCII letters (LDAP
    DNs and AD names are case-insensitive); other letters as written, so a look-alike group at a
    provider where people make their own (`ſtaff` with a long s, the Kelvin sign's `K`) is not
    the group a rule names."""
    return " ".join(group.split()).translate(ASCII_LOWER)


def roles_for(rules: Iterable[Rule], groups: Iterable[str]) -> dict[int, bool]:
    """{namespace id: may write} for a person in `groups`: a namespace is theirs when any of their
    groups has a rule for it, and writable when any such rule makes them a curator. No group that
    a rule names: nothing."""
    held = {group_key(group) for group in groups if group and group.strip()}
    found: dict[int, bool] = {}
    for rule in rules:
        if group_key(rule.group) in held:
            found[rule.namespace_id] = found.get(rule.namespace_id, False) or rule.role == CURATOR
    return found
