"""OpenID Connect sign-in against a real provider (django-oidc-provider,
tests/identity/oidc_provider)
run as its own process on loopback, driven over HTTP as a browser would: the provider's sign-in
form, its redirect with a code, the product's callback. The account is made at the first sign-in,
the groups claim maps to memberships, a group changed at the provider counts at the next sign-in,
a live session past KB_IDENTITY_RESYNC_SECONDS is sent back through the provider, and a forged
state, a replayed callback and a redirect to another site are refused."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model

from kb.identity import signins
from kb.models import GroupRule, Namespace, NamespaceMembership, SignIn
from tests.identity.servers import OidcProvider

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def spaces(oidc_provider):
    found = {slug: Namespace.objects.create(slug=slug) for slug in ("team-a", "team-b")}
    GroupRule.objects.create(provider="oidc", group="staff", namespace=found["team-a"])
    GroupRule.objects.create(
        provider="oidc", group="editors", namespace=found["team-b"], role="curator"
    )
    return found


def _provider_sign_in(
    browser: requests.Session, page: requests.Response, username: str, password: str
):
    """Fill in the provider's own sign-in form, as a person does, and follow the redirects home."""
    assert "Test identity provider" in page.text, page.text[:500]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    following = re.search(r'name="next" value="([^"]*)"', page.text).group(1).replace("&amp;", "&")
    return browser.post(
        page.url,
        data={
            "csrfmiddlewaretoken": token,
            "username": username,
            "password": password,
            "next": following,
        },
        headers={"Referer": page.url},
        timeout=30,
    )


def _sign_in(
    live_server, username: str, password: str, next_path: str = "/"
) -> tuple[requests.Session, str]:
    browser = requests.Session()
    page = browser.get(
        f"{live_server.url}/accounts/oidc/login/?{urlencode({'next': next_path})}", timeout=30
    )
    landed = _provider_sign_in(browser, page, username, password)
    return browser, landed.url


def _readable(live_server, browser) -> dict[str, str]:
    answer = browser.get(f"{live_server.url}/api/namespaces", timeout=30).json()
    return {row["slug"]: row["access"] for row in answer["namespaces"]}


def _memberships(username: str) -> set[tuple[str, bool]]:
    return set(
        NamespaceMembership.objects.filter(user__username=username).values_list(
            "namespace__slug", "can_write"
        )
    )


def test_first_sign_in_makes_the_account_and_a_group_changed_at_the_provider_counts_next_time(
    live_server, oidc_provider, spaces
):
    oidc_provider.person("alice", "alice-pw-1", "staff", "editors", "unmapped")
    browser, landed = _sign_in(live_server, "alice", "alice-pw-1", "/?q=handbook")
    assert landed == f"{live_server.url}/?q=handbook"
    user = get_user_model().objects.get(username="alice")
    assert (user.is_staff, user.is_superuser, user.has_usable_password(), user.email) == (
        False,
        False,
        False,
        "alice@example.org",
    )
    assert _memberships("alice") == {("team-a", False), ("team-b", True)}
    assert _readable(live_server, browser) == {"team-a": "member", "team-b": "member"}
    row = SignIn.objects.get()
    assert (row.method, row.username, row.succeeded, row.user_id) == (
        "oidc",
        "alice",
        True,
        user.pk,
    )

    oidc_provider.person("alice", "alice-pw-1", "staff")  # she leaves the editors at the provider
    browser, _ = _sign_in(live_server, "alice", "alice-pw-1")
    assert _memberships("alice") == {("team-a", False)}
    assert _readable(live_server, browser) == {"team-a": "member"}
    assert get_user_model().objects.count() == 1


def test_someone_in_no_mapped_group_gets_no_membership(live_server, oidc_provider, spaces):
    oidc_provider.person("dave", "dave-pw-1", "strangers")
    browser, _ = _sign_in(live_server, "dave", "dave-pw-1")
    assert _session(browser)["_auth_user_id"] == str(
        get_user_model().objects.get(username="dave").pk
    )
    assert _memberships("dave") == set() and _readable(live_server, browser) == {}


def test_a_redirect_to_another_site_after_sign_in_lands_home(live_server, oidc_provider, spaces):
    oidc_provider.person("alice", "alice-pw-1", "staff")
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        _, landed = _sign_in(live_server, "alice", "alice-pw-1", target)
        assert landed == f"{live_server.url}/", target


def test_a_forged_state_and_a_replayed_callback_are_refused(live_server, oidc_provider, spaces):
    oidc_provider.person("alice", "alice-pw-1", "staff")
    victim = requests.Session()
    page = victim.get(f"{live_server.url}/accounts/oidc/login/", timeout=30)
    back = _provider_sign_in(victim, page, "alice", "alice-pw-1")
    callback = next(
        r.headers["Location"]
        for r in back.history
        if "/accounts/oidc/callback/" in r.headers.get("Location", "")
    )
    query = parse_qs(urlsplit(callback).query)

    forged = victim.get(
        f"{live_server.url}/accounts/oidc/callback/?"
        f"{urlencode({'code': query['code'][0], 'state': 'forged'})}",
        timeout=30,
    )
    assert (
        forged.status_code == 400 and 'id="sso-error"' in forged.text
    )  # (the real one was used already)
    attacker = (
        requests.Session()
    )  # another browser with the victim's callback URL: no state in its session
    assert attacker.get(callback, timeout=30).status_code == 400
    assert victim.get(callback, timeout=30).status_code == 400  # the same callback twice
    failures = list(SignIn.objects.filter(succeeded=False).values_list("method", "reason"))
    assert len(failures) == 3 and all(method == "oidc" for method, _ in failures), failures
    assert all(reason.startswith("mismatching_state") for _, reason in failures), failures
    assert not _signed_in(attacker)
    assert oidc_provider.client_secret not in " ".join(reason for _, reason in failures)


def test_error_callbacks_are_throttled_and_their_wording_is_not_logged(
    live_server, oidc_provider, spaces
):
    """The callback URL carries the provider's error when a sign-in fails, and anyone can call it:
    each call writes a sign-in log row, so calls are throttled as starts are, and the log keeps
    the error's code, never the description the caller wrote."""
    from kb.identity.oidc import STARTS_PER_MINUTE

    browser = requests.Session()
    forged = urlencode(
        {"error": "access_denied", "error_description": '=HYPERLINK("x") wrong password for alice'}
    )
    codes = [
        browser.get(f"{live_server.url}/accounts/oidc/callback/?{forged}", timeout=30).status_code
        for _ in range(STARTS_PER_MINUTE + 5)
    ]
    assert codes.count(400) == STARTS_PER_MINUTE and codes[-1] == 429
    reasons = set(SignIn.objects.values_list("reason", flat=True))
    assert reasons == {"access_denied"} and SignIn.objects.count() == STARTS_PER_MINUTE


def test_an_expired_id_token_is_refused(live_server, tmp_path, identity_settings):
    provider = OidcProvider(
        tmp_path / "stale-provider", live_server.url, id_token_seconds=-3600
    ).start()
    try:
        identity_settings(provider.settings())
        provider.person("alice", "alice-pw-1", "staff")
        browser, landed = _sign_in(live_server, "alice", "alice-pw-1")
    finally:
        provider.stop()
    assert landed.startswith(f"{live_server.url}/accounts/oidc/callback/") and not _signed_in(
        browser
    )
    assert not get_user_model().objects.exists()
    assert list(SignIn.objects.values_list("method", "succeeded", "reason")) == [
        ("oidc", False, "expired_token: The token is expired")
    ]


def test_a_live_session_past_the_resync_time_goes_back_through_the_provider(
    live_server, oidc_provider, spaces
):
    oidc_provider.person("alice", "alice-pw-1", "staff", "editors")
    browser, _ = _sign_in(live_server, "alice", "alice-pw-1")
    oidc_provider.person("alice", "alice-pw-1", "staff")
    _age(browser)
    api = browser.get(f"{live_server.url}/api/namespaces", timeout=30)
    assert api.json()["namespaces"] == [] and not _signed_in(
        browser
    )  # an API call goes on signed out
    browser, _ = _sign_in(live_server, "alice", "alice-pw-1")
    _age(browser)
    page = browser.get(
        f"{live_server.url}/?q=x", timeout=30
    )  # a page: through the provider and back
    assert page.url == f"{live_server.url}/?q=x"
    assert any("/openid/authorize" in r.headers.get("Location", "") for r in page.history)
    assert _memberships("alice") == {("team-a", False)}


def _session(browser: requests.Session):
    from django.contrib.sessions.backends.db import SessionStore

    return SessionStore(session_key=browser.cookies["sessionid"])


def _signed_in(browser: requests.Session) -> bool:
    return "sessionid" in browser.cookies and "_auth_user_id" in _session(browser)


def _age(browser: requests.Session) -> None:
    """Make the session's last reading of its groups older than KB_IDENTITY_RESYNC_SECONDS."""
    session = _session(browser)
    session[signins.SESSION_KEY] = {**session[signins.SESSION_KEY], "synced": time.time() - 3600}
    session.save()
