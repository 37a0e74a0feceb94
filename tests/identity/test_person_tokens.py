"""Person tokens over the real API: a token that acts for a user carries that user's rights as they
are at each request (memberships, deactivation, expiry, revocation), never more; a reader's token
cannot write; a token that no longer works answers exactly like an unknown one."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from kb.auth import issue_token
from kb.models import ApiToken, Document, Namespace, NamespaceMembership
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db

TEXT_SOURCE = {"name": "notes", "kind": "text", "text": "Notes of the team."}


@pytest.fixture
def world():
    tenant_a, _ = ingest("tenant:a", CORPUS)
    tenant_b, _ = ingest(
        "tenant:b", {"secret": ("Pumpkin secret", "The secret pumpkin recipe of tenant B.")}
    )
    public, _ = ingest("public", {"faq": ("Public FAQ", "Pumpkins are orange and public.")})
    Namespace.objects.filter(pk=public.pk).update(is_public=True)
    users = get_user_model().objects
    reader = users.create_user("reader", password="pw-123456789")
    curator = users.create_user("curator", password="pw-123456789")
    NamespaceMembership.objects.create(user=reader, namespace=tenant_a)
    NamespaceMembership.objects.create(user=curator, namespace=tenant_a, can_write=True)
    return {"a": tenant_a, "b": tenant_b, "reader": reader, "curator": curator}


def call(client, method, path, token, body=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        return getattr(client, method)(
            path, data=json.dumps(body), content_type="application/json", **headers
        )
    return getattr(client, method)(path, **headers)


def search(client, token, namespace):
    return call(client, "get", f"/api/search?query=pumpkin&namespace={namespace}", token)


def document_of(namespace: str) -> int:
    return Document.objects.filter(namespace__slug=namespace).order_by("pk").first().pk


def test_a_person_token_reads_what_its_owner_reads_and_nothing_else(client, world):
    _, secret = issue_token("laptop", user=world["reader"])
    assert search(client, secret, "tenant:a").status_code == 200
    assert search(client, secret, "public").status_code == 200  # as the reader reads it signed in
    refused = search(client, secret, "tenant:b")
    assert refused.status_code == 403 and refused.json()["code"] == "KB_FORBIDDEN"
    listed = call(client, "get", "/api/namespaces", secret).json()["namespaces"]
    assert {(row["slug"], row["access"]) for row in listed} == {
        ("tenant:a", "member"),
        ("public", "public"),
    }
    foreign = call(client, "get", f"/api/documents/{document_of('tenant:b')}", secret)
    missing = call(client, "get", "/api/documents/999999", secret)
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json()["code"] == missing.json()["code"] == "KB_NOT_FOUND"


def test_a_readers_token_cannot_write_even_with_the_write_scope(client, world):
    _, secret = issue_token("laptop", user=world["reader"], scope=ApiToken.Scope.WRITE)
    refused = call(client, "post", "/api/sources", secret, {"namespace": "tenant:a", **TEXT_SOURCE})
    assert refused.status_code == 403, refused.content
    assert refused.json()["message"] == "Your membership of 'tenant:a' is read-only."
    public = call(client, "post", "/api/sources", secret, {"namespace": "public", **TEXT_SOURCE})
    assert public.status_code == 403 and public.json()["code"] == "KB_FORBIDDEN"


def test_a_curators_token_writes_only_with_the_write_scope(client, world):
    _, reading = issue_token("reading", user=world["curator"])
    _, writing = issue_token("writing", user=world["curator"], scope=ApiToken.Scope.WRITE)
    body = {"namespace": "tenant:a", **TEXT_SOURCE}
    refused = call(client, "post", "/api/sources", reading, body)
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        "This token is read-only; writing needs a token with the write scope."
    )
    created = call(client, "post", "/api/sources", writing, body)
    assert created.status_code == 201, created.content
    elsewhere = call(client, "post", "/api/sources", writing, {**body, "namespace": "tenant:b"})
    assert elsewhere.status_code == 403  # not the owner's namespace: as for the owner


def test_a_read_only_token_does_not_say_read_only_of_a_namespace_its_owner_cannot_read(
    client, world
):
    _, reading = issue_token("reading", user=world["curator"])
    refused = call(
        client, "post", "/api/sources", reading, {"namespace": "tenant:b", **TEXT_SOURCE}
    )
    assert refused.status_code == 403
    assert "read-only" not in refused.json()["message"]


def test_a_superusers_read_token_reads_everything_and_writes_nothing(client, world):
    admin = get_user_model().objects.create_superuser("root", password="pw-123456789")
    _, secret = issue_token("root laptop", user=admin)
    assert search(client, secret, "tenant:b").status_code == 200
    refused = call(client, "post", "/api/sources", secret, {"namespace": "tenant:b", **TEXT_SOURCE})
    assert refused.status_code == 403 and "read-only" in refused.json()["message"]


def test_rights_follow_the_owners_memberships_at_the_next_request(client, world):
    _, secret = issue_token("laptop", user=world["reader"])
    document = document_of("tenant:a")
    assert call(client, "get", f"/api/documents/{document}", secret).status_code == 200
    NamespaceMembership.objects.filter(user=world["reader"]).delete()
    assert search(client, secret, "tenant:a").status_code == 403
    assert call(client, "get", f"/api/documents/{document}", secret).status_code == 404
    NamespaceMembership.objects.create(user=world["reader"], namespace=world["b"])
    assert search(client, secret, "tenant:b").status_code == 200
    curator_token = issue_token("w", user=world["curator"], scope=ApiToken.Scope.WRITE)[1]
    NamespaceMembership.objects.filter(user=world["curator"]).update(can_write=False)
    body = {"namespace": "tenant:a", **TEXT_SOURCE}
    assert call(client, "post", "/api/sources", curator_token, body).status_code == 403


def unknown_answer(client) -> tuple[int, dict]:
    response = search(client, "kb_00000000_not-a-token-at-all-of-this-base", "tenant:a")
    return response.status_code, response.json()


@pytest.mark.parametrize("ending", ["revoked", "expired", "deactivated", "deleted"])
def test_a_token_that_stopped_working_answers_exactly_like_an_unknown_one(client, world, ending):
    token, secret = issue_token(
        "laptop", user=world["reader"], expires_at=timezone.now() + timedelta(days=30)
    )
    assert search(client, secret, "tenant:a").status_code == 200
    if ending == "revoked":
        ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    elif ending == "expired":
        ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())
    elif ending == "deactivated":
        get_user_model().objects.filter(pk=world["reader"].pk).update(is_active=False)
    else:
        world["reader"].delete()
    answer = search(client, secret, "tenant:a")
    assert (answer.status_code, answer.json()) == unknown_answer(client)
    assert answer.json()["code"] == "KB_TOKEN_INVALID"


def test_a_namespace_token_expires_too(client, world):
    token, secret = issue_token("ci", namespaces=[world["a"]])
    assert search(client, secret, "tenant:a").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = search(client, secret, "tenant:a")
    assert (answer.status_code, answer.json()) == unknown_answer(client)


def test_a_person_token_lists_no_namespaces():
    with pytest.raises(ValueError, match="lists no namespaces"):
        issue_token(
            "both",
            user=get_user_model().objects.create_user("x"),
            namespaces=[Namespace.objects.create(slug="x")],
        )
