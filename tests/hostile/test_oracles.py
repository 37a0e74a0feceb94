"""Answers that must not tell another tenant's objects from missing ones: the console's "view on
site" shortcut, a vote on another tenant's logged search, a provider id, and a web source's
address at save time. Each compares the foreign case with the missing one, and has a control
showing the request does work where it may."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ingest.errors import FetchBlocked
from ingest.fetch import FetchPolicy
from ingest.ssrf import resolve_target
from kb.auth import issue_token
from kb.conf import kb_settings
from kb.models import ApiToken, Namespace, NamespaceMembership, Provider, QueryLog, Source
from retrieval import querylog

pytestmark = pytest.mark.django_db

MISSING_ID = 10**9


def check_fetch(url: str) -> None:
    """The worker's guard, as it checks a URL before fetching it."""
    policy = FetchPolicy.from_settings()
    resolve_target(url, allowed=policy.allowed, resolver=policy.resolver)


@pytest.fixture
def tenants():
    return Namespace.objects.create(slug="tenant:ours"), Namespace.objects.create(
        slug="tenant:theirs"
    )


def _member(namespace: Namespace, *, can_write: bool = True) -> Client:
    user = get_user_model().objects.create_user("member", password="pw", is_staff=True)
    NamespaceMembership.objects.create(user=user, namespace=namespace, can_write=can_write)
    client = Client()
    client.force_login(user)
    return client


def _without(response, path: str) -> str:
    """The page with the path it answers left out."""
    return response.content.decode().replace(path, "<path>")


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
def test_view_on_site_answers_another_tenants_object_like_a_missing_one(tenants, settings, debug):
    settings.DEBUG = debug
    ours, theirs = tenants
    foreign = Source.objects.create(namespace=theirs, name="theirs", kind="text", text="x")
    client = _member(ours)
    content_type = ContentType.objects.get_for_model(Source).pk
    found_path, missing_path = f"r/{content_type}/{foreign.pk}/", f"r/{content_type}/{MISSING_ID}/"
    found, missing = client.get(f"/admin/{found_path}"), client.get(f"/admin/{missing_path}")
    assert found.status_code == missing.status_code == 404
    assert _without(found, found_path) == _without(missing, missing_path)
    assert (
        b"Not Found" in found.content or b"not found" in found.content.lower()
    )  # a page, not an empty body


def test_view_on_site_refuses_an_unknown_content_type_like_a_missing_object(tenants, settings):
    settings.DEBUG = True
    ours, _ = tenants
    client = _member(ours)
    own = Source.objects.create(namespace=ours, name="ours", kind="text", text="x")
    unknown = client.get(f"/admin/r/{MISSING_ID}/{own.pk}/")
    missing = client.get(f"/admin/r/{ContentType.objects.get_for_model(Source).pk}/{own.pk}/")
    assert unknown.status_code == missing.status_code == 404
    assert unknown.content == missing.content  # a curator gets the plain page, debug or not


def _vote(client: Client, token: str, query_id: int, chunk_id: int):
    """The vote's response, the statements it ran (numbers left out) and how long it took."""
    with CaptureQueriesContext(connection) as queries:
        started = time.monotonic()
        response = client.post(
            "/api/feedback",
            {"query_id": query_id, "chunk_id": chunk_id, "helpful": True},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        elapsed = time.monotonic() - started
    statements = {re.sub(r"\b\d+\b", "N", q["sql"]) for q in queries.captured_queries}
    return response, statements, elapsed


def test_a_vote_on_another_tenants_search_takes_the_path_of_a_missing_one(tenants):
    """A missing search is waited for (another process may be writing it); another tenant's must
    be too. Both answers take at least that wait and run the same statements: a bound a loaded
    machine cannot break, unlike a ratio of timings."""
    ours, theirs = tenants
    _, token = issue_token("reader", namespaces=[ours])
    foreign = QueryLog.objects.create(namespace=theirs, query="pumpkin", result_ids=[7])
    own = QueryLog.objects.create(namespace=ours, query="apple", result_ids=[8])
    client = Client()
    mine, _, _ = _vote(
        client, token, own.pk, 8
    )  # the control: a vote on one's own search counts (and the
    assert mine.status_code == 200, (
        mine.content
    )  # token's first use, which records it, is behind us)
    found, found_statements, found_time = _vote(client, token, foreign.pk, 7)
    missing, missing_statements, missing_time = _vote(client, token, MISSING_ID, 7)
    assert found.status_code == missing.status_code == 404
    assert found.json()["code"] == missing.json()["code"]
    assert found.json()["message"].replace(str(foreign.pk), "N") == missing.json()[
        "message"
    ].replace(str(MISSING_ID), "N")
    assert found_statements == missing_statements
    assert min(found_time, missing_time) >= 2 * querylog.FLUSH_SECONDS


INTERNAL_DNS = {
    "wiki.corp.test": "10.1.2.3",
    "printer.corp.test": "192.168.7.7",
    "docs.example.test": "93.184.215.14",
}


@pytest.fixture
def internal_dns(monkeypatch, settings):
    """A resolver that knows two internal names and a public one, and fails every other name; it
    counts what it was asked."""
    settings.KB_FETCH_ALLOWED_PRIVATE = []
    kb_settings.cache_clear()
    asked = []
    lookup = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".test"):
            asked.append(host)
            if host not in INTERNAL_DNS:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (INTERNAL_DNS[host], port))]
        return lookup(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield asked
    kb_settings.cache_clear()


NAMES = ["wiki.corp.test", "printer.corp.test", "nowhere.corp.test", "docs.example.test"]


def test_saving_a_web_source_through_the_api_says_nothing_of_what_its_name_resolves_to(
    tenants, internal_dns
):
    ours, _ = tenants
    _, token = issue_token("writer", namespaces=[ours], scope=ApiToken.Scope.WRITE)
    answers = {}
    for index, host in enumerate(NAMES):
        response = Client().post(
            "/api/sources",
            {
                "namespace": ours.slug,
                "name": f"s{index}",
                "kind": "url",
                "location": f"http://{host}/docs",
            },
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        body = response.json()
        answers[host] = (response.status_code, body.get("code"), tuple(body.get("warnings") or ()))
    assert set(answers.values()) == {(201, None, ())}, answers
    assert internal_dns == []  # no name was looked up to save
    with pytest.raises(FetchBlocked):  # the worker's guard still refuses it, when it fetches
        check_fetch(Source.objects.get(location="http://wiki.corp.test/docs").location)


def test_saving_a_web_source_in_the_console_says_nothing_of_what_its_name_resolves_to(
    tenants, internal_dns
):
    ours, _ = tenants
    client = _member(ours)
    answers = {}
    for index, host in enumerate(NAMES):
        response = client.post(
            "/admin/kb/source/add/?kind=url",
            {
                "namespace": ours.pk,
                "name": f"s{index}",
                "location": f"http://{host}/docs",
                "enabled": "on",
                "priority": "0",
                "refresh_interval": "",
                "runs-TOTAL_FORMS": "0",
                "runs-INITIAL_FORMS": "0",
            },
            follow=True,
        )
        shown = [re.sub(r"\d+", "N", str(message)) for message in response.context["messages"]]
        answers[host] = (tuple(response.redirect_chain), tuple(shown))
    assert len(set(answers.values())) == 1, answers
    assert answers[NAMES[0]][0] == (("/admin/kb/source/", 302),)
    assert internal_dns == []


def test_an_address_written_in_the_url_is_still_refused_at_save(tenants, internal_dns):
    ours, _ = tenants
    _, token = issue_token("writer", namespaces=[ours], scope=ApiToken.Scope.WRITE)
    refused = Client().post(
        "/api/sources",
        {"namespace": ours.slug, "name": "s", "kind": "url", "location": "http://10.1.2.3/docs"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert refused.status_code == 400 and refused.json()["code"] == "INGEST_FETCH_BLOCKED"
    port = Client().post(
        "/api/sources",
        {
            "namespace": ours.slug,
            "name": "s",
            "kind": "url",
            "location": "http://wiki.corp.test:8080/docs",
        },
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert port.status_code == 400 and "port 8080" in port.json()["message"]  # decided without DNS
    assert internal_dns == []


def _define_provider(client: Client, provider_id: str, namespace: str):
    return client.post(
        "/admin/kb/provider/add/",
        {
            "slug": provider_id,
            "definition": json.dumps({"namespace": namespace, "capabilities": []}),
            "capabilities-TOTAL_FORMS": "0",
            "capabilities-INITIAL_FORMS": "0",
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
        },
    )


def _form_errors(response) -> str:
    form = response.context["adminform"].form
    return json.dumps(form.errors.get_json_data(), sort_keys=True)


@pytest.mark.parametrize(
    "taken, free",
    [
        ("billing", "payroll"),
        ("tenant.theirs.billing", "tenant.theirs.payroll"),
    ],
    ids=["plain", "named-after-their-namespace"],
)
def test_a_provider_id_another_tenant_took_is_refused_like_a_free_one(tenants, taken, free):
    ours, theirs = tenants
    Provider.objects.create(slug=taken, namespace=theirs)
    client = _member(ours)
    refused_taken, refused_free = (
        _define_provider(client, taken, ours.slug),
        _define_provider(client, free, ours.slug),
    )
    assert (
        refused_taken.status_code == refused_free.status_code == 200
    )  # the form again, with its errors

    def said(response, provider_id):  # the refusal, with the id and its name part left out
        return (
            _form_errors(response)
            .replace(provider_id, "<id>")
            .replace(provider_id.rsplit(".", 1)[-1], "<name>")
        )

    assert said(refused_taken, taken) == said(refused_free, free)
    assert "already exists" not in _form_errors(refused_taken)
    assert set(Provider.objects.values_list("slug", flat=True)) == {taken}


def test_a_member_defines_a_provider_named_after_their_namespace(tenants):
    ours, theirs = tenants
    Provider.objects.create(slug="billing", namespace=theirs)
    client = _member(ours)
    refused = _define_provider(client, "billing", ours.slug)
    assert "use 'tenant.ours.billing'" in _form_errors(refused)  # the refusal says which id to use
    assert _define_provider(client, "tenant.ours.billing", ours.slug).status_code == 302
    assert Provider.objects.get(slug="tenant.ours.billing").namespace == ours
    mine = Provider.objects.create(
        slug="cooking", namespace=ours
    )  # a plain id from before stays editable
    changed = client.post(
        f"/admin/kb/provider/{mine.pk}/change/",
        {
            "slug": "cooking",
            "definition": json.dumps(
                {"namespace": ours.slug, "title": "Cooking", "capabilities": []}
            ),
            "capabilities-TOTAL_FORMS": "0",
            "capabilities-INITIAL_FORMS": "0",
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
        },
    )
    assert changed.status_code == 302, _form_errors(changed)
