"""LDAP sign-in against a real OpenLDAP (slapd started by the test on a loopback port): the account
made at the first sign-in, groups mapped by DN or cn, no group no membership, a local account of the
same name never taken over, a group left counting at the next sign-in and, for a live session, at
its next re-reading; a person removed from the directory signed out."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from ldap.dn import escape_dn_chars

from kb.identity import signins
from kb.models import ExternalIdentity, GroupRule, Namespace, NamespaceMembership, SignIn
from tests.identity.servers import GROUPS, PEOPLE

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def namespaces():
    return {
        slug: Namespace.objects.create(slug=slug, title=slug)
        for slug in ("team-a", "team-b", "team-c")
    }


def _memberships(username: str) -> set[tuple[str, bool]]:
    return set(
        NamespaceMembership.objects.filter(user__username=username).values_list(
            "namespace__slug", "can_write"
        )
    )


def _sign_in(client: Client, username: str, password: str) -> int:
    return client.post("/accounts/login/", {"username": username, "password": password}).status_code


def _readable(client: Client) -> dict[str, str]:
    response = client.get("/api/namespaces")
    assert response.status_code == 200, response.content
    return {row["slug"]: row["access"] for row in response.json()["namespaces"]}


def test_first_sign_in_makes_a_reader_account_and_maps_groups_by_dn_and_by_cn(
    directory, namespaces
):
    alice = directory.person("alice", "alice-pw", given="Alice", mail="alice@example.org")
    directory.group("staff", alice)
    directory.group("editors", alice)
    directory.group("other", directory.person("carol", "carol-pw"))
    GroupRule.objects.create(
        provider="ldap", group=f"cn=staff,{GROUPS}", namespace=namespaces["team-a"]
    )
    GroupRule.objects.create(
        provider="ldap", group="Editors", namespace=namespaces["team-b"], role="curator"
    )
    GroupRule.objects.create(provider="ldap", group="other", namespace=namespaces["team-c"])

    client = Client()
    assert _sign_in(client, "alice", "alice-pw") == 302
    user = get_user_model().objects.get(username="alice")
    assert (user.is_staff, user.is_superuser, user.has_usable_password()) == (False, False, False)
    assert (user.first_name, user.email) == ("Alice", "alice@example.org")
    assert _memberships("alice") == {("team-a", False), ("team-b", True)}
    assert _readable(client) == {"team-a": "member", "team-b": "member"}
    identity = ExternalIdentity.objects.get(user=user)
    assert identity.subject == alice and f"cn=staff,{GROUPS}" in identity.groups
    row = SignIn.objects.get(succeeded=True)
    assert (row.method, row.username, row.user_id) == ("ldap", "alice", user.pk)


def test_a_wrong_password_or_a_stranger_is_refused_and_logged_without_the_password(
    directory, namespaces
):
    directory.person("alice", "alice-pw")
    client = Client()
    assert _sign_in(client, "alice", "not-her-password") == 200  # the form again, with its error
    assert _sign_in(client, "mallory", "whatever") == 200
    assert not get_user_model().objects.exists()
    rows = list(
        SignIn.objects.order_by("at").values_list("method", "username", "succeeded", "reason")
    )
    assert rows == [
        ("password", "alice", False, "wrong user name or password"),
        ("password", "mallory", False, "wrong user name or password"),
    ]
    assert not SignIn.objects.filter(reason__contains="pw").exists()


def test_someone_in_no_mapped_group_gets_no_membership(directory, namespaces):
    directory.group("unmapped", directory.person("dave", "dave-pw"))
    GroupRule.objects.create(provider="ldap", group="staff", namespace=namespaces["team-a"])
    Namespace.objects.filter(slug="team-c").update(is_public=True)
    client = Client()
    assert _sign_in(client, "dave", "dave-pw") == 302
    assert _memberships("dave") == set()
    assert _readable(client) == {"team-c": "public"}


def test_a_local_account_of_the_same_name_is_never_taken_over(directory, namespaces):
    local = get_user_model().objects.create_user(
        "admin", password="local-admin-pw", is_staff=True, is_superuser=True
    )
    directory.group("staff", directory.person("admin", "directory-pw"))
    GroupRule.objects.create(provider="ldap", group="staff", namespace=namespaces["team-a"])
    client = Client()
    assert _sign_in(client, "admin", "directory-pw") == 200
    assert "_auth_user_id" not in client.session
    refused = SignIn.objects.get(succeeded=False)
    assert "not made by the directory" in refused.reason
    assert not ExternalIdentity.objects.exists() and _memberships("admin") == set()
    assert _sign_in(Client(), "admin", "local-admin-pw") == 302  # the local account works as before
    assert SignIn.objects.get(succeeded=True).method == "local"
    local.refresh_from_db()
    assert local.check_password("local-admin-pw")


def test_a_group_left_counts_at_the_next_sign_in_and_hand_made_memberships_stay(
    directory, namespaces
):
    alice = directory.person("alice", "alice-pw")
    directory.group("staff", alice)
    directory.group("editors", alice)
    GroupRule.objects.create(provider="ldap", group="staff", namespace=namespaces["team-a"])
    GroupRule.objects.create(
        provider="ldap", group="editors", namespace=namespaces["team-b"], role="curator"
    )
    assert _sign_in(Client(), "alice", "alice-pw") == 302
    NamespaceMembership.objects.create(
        user=get_user_model().objects.get(username="alice"), namespace=namespaces["team-c"]
    )  # made by hand in the admin
    directory.group("editors")  # alice leaves the editors
    assert _sign_in(Client(), "alice", "alice-pw") == 302
    assert _memberships("alice") == {("team-a", False), ("team-c", False)}


def test_a_live_session_reads_its_groups_again_once_due_and_ends_when_the_person_is_gone(
    directory, namespaces, settings
):
    alice = directory.person("alice", "alice-pw")
    directory.group("staff", alice)
    GroupRule.objects.create(provider="ldap", group="staff", namespace=namespaces["team-a"])
    client = Client()
    assert _sign_in(client, "alice", "alice-pw") == 302
    directory.group("staff")  # she leaves the group while signed in
    assert _readable(client) == {
        "team-a": "member"
    }  # not due yet: KB_IDENTITY_RESYNC_SECONDS is 900

    _age(client)
    assert _readable(client) == {}  # re-read: the membership is gone, the session lives on
    assert "_auth_user_id" in client.session

    directory.group("staff", alice)
    directory.remove(alice)  # removed from the directory
    _age(client)
    response = client.get("/api/namespaces")
    assert "_auth_user_id" not in client.session and response.json()["namespaces"] == []
    assert _memberships("alice") == set()


def test_another_entry_with_the_accounts_name_up_to_case_is_refused_and_cannot_inherit_a_live_session(  # noqa: E501
    directory, namespaces
):
    """The account is found by name, which PostgreSQL compares ignoring case: `alıce` (dotless i)
    is `alice` to it, yet another person to the directory. Signing in as that entry, or as a new
    entry given the name of one deleted, must not open the account the first entry made."""
    alice = directory.person("alice", "alice-pw")
    directory.group("staff", alice)
    GroupRule.objects.create(provider="ldap", group="staff", namespace=namespaces["team-a"])
    client = Client()
    assert _sign_in(client, "alice", "alice-pw") == 302
    directory._add(
        f"ou=contractors,{PEOPLE}", objectClass=["organizationalUnit"], ou=["contractors"]
    )
    mallory = f"uid=alıce,ou=contractors,{PEOPLE}"
    directory._add(
        mallory,
        objectClass=["inetOrgPerson"],
        uid=["alıce"],
        cn=["m"],
        sn=["m"],
        userPassword=["mallory-pw"],
    )
    intruder = Client()
    assert _sign_in(intruder, "alıce", "mallory-pw") == 200
    assert "_auth_user_id" not in intruder.session
    assert ExternalIdentity.objects.get(user__username="alice").subject == alice  # not overwritten
    assert (
        "is not the directory entry its account was made from" in SignIn.objects.latest("at").reason
    )

    directory.remove(alice)  # the name given to someone else
    directory._add(f"ou=staff,{PEOPLE}", objectClass=["organizationalUnit"], ou=["staff"])
    directory._add(
        f"uid=alice,ou=staff,{PEOPLE}",
        objectClass=["inetOrgPerson"],
        uid=["alice"],
        cn=["other"],
        sn=["other"],
        userPassword=["new-pw"],
    )
    assert _sign_in(Client(), "alice", "new-pw") == 200
    _age(client)  # the first alice's live session, re-read: the name now leads to another entry
    assert client.get("/api/namespaces").json()["namespaces"] == []
    assert "_auth_user_id" not in client.session


def test_a_group_named_like_another_groups_dn_does_not_take_its_rule(directory, namespaces):
    boss = directory.person("boss", "boss-pw")
    directory.group("admins", boss)
    GroupRule.objects.create(
        provider="ldap", group=f"cn=admins,{GROUPS}", namespace=namespaces["team-a"], role="curator"
    )
    mallory = directory.person("mallory", "m-pw")
    directory._add(f"ou=projects,{GROUPS}", objectClass=["organizationalUnit"], ou=["projects"])
    posing = f"cn=admins,{GROUPS}"
    directory._add(
        f"cn={escape_dn_chars(posing)},ou=projects,{GROUPS}",
        objectClass=["groupOfNames"],
        cn=[posing],
        member=[mallory],
    )
    assert _sign_in(Client(), "mallory", "m-pw") == 302
    assert _memberships("mallory") == set()
    assert _sign_in(Client(), "boss", "boss-pw") == 302
    assert _memberships("boss") == {("team-a", True)}


def test_a_directory_that_does_not_answer_fails_the_sign_in_in_seconds_and_says_why(
    directory, namespaces
):
    directory.person("alice", "alice-pw")
    directory.stop()
    started = time.monotonic()
    assert _sign_in(Client(), "alice", "alice-pw") == 200
    assert time.monotonic() - started < 15
    reason = SignIn.objects.get().reason
    assert reason.startswith("the directory could not be read") and directory.password not in reason


def _age(client: Client) -> None:
    """Make the session's last reading of its groups older than KB_IDENTITY_RESYNC_SECONDS."""
    session = client.session
    session[signins.SESSION_KEY] = {**session[signins.SESSION_KEY], "synced": time.time() - 3600}
    session.save()


@pytest.mark.parametrize(
    ("group_type", "entry"),
    [
        pytest.param(
            "groupOfUniqueNames",
            lambda cn, dn, uid: {
                "objectClass": ["groupOfUniqueNames"],
                "cn": [cn],
                "uniqueMember": [dn],
            },
            id="groupOfUniqueNames",
        ),
        pytest.param(
            "posixGroup",
            lambda cn, dn, uid: {
                "objectClass": ["posixGroup"],
                "cn": [cn],
                "gidNumber": ["5001"],
                "memberUid": [uid],
            },
            id="posixGroup",
        ),
    ],
)
def test_other_kinds_of_group_map_as_groupofnames_does(
    slapd, identity_settings, namespaces, group_type, entry
):
    identity_settings({**slapd.settings(), "KB_LDAP_GROUP_TYPE": group_type})
    alice = slapd.person("alice", "alice-pw")
    slapd._add(f"cn=staff,{GROUPS}", **entry("staff", alice, "alice"))
    GroupRule.objects.create(provider="ldap", group="staff", namespace=namespaces["team-a"])
    GroupRule.objects.create(
        provider="ldap", group=f"cn=staff,{GROUPS}", namespace=namespaces["team-b"]
    )
    assert _sign_in(Client(), "alice", "alice-pw") == 302
    assert _memberships("alice") == {("team-a", False), ("team-b", False)}
