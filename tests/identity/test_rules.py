"""Which namespaces a person's groups give (kb.identity.rules): pure cases."""

import pytest

from kb.identity.rules import Rule, roles_for

RULES = [
    Rule("Staff", 1, "reader"),
    Rule("cn=Editors,ou=groups,dc=example,dc=org", 2, "curator"),
    Rule("staff", 2, "reader"),
    Rule("leads", 3, "curator"),
    Rule("everyone", 3, "reader"),
]


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        pytest.param([], {}, id="no-group-no-membership"),
        pytest.param(["strangers"], {}, id="unmapped-group-no-membership"),
        pytest.param(
            ["STAFF"], {1: False, 2: False}, id="case-insensitive-one-group-two-namespaces"
        ),
        pytest.param(
            ["CN=editors, ou=groups,dc=example,dc=org".replace(", ", ",")],
            {2: True},
            id="dn-any-case",
        ),
        pytest.param(
            ["staff", "cn=editors,ou=groups,dc=example,dc=org"],
            {1: False, 2: True},
            id="curator-wins",
        ),
        pytest.param(["everyone", "leads"], {3: True}, id="curator-wins-either-order"),
        pytest.param(["  staff  ", ""], {1: False, 2: False}, id="spaces-and-empty-groups"),
        pytest.param(
            ["ſtaff", "STAFF\u0130", "\u212aeads", "Leads\u0131"],
            {},
            id="look-alike-letters-are-other-groups",
        ),
    ],
)
def test_roles_for(groups, expected):
    assert roles_for(RULES, groups) == expected
