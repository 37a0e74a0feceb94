"""Which namespaces a person's groups give, and in which role: pure, so every case is a plain test."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CURATOR = "curator"


@dataclass(frozen=True)
class Rule:
    group: str
    namespace_id: int
    role: str  # reader | curator


def group_key(group: str) -> str:
    """Groups are compared without case or surrounding space (LDAP DNs and AD names are case-insensitive)."""
    return " ".join(group.split()).casefold()


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
