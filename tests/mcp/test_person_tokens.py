"""Person tokens through the official MCP SDK's client against the live product: an agent holding
a person's token reads what that person reads at each call (a membership removed counts at the
next call), a token that stopped working is refused exactly as an unknown one, and reading a
restricted document through `fetch` is a row of the access log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from kb.audiences import apply_source
from kb.auth import issue_token
from kb.models import ApiToken, Document, Namespace, NamespaceMembership
from kb.models.identity import RestrictedRead
from tests.corpus import ingest
from tests.mcp.conftest import run_agent, tool_error
from tests.mcp.test_mcp import post

pytestmark = pytest.mark.slow


@pytest.fixture
def person(world):
    user = get_user_model().objects.create_user("reader", password="pw-123456789")
    NamespaceMembership.objects.create(user=user, namespace=Namespace.objects.get(slug="tenant:a"))
    token, secret = issue_token("agent", user=user, expires_at=timezone.now() + timedelta(days=1))
    return {"user": user, "token": token, "secret": secret}


def readable(world, secret) -> list[str]:
    async def script(client):
        return await client.call_tool("list_namespaces", {})

    listed = run_agent(world["url"], secret, script)
    return [n["slug"] for n in listed.structured_content["namespaces"]]


def test_an_agent_with_a_person_token_reads_what_the_person_reads_now(world, person):
    assert readable(world, person["secret"]) == ["public", "tenant:a"]

    async def foreign(client):
        return await client.call_tool("search", {"query": "pumpkin", "namespaces": ["tenant:b"]})

    assert tool_error(run_agent(world["url"], person["secret"], foreign))["code"] == (
        "SEARCH_UNKNOWN_NAMESPACE"
    )
    NamespaceMembership.objects.filter(user=person["user"]).delete()
    assert readable(world, person["secret"]) == ["public"]  # at the next call, not the next day


def refusal(world, secret):
    answer = post(world["url"], {"Authorization": f"Bearer {secret}"})
    return answer.status_code, answer.headers["WWW-Authenticate"], answer.json()


@pytest.mark.parametrize("ending", ["expired", "revoked", "deactivated"])
def test_a_person_token_that_stopped_working_is_refused_as_an_unknown_one(world, person, ending):
    assert post(world["url"], {"Authorization": f"Bearer {person['secret']}"}).status_code == 200
    if ending == "expired":
        ApiToken.objects.filter(pk=person["token"].pk).update(expires_at=timezone.now())
    elif ending == "revoked":
        ApiToken.objects.filter(pk=person["token"].pk).update(revoked_at=timezone.now())
    else:
        get_user_model().objects.filter(pk=person["user"].pk).update(is_active=False)
    unknown = refusal(world, "kb_00000000_no-such-token-anywhere-at-all")
    assert refusal(world, person["secret"]) == unknown
    assert unknown[0] == 401 and unknown[2]["error"]["data"]["code"] == "KB_TOKEN_INVALID"


def test_fetching_a_restricted_document_is_logged_with_the_person_and_the_token(world, person):
    namespace = Namespace.objects.get(slug="tenant:a")
    _, hr = ingest(
        "tenant:a", {"salary": ("Salary bands", "Grade seven, paid each quarter.")}, "hr"
    )
    group = Group.objects.create(name="hr")
    hr.audience_groups.set([group])
    apply_source(hr)
    person["user"].groups.add(group)
    secret = Document.objects.get(source=hr)
    open_document = Document.objects.filter(namespace=namespace).exclude(source=hr).first()

    async def script(client):
        return (
            await client.call_tool("fetch", {"id": f"d{secret.pk}"}),
            await client.call_tool("fetch", {"id": f"d{open_document.pk}"}),
        )

    restricted, unrestricted = run_agent(world["url"], person["secret"], script)
    assert not restricted.is_error and not unrestricted.is_error
    row = RestrictedRead.objects.get()
    assert (row.surface, row.user_id, row.token_id, row.document_number, row.namespace) == (
        "mcp",
        person["user"].pk,
        person["token"].pk,
        secret.pk,
        "tenant:a",
    )

    async def passage(client):
        found = await client.call_tool("search", {"query": "grade seven paid each quarter"})
        section = next(
            s
            for d in found.structured_content["documents"]
            if d["id"] == f"d{secret.pk}"
            for s in d["sections"]
        )
        return await client.call_tool("fetch", {"id": section["id"]})

    assert not run_agent(world["url"], person["secret"], passage).is_error
    assert RestrictedRead.objects.count() == 2  # a passage of it is a read of it too
