"""People's own tokens at /accounts/tokens/: a signed-in reader makes a person token (shown once,
with an expiry), uses it on the API, and revokes it; nobody revokes another's token there."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from kb.identity.tokens import MAX_LIVE_TOKENS
from kb.models import ApiToken, Namespace, NamespaceMembership
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db

PAGE = "/accounts/tokens/"


@pytest.fixture
def reader():
    namespace, _ = ingest("tenant:a", CORPUS)
    user = get_user_model().objects.create_user("reader", password="pw-123456789")
    NamespaceMembership.objects.create(user=user, namespace=namespace)
    return user


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def search(secret: str):
    return Client().get(
        "/api/search?query=pumpkin&namespace=tenant:a", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )


def make(client, name="laptop", scope="read", days="30"):
    return client.post(PAGE, {"create": "1", "name": name, "scope": scope, "days": days})


def test_signing_in_comes_first():
    response = Client().get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_reader_makes_uses_and_revokes_their_own_token(reader):
    client = signed_in(reader)
    assert client.get(PAGE).status_code == 200
    made = make(client)
    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    secret = re.search(r'value="(kb_[^"]+)"', made.content.decode()).group(1)
    token = ApiToken.objects.get(user=reader)
    assert token.name == "laptop" and token.scope == "read" and token.expires_at is not None
    assert 29 <= (token.expires_at - token.created_at).days <= 30
    assert search(secret).status_code == 200
    listed = client.get(PAGE).content.decode()
    assert f"kb_{token.prefix}_…" in listed and secret not in listed  # shown once
    assert client.post(PAGE, {"revoke": "1", "token": token.pk}).status_code == 302
    assert search(secret).status_code == 401


def test_nobody_revokes_anothers_token_there(reader):
    other = get_user_model().objects.create_user("other", password="pw-123456789")
    make(signed_in(other), name="theirs")
    theirs = ApiToken.objects.get(user=other)
    signed_in(reader).post(PAGE, {"revoke": "1", "token": theirs.pk})
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert "theirs" not in signed_in(reader).get(PAGE).content.decode()


def test_a_person_has_at_most_so_many_working_tokens(reader):
    client = signed_in(reader)
    for n in range(MAX_LIVE_TOKENS):
        make(client, name=f"t{n}")
    refused = make(client, name="one more")
    assert "revoke one you no longer use first" in refused.content.decode()
    assert ApiToken.objects.filter(user=reader).count() == MAX_LIVE_TOKENS
    assert not Namespace.objects.filter(tokens__user=reader).exists()  # person tokens list none


def test_a_superuser_issues_a_person_token_in_the_admin_never_one_for_both(reader):
    admin = get_user_model().objects.create_superuser("root", password="pw-123456789")
    console = signed_in(admin)
    namespace = Namespace.objects.get(slug="tenant:a")
    form = {"name": "agent", "scope": "read", "rate_limit_per_minute": 120, "user": reader.pk}
    both = console.post("/admin/kb/apitoken/add/", {**form, "namespaces": [namespace.pk]})
    assert both.status_code == 200 and "leave its namespaces empty" in both.content.decode()
    neither = console.post("/admin/kb/apitoken/add/", {**form, "user": ""})
    assert "or a user for a token that acts for them" in neither.content.decode()
    assert not ApiToken.objects.exists()
    made = console.post("/admin/kb/apitoken/add/", form)
    assert made.status_code == 302
    token = ApiToken.objects.get()
    assert token.user == reader and not token.namespaces.exists()
    listed = console.get("/admin/kb/apitoken/").content.decode()
    assert "what its user reads" in listed
