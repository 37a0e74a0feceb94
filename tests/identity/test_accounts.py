"""Accounts and memberships kept by single sign-on, the group rules in the console (a curator
writes them for the namespaces they curate only), the sign-in log and its export, the settings'
checks and the redirect after sign-in. No identity server here: tests/identity/test_ldap.py and
test_oidc.py sign in against real ones."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory
from django.utils import timezone

from kb.conf import kb_settings
from kb.errors import ConfigurationError
from kb.identity import accounts
from kb.identity.oidc import _safe_next
from kb.models import ExternalIdentity, GroupRule, Namespace, NamespaceMembership, SignIn

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def spaces():
    return {slug: Namespace.objects.create(slug=slug) for slug in ("team-a", "team-b", "team-c")}


def _held(user) -> set[tuple[str, bool, str]]:
    return set(
        NamespaceMembership.objects.filter(user=user).values_list(
            "namespace__slug", "can_write", "granted_by"
        )
    )


def test_memberships_follow_the_rules_and_leave_hand_made_ones_alone(spaces):
    user = User.objects.create_user("ada")
    GroupRule.objects.create(provider="oidc", group="staff", namespace=spaces["team-a"])
    GroupRule.objects.create(
        provider="oidc", group="leads", namespace=spaces["team-a"], role="curator"
    )
    GroupRule.objects.create(
        provider="ldap", group="staff", namespace=spaces["team-b"]
    )  # another provider's
    NamespaceMembership.objects.create(user=user, namespace=spaces["team-c"])  # by hand

    accounts.sync_memberships(user, "oidc", ["staff", "leads"])
    assert _held(user) == {("team-a", True, "oidc"), ("team-c", False, "")}
    accounts.sync_memberships(user, "oidc", ["staff"])
    assert _held(user) == {("team-a", False, "oidc"), ("team-c", False, "")}
    accounts.sync_memberships(user, "oidc", [])
    assert _held(user) == {("team-c", False, "")}


def test_a_hand_made_membership_is_not_changed_by_a_rule_for_the_same_namespace(spaces):
    user = User.objects.create_user("ada")
    NamespaceMembership.objects.create(user=user, namespace=spaces["team-a"], can_write=False)
    GroupRule.objects.create(
        provider="oidc", group="leads", namespace=spaces["team-a"], role="curator"
    )
    accounts.sync_memberships(user, "oidc", ["leads"])
    assert _held(user) == {("team-a", False, "")}


def test_a_new_account_never_takes_a_local_name_and_is_never_staff(spaces):
    User.objects.create_superuser("admin", "a@example.org", "local-pw")
    user = accounts.oidc_account(
        "https://idp example-sub",
        {"sub": "example-sub", "preferred_username": "Admin", "email": "eve@example.org"},
        [],
    )
    assert user.username == "Admin-2"
    assert (user.is_staff, user.is_superuser, user.has_usable_password()) == (False, False, False)
    again = accounts.oidc_account(
        "https://idp example-sub", {"sub": "example-sub", "preferred_username": "x"}, []
    )
    assert (
        again.pk == user.pk and User.objects.count() == 2
    )  # found by issuer and subject, not by name


def test_a_deactivated_account_is_refused(spaces):
    user = accounts.oidc_account("https://idp s1", {"sub": "s1", "preferred_username": "bo"}, [])
    User.objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(accounts.AccountRefused, match="deactivated"):
        accounts.oidc_account("https://idp s1", {"sub": "s1"}, [])


def _curator(spaces) -> Client:
    """A staff member who curates team-a and only reads team-b."""
    user = User.objects.create_user("cur", password="cur-pw-12345", is_staff=True)
    NamespaceMembership.objects.create(user=user, namespace=spaces["team-a"], can_write=True)
    NamespaceMembership.objects.create(user=user, namespace=spaces["team-b"], can_write=False)
    client = Client()
    client.force_login(user)
    return client


def test_a_curator_writes_rules_only_for_the_namespaces_they_curate(spaces):
    client = _curator(spaces)
    form = client.get("/admin/kb/grouprule/add/").content.decode()
    assert f'value="{spaces["team-a"].pk}"' in form and f'value="{spaces["team-b"].pk}"' not in form
    refused = client.post(
        "/admin/kb/grouprule/add/",
        {"provider": "oidc", "group": "staff", "namespace": spaces["team-b"].pk, "role": "curator"},
    )
    assert (
        refused.status_code == 200 and not GroupRule.objects.exists()
    )  # the form's error: not a choice
    other = GroupRule.objects.create(provider="oidc", group="x", namespace=spaces["team-b"])
    assert (
        client.post(f"/admin/kb/grouprule/{other.pk}/delete/", {"post": "yes"}).status_code == 403
    )
    hidden = GroupRule.objects.create(provider="oidc", group="y", namespace=spaces["team-c"])
    assert client.get(f"/admin/kb/grouprule/{hidden.pk}/change/").status_code in (302, 404)
    listed = client.get("/admin/kb/grouprule/").content.decode()
    assert ">x<" in listed and ">y<" not in listed  # reads team-b's rules, sees nothing of team-c

    created = client.post(
        "/admin/kb/grouprule/add/",
        {"provider": "oidc", "group": "staff", "namespace": spaces["team-a"].pk, "role": "reader"},
    )
    assert created.status_code == 302 and GroupRule.objects.filter(group="staff").exists()


def test_a_rule_removed_in_the_console_takes_the_membership_away_at_once(spaces):
    person = User.objects.create_user("ada")
    ExternalIdentity.objects.create(
        user=person, provider="oidc", subject="i s", groups=["staff"], synced_at=timezone.now()
    )
    client = _curator(spaces)
    client.post(
        "/admin/kb/grouprule/add/",
        {"provider": "oidc", "group": "staff", "namespace": spaces["team-a"].pk, "role": "reader"},
    )
    assert _held(person) == {("team-a", False, "oidc")}  # the rule applies to the groups last read
    rule = GroupRule.objects.get()
    assert client.post(f"/admin/kb/grouprule/{rule.pk}/delete/", {"post": "yes"}).status_code == 302
    assert _held(person) == set()


def test_a_rule_change_touches_only_the_accounts_in_its_groups(spaces):
    def account(name, groups):
        user = User.objects.create_user(name)
        ExternalIdentity.objects.create(
            user=user,
            provider="ldap",
            subject=f"uid={name}",
            groups=groups,
            synced_at=timezone.now(),
        )
        return user

    ada, bo = (
        account("ada", ["cn=Staff,ou=groups,dc=example,dc=org", "Staff"]),
        account("bo", ["other"]),
    )
    GroupRule.objects.create(provider="ldap", group="staff", namespace=spaces["team-a"])
    assert accounts.apply_rules("ldap", {"STAFF"}) == 1
    assert accounts.apply_rules("oidc", {"staff"}) == 0  # another provider's accounts are not its
    assert _held(ada) == {("team-a", False, "ldap")} and _held(bo) == set()


def test_sign_ins_are_logged_exported_as_csv_and_pruned(spaces, settings):
    User.objects.create_user("ada", password="ada-pw-12345")
    assert (
        Client()
        .post("/accounts/login/", {"username": "=HYPERLINK(1)", "password": "x"})
        .status_code
        == 200
    )
    assert (
        Client()
        .post("/accounts/login/", {"username": "ada", "password": "ada-pw-12345"})
        .status_code
        == 302
    )
    rows = list(SignIn.objects.order_by("at").values_list("method", "username", "succeeded"))
    assert rows == [("local", "=HYPERLINK(1)", False), ("local", "ada", True)]
    assert not SignIn.objects.filter(reason__contains="ada-pw").exists()

    staff = Client()
    staff.force_login(User.objects.create_user("cur", is_staff=True))
    assert staff.get("/admin/kb/signin/").status_code == 403  # the log is a superuser's

    root = Client()
    root.force_login(User.objects.create_superuser("root", "r@example.org", "root-pw-12345"))
    exported = root.post(
        "/admin/kb/signin/",
        {
            "action": "export_csv",
            "_selected_action": list(SignIn.objects.values_list("pk", flat=True)),
        },
    )
    assert exported["Content-Type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(exported.content.decode())))
    assert table[0][:5] == ["time (UTC)", "method", "user name", "account id", "succeeded"]
    # force_login signs in as a person does: those two sign-ins are in the log too
    assert [(row[1], row[2], row[4]) for row in table[1:]] == [
        ("local", "'=HYPERLINK(1)", "no"),
        ("local", "ada", "yes"),
        ("local", "cur", "yes"),
        ("local", "root", "yes"),
    ]

    SignIn.objects.update(at=timezone.now() - timedelta(days=400))  # past KB_SIGN_IN_LOG_DAYS (365)
    Client().post("/accounts/login/", {"username": "ada", "password": "ada-pw-12345"})
    assert list(SignIn.objects.values_list("username", flat=True)) == ["ada"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param("/?q=x&namespace=a", "/?q=x&namespace=a", id="a-path"),
        pytest.param("https://evil.example/", "/", id="another-host"),
        pytest.param("//evil.example/", "/", id="scheme-relative"),
        pytest.param("/\\evil.example", "/", id="backslash"),
        pytest.param("javascript:alert(1)", "/", id="javascript"),
        pytest.param("", "/", id="empty"),
        pytest.param(None, "/", id="none"),
    ],
)
def test_after_sign_in_only_a_path_of_this_site_is_followed(target, expected):
    assert _safe_next(RequestFactory().get("/"), target) == expected


def test_single_sign_on_is_off_unless_configured():
    assert kb_settings().identity.oidc_issuer == "" and kb_settings().identity.ldap_url == ""
    assert Client().get("/accounts/oidc/login/").status_code == 404
    assert Client().get("/accounts/oidc/callback/?code=x&state=y").status_code == 404
    assert b"Sign in with" not in Client().get("/accounts/login/").content


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(
            {"KB_OIDC_ISSUER": "https://idp.example.org"},
            "KB_OIDC_CLIENT_ID is empty",
            id="oidc-no-client",
        ),
        pytest.param(
            {
                "KB_OIDC_ISSUER": "idp.example.org",
                "KB_OIDC_CLIENT_ID": "c",
                "KB_OIDC_CLIENT_SECRET": "s",
            },
            "KB_OIDC_ISSUER must be the provider's http(s) issuer URL",
            id="oidc-not-a-url",
        ),
        pytest.param(
            {"KB_LDAP_URL": "ldap://dir", "KB_LDAP_USER_BASE": "ou=p"},
            "KB_LDAP_GROUP_BASE is empty",
            id="ldap-no-group-base",
        ),
        pytest.param(
            {
                "KB_LDAP_URL": "ldap://dir",
                "KB_LDAP_USER_BASE": "ou=p",
                "KB_LDAP_GROUP_BASE": "ou=g",
                "KB_LDAP_GROUP_TYPE": "nis",
            },
            "KB_LDAP_GROUP_TYPE must be one of",
            id="ldap-group-type",
        ),
    ],
)
def test_a_half_configured_provider_fails_at_start_up_with_the_setting_named(
    settings, values, message
):
    for name, value in values.items():
        setattr(settings, name, value)
    kb_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            kb_settings()
    finally:
        kb_settings.cache_clear()


def test_an_unreachable_provider_is_a_logged_failure_and_starts_are_throttled(settings):
    from kb.identity import oidc

    for name, value in {
        "KB_OIDC_ISSUER": "http://127.0.0.1:9",
        "KB_OIDC_CLIENT_ID": "c",
        "KB_OIDC_CLIENT_SECRET": "client-secret-value",
    }.items():
        setattr(settings, name, value)
    kb_settings.cache_clear()
    oidc._client.cache_clear()
    try:
        client = Client()
        answers = [
            client.get("/accounts/oidc/login/?next=/x").status_code
            for _ in range(oidc.STARTS_PER_MINUTE + 1)
        ]
        assert answers == [502] * oidc.STARTS_PER_MINUTE + [429]
        assert b"Sign in with single sign-on" in client.get("/accounts/login/").content
    finally:
        kb_settings.cache_clear()
        oidc._client.cache_clear()
    reasons = set(SignIn.objects.values_list("method", "succeeded", "reason"))
    assert reasons == {("oidc", False, "the provider could not be reached (ConnectionError)")}, (
        reasons
    )


def test_a_stale_oidc_session_sends_only_a_navigation_back_through_the_provider(settings):
    from kb.identity import oidc, signins

    for name, value in {
        "KB_OIDC_ISSUER": "http://127.0.0.1:9",
        "KB_OIDC_CLIENT_ID": "c",
        "KB_OIDC_CLIENT_SECRET": "s",
    }.items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", oidc.BACKEND]
    kb_settings.cache_clear()
    user = User.objects.create_user("ada")
    try:
        answers = {}
        for case, path, headers in (
            ("navigation", "/?q=x", {"HTTP_SEC_FETCH_MODE": "navigate"}),
            ("old browser", "/?q=x", {}),
            ("fetch", "/suggest?q=x", {"HTTP_SEC_FETCH_MODE": "cors"}),
            ("api", "/api/namespaces", {}),
        ):
            client = Client()
            client.force_login(user, backend=oidc.BACKEND)
            session = client.session
            session[signins.SESSION_KEY] = {"provider": "oidc", "synced": 0}
            session.save()
            response = client.get(path, **headers)
            answers[case] = (
                response.status_code,
                response.headers.get("Location"),
                "_auth_user_id" in client.session,
            )
    finally:
        kb_settings.cache_clear()
    back = "/accounts/oidc/login/?next=%2F%3Fq%3Dx"
    assert answers == {
        "navigation": (302, back, False),
        "old browser": (302, back, False),
        "fetch": (200, None, False),
        "api": (200, None, False),
    }, answers  # both signed out
