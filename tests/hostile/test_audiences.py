"""Audiences inside a namespace (issue #61): a source or a document limited to a group is read
by that group (and the namespace's curators and superusers) on every read path, and by nobody
else on any: not its passages, not its title, not a word of it through the statistics, the
spelling or a count. Real PostgreSQL, the real pipeline and model; nothing mocked.

`test_the_tenancy_walk_finds_nothing_of_a_restricted_document` runs every read surface as a
reader outside the audience; each other test takes one read path and shows both sides."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from capabilities import service as capabilities
from kb.audiences import apply_document, apply_source
from kb.auth import issue_token, staff_principal
from kb.conf import kb_settings
from kb.models import (
    Chunk,
    Document,
    ExternalIdentity,
    GroupRule,
    NamespaceMembership,
    Source,
)
from retrieval import lexical, query_words
from retrieval.scope import Scope
from retrieval.service import search
from tests.answers.scripted_model import Reply, ScriptedModel
from tests.corpus import CORPUS, ingest
from tests.mcp.conftest import MODERN

pytestmark = pytest.mark.django_db

NAMESPACE = "org:handbook"
SECRET_TITLE = "Zanzibarite salary bands"
SECRET_TEXT = (
    "The zanzibarite salary bands: grade seven earns quorblesworth, paid in marmalite each "
    "quarter. Roast the pumpkin for the staff party."
)
SECRET_WORDS = ("zanzibarite", "quorblesworth", "marmalite", "salary bands")


def leaked(body: str | bytes) -> list[str]:
    """The secret document's words found in a response."""
    text = (body.decode() if isinstance(body, bytes) else body).lower()
    return [word for word in SECRET_WORDS if word in text]


@pytest.fixture
def org(db):
    """A private namespace: the corpus, open to its readers, and a source limited to the
    group "hr" holding one document; an outsider (a reader in no group), an insider (a reader in
    the group) and a curator (in no group, but the namespace's curator)."""
    namespace, _ = ingest(NAMESPACE, CORPUS)
    _, hr = ingest(NAMESPACE, {"salary": (SECRET_TITLE, SECRET_TEXT)}, source_name="salary bands")
    group = Group.objects.create(name="hr")
    hr.audience_groups.set([group])
    apply_source(hr)
    hr.refresh_from_db()
    users = get_user_model().objects
    people = {name: users.create_user(name, password="pw") for name in ("out", "in", "curator")}
    people["in"].groups.add(group)
    for name, user in people.items():
        NamespaceMembership.objects.create(
            user=user, namespace=namespace, can_write=name == "curator"
        )
    secret = Document.objects.get(source=hr)
    return {
        "namespace": namespace,
        "source": hr,
        "group": group,
        "document": secret,
        "chunk": Chunk.objects.filter(document=secret).first(),
        **people,
    }


@pytest.fixture
def answer_model(settings):
    """The answer tests' scripted model server (tests/answers/conftest.py), for these tests."""
    servers = []

    def start(replies):
        server = ScriptedModel(replies).__enter__()
        servers.append(server)
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = server.url, server.model
        kb_settings.cache_clear()
        return server

    yield start
    for server in servers:
        server.__exit__()
    kb_settings.cache_clear()


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_source_s_documents_and_chunks_take_its_audience(org):
    document, audience = org["document"], org["source"].audience_id
    assert audience is not None and document.audience_id == audience
    assert set(Chunk.objects.filter(document=document).values_list("audience_id", flat=True)) == {
        audience
    }
    assert not Document.objects.filter(source__name="corpus", audience__isnull=False).exists()


def test_restricted_words_stay_out_of_the_namespace_statistics(org):
    """The document frequencies, chunk count and vocabulary an outsider's search reads hold no
    word of the restricted document; an insider's add its audience's."""
    namespace = org["namespace"]
    lexemes = query_words.query_lexemes("zanzibarite pumpkin")
    outside = lexical.term_statistics(Scope(namespace.pk), lexemes)
    inside = lexical.term_statistics(
        Scope(namespace.pk, audiences=(org["source"].audience_id,)), lexemes
    )
    assert [t.lexeme for t in outside.terms] == ["pumpkin"]
    assert outside.chunk_count == Chunk.objects.filter(document__source__name="corpus").count()
    assert {t.lexeme: t.document_frequency for t in inside.terms}["zanzibarit"] == 1
    assert inside.chunk_count == outside.chunk_count + 1
    # pumpkin's frequency counts the restricted passage only for the insider
    pumpkin = {t.lexeme: t.document_frequency for t in outside.terms}["pumpkin"]
    assert {t.lexeme: t.document_frequency for t in inside.terms}["pumpkin"] == pumpkin + 1


@pytest.mark.parametrize("who", ["out", "in", "curator"])
def test_search_finds_the_restricted_document_for_its_audience_only(org, who):
    reach = staff_principal(org[who]).audiences
    found = {
        hit.document_id for hit in search("zanzibarite salary bands", NAMESPACE, reach=reach).hits
    }
    assert (org["document"].pk in found) == (who != "out")


def test_an_outsider_s_search_reads_as_if_the_document_did_not_exist(org):
    """Not only absent from the hits: the words channel says no word of the query occurs, as it
    would with the document deleted."""
    result = search(
        "zanzibarite quorblesworth", NAMESPACE, reach=staff_principal(org["out"]).audiences
    )
    assert result.hits == [] or org["document"].pk not in {h.document_id for h in result.hits}
    assert result.query_idf == 0
    assert not leaked(json.dumps([h.title + h.text for h in result.hits]))


def test_a_document_s_own_groups_override_its_source_s(org):
    """The secret document opened by a group of its own that the outsider is in; another
    document of the open source limited to the insider's group."""
    other = Group.objects.create(name="everyone-else")
    org["out"].groups.add(other)
    document = org["document"]
    document.audience_groups.set([other])
    apply_document(document)
    soup = Document.objects.get(namespace=org["namespace"], ref="pumpkin")
    soup.audience_groups.set([org["group"]])
    apply_document(soup)

    def found(who, query):
        reach = staff_principal(org[who]).audiences
        return {h.document_id for h in search(query, NAMESPACE, reach=reach).hits}

    assert document.pk in found("out", "zanzibarite salary bands")
    assert document.pk not in found("in", "zanzibarite salary bands")
    assert soup.pk in found("in", "pumpkin soup nutmeg")
    assert soup.pk not in found("out", "pumpkin soup nutmeg")


def test_a_stale_copy_saved_by_other_code_cannot_open_a_restricted_document(org):
    """An ingest that read a document (or source) before the curator restricted it and saves it
    afterwards leaves the audience alone (the database's guard, migration 0049)."""
    stale = Document.objects.get(pk=org["document"].pk)
    stale.audience_id = None
    stale.title = SECRET_TITLE  # any save of the row
    stale.save()
    source = Source.objects.get(pk=org["source"].pk)
    source.audience_id = None
    source.save()
    assert Document.objects.get(pk=stale.pk).audience_id == org["source"].audience_id
    assert Source.objects.get(pk=source.pk).audience_id is not None


def test_opening_the_source_again_opens_its_documents_and_moves_their_statistics(org):
    source = org["source"]
    source.audience_groups.clear()
    apply_source(source)
    lexemes = query_words.query_lexemes("zanzibarite")
    assert Document.objects.get(pk=org["document"].pk).audience_id is None
    terms = lexical.term_statistics(Scope(org["namespace"].pk), lexemes).terms
    assert [t.document_frequency for t in terms] == [1]
    assert org["document"].pk in {h.document_id for h in search("zanzibarite", NAMESPACE).hits}


def test_a_group_from_the_identity_provider_counts_as_the_django_group_of_its_name(org):
    """A person single sign-on made: the provider says they are in "HR" (as of their last sign-in),
    so they read what the Django group "hr" reads; once the provider drops it, they do not."""
    from django.utils import timezone

    person = get_user_model().objects.create_user("sso-person")
    NamespaceMembership.objects.create(user=person, namespace=org["namespace"])
    identity = ExternalIdentity.objects.create(
        user=person, provider="oidc", subject="s1", groups=["HR"], synced_at=timezone.now()
    )
    assert org["source"].audience_id in staff_principal(person).audiences
    identity.groups = ["sales"]
    identity.save()
    assert org["source"].audience_id not in staff_principal(person).audiences


@pytest.mark.parametrize(
    "path",
    [
        "/api/documents/{id}",
        "/api/documents/{id}/text",
        "/documents/{id}/",
        "/documents/{id}/original",
    ],
)
def test_a_restricted_document_answers_exactly_like_a_missing_one(org, path):
    outsider, insider = client_of(org["out"]), client_of(org["in"])
    restricted = outsider.get(path.format(id=org["document"].pk))
    missing = outsider.get(path.format(id=10**9))
    assert restricted.status_code == missing.status_code == 404

    def body(response, number):  # the id asked for and the page's CSRF token aside
        text = response.content.decode().replace(str(number), "N")
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", text)

    assert body(restricted, org["document"].pk) == body(missing, 10**9)
    if "original" not in path:  # a text source has no original, for anyone
        assert insider.get(path.format(id=org["document"].pk)).status_code == 200


def test_the_document_list_and_the_namespace_counts_leave_it_out(org):
    outsider, insider = client_of(org["out"]), client_of(org["in"])
    listed = outsider.get("/api/documents", {"namespace": NAMESPACE, "page_size": 100}).json()
    assert org["document"].pk not in {d["id"] for d in listed["results"]}
    assert not leaked(json.dumps(listed))
    inside = insider.get("/api/documents", {"namespace": NAMESPACE, "page_size": 100}).json()
    assert org["document"].pk in {d["id"] for d in inside["results"]}
    counts = {n["slug"]: n for n in outsider.get("/api/namespaces").json()["namespaces"]}
    assert counts[NAMESPACE]["documents"] == len(CORPUS)


def test_spelling_offers_no_word_of_a_restricted_document(org):
    """ "Did you mean" respells from the open documents' vocabulary alone."""
    for who in ("out", "in"):
        answer = client_of(org[who]).get(
            "/api/spelling", {"query": "zanzibarit quorblesworht", "namespace": NAMESPACE}
        )
        assert answer.status_code == 200 and not leaked(json.dumps(answer.json()))


def test_capability_knowledge_never_reads_a_restricted_document(org):
    capabilities.load_definitions(
        {
            "id": "people",
            "namespace": NAMESPACE,
            "capabilities": [
                {
                    "name": "pay",
                    "title": "Pay",
                    "summary": "Salary bands and pay.",
                    "knowledge": [
                        {"source": "salary bands"},
                        {"source": "salary bands", "document": "salary"},
                    ],
                }
            ],
        }
    )
    for who, sees in (("out", False), ("in", True)):
        result = capabilities.retrieve_knowledge(
            staff_principal(org[who]), ["people/pay"], "zanzibarite salary bands"
        )
        assert bool(leaked(json.dumps(result.hits, default=str))) == sees
        assert (
            f"document:{org['document'].pk}" in json.dumps(result.evidence, default=str)
        ) == sees


def test_an_answer_neither_cites_nor_reads_a_restricted_document(org, answer_model):
    from answers.service import answer_events

    model = answer_model(
        [
            Reply(tool_calls=[{"name": "read", "arguments": {"source": 1, "offset": 0}}]),
            Reply(text=["Roast the pumpkin [1]."]),
        ]
    )
    events = list(
        answer_events(
            staff_principal(org["out"]),
            [NAMESPACE],
            "zanzibarite salary bands pumpkin",
            stream=False,
        )
    )
    assert not leaked(json.dumps(events, default=str))
    assert not leaked(json.dumps(model.requests))


def test_an_eval_run_searches_with_the_caller_s_audiences(org):
    suite = {
        "version": 1,
        "cases": [
            {
                "id": "pay",
                "question": "zanzibarite salary bands",
                "expect": {"sourceIncludes": "salary"},
            }
        ],
    }
    for who, passes in (("out", False), ("in", True)):
        ran = client_of(org[who]).post(
            "/api/evals/run",
            data={"namespace": NAMESPACE, "suite": suite},
            content_type="application/json",
        )
        assert ran.status_code == 200, ran.content
        assert ran.json()["cases"][0]["passed"] == passes


def test_the_console_lists_restricted_documents_to_their_audience_and_curators_only(org):
    for who, sees in (("out", False), ("in", True), ("curator", True)):
        user = org[who]
        user.is_staff = True
        user.save()
        client = client_of(user)
        documents = client.get("/admin/kb/document/").content.decode()
        chunks = client.get("/admin/kb/chunk/").content.decode()
        assert (SECRET_TITLE in documents) == sees, who
        assert bool(leaked(chunks)) == sees, who
        detail = client.get(f"/admin/kb/document/{org['document'].pk}/change/")
        assert (detail.status_code == 200) == sees, who


def mcp(token: str, name: str, arguments: dict) -> str:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    )
    response = Client().post(
        "/mcp",
        data=body,
        content_type="application/json",
        HTTP_MCP_PROTOCOL_VERSION=MODERN,
        HTTP_MCP_METHOD="tools/call",
        HTTP_MCP_NAME=name,
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    return response.content.decode()


def walk(org, answer_model) -> dict[str, str]:
    """Every read surface as the outsider, with the restricted document present: what each
    answered. Pages and the API with their session, MCP with a token of the namespace (which
    reads open documents only), answers through the API."""
    answer_model(
        [
            Reply(tool_calls=[{"name": "read", "arguments": {"source": 1, "offset": 0}}]),
            Reply(text=["Roast the pumpkin [1]."]),
        ]
    )
    document, chunk = org["document"], org["chunk"]
    # words of the restricted document that the leak check does not look for (a response may
    # echo its query), and that no open document holds
    query = "grade seven earns paid each quarter"
    user = org["out"]
    user.is_staff = True  # also a console user: the console's lists are read surfaces too
    user.save()
    web = client_of(user)
    _, token = issue_token("agent", namespaces=[org["namespace"]])
    seen = {
        "api search": web.get(
            "/api/search", {"query": query, "namespace": NAMESPACE, "explain": "true"}
        ),
        "api search grouped": web.get(
            "/api/search", {"query": query, "namespace": NAMESPACE, "group": "document"}
        ),
        "api context": web.post(
            "/api/context",
            data={"query": query, "namespace": NAMESPACE},
            content_type="application/json",
        ),
        "api spelling": web.get("/api/spelling", {"query": "zanzibarit", "namespace": NAMESPACE}),
        "api sources": web.get("/api/sources", {"namespace": NAMESPACE}),
        "api documents": web.get("/api/documents", {"namespace": NAMESPACE, "page_size": 100}),
        "api document": web.get(f"/api/documents/{document.pk}"),
        "api document text": web.get(f"/api/documents/{document.pk}/text"),
        "api namespaces": web.get("/api/namespaces"),
        "api answer": web.post(
            "/api/answer",
            data={"q": query, "namespaces": [NAMESPACE], "stream": False},
            content_type="application/json",
        ),
        "page search": web.get("/", {"q": query, "namespace": NAMESPACE}),
        "page suggest": web.get("/suggest", {"q": "zanzibarit", "namespace": NAMESPACE}),
        "page document": web.get(f"/documents/{document.pk}/"),
        "page original": web.get(f"/documents/{document.pk}/original"),
        "console documents": web.get("/admin/kb/document/"),
        "console chunks": web.get("/admin/kb/chunk/", {"q": "grade seven"}),
        "console document": web.get(f"/admin/kb/document/{document.pk}/change/"),
        "mcp search": mcp(token, "search", {"query": query, "namespaces": [NAMESPACE]}),
        "mcp context": mcp(token, "context", {"query": query, "namespaces": [NAMESPACE]}),
        "mcp fetch passage": mcp(token, "fetch", {"id": f"c{chunk.pk}"}),
        "mcp fetch document": mcp(token, "fetch", {"id": f"d{document.pk}"}),
        "mcp namespaces": mcp(token, "list_namespaces", {}),
        "mcp sources": mcp(token, "list_sources", {"namespaces": [NAMESPACE]}),
    }
    return {
        name: (answer if isinstance(answer, str) else answer.content.decode())
        for name, answer in seen.items()
    }


def test_the_tenancy_walk_finds_nothing_of_a_restricted_document(org, answer_model):
    seen = walk(org, answer_model)
    found = {name: leaked(body) for name, body in seen.items() if leaked(body)}
    assert not found, found
    # nor a word's weight: the query's words occur only in the restricted document, so for the
    # outsider the words channel finds none of them in the namespace's statistics
    notes = json.loads(seen["api search"])["summary"]["channel_notes"]
    assert any(note["reason"].startswith("No word of the query occurs") for note in notes), notes
    # and the walk reads what it should: the open documents are there
    assert "pumpkin" in seen["api search"].lower() or "Pumpkin" in seen["page search"]


def test_a_curator_limits_a_source_and_a_document_in_the_console(org):
    """The source's form has an Audience section; a document's page lets its curators give it
    groups of its own and nothing else. Both apply at once."""
    from tests.hostile.console_walk import form_data

    curator = org["curator"]
    curator.is_staff = True
    curator.save()
    client = client_of(curator)
    corpus = Source.objects.get(namespace=org["namespace"], name="corpus")
    page = client.get(f"/admin/kb/source/{corpus.pk}/change/")
    assert page.status_code == 200 and "Audience" in page.content.decode()
    data, _ = form_data(page.context)
    data["audience_groups"] = [str(org["group"].pk)]
    saved = client.post(f"/admin/kb/source/{corpus.pk}/change/", data)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    outsider = staff_principal(org["out"]).audiences
    assert search("pumpkin soup", NAMESPACE, reach=outsider).hits == []

    soup = Document.objects.get(namespace=org["namespace"], ref="pumpkin")
    other = Group.objects.create(name="cooks")
    org["out"].groups.add(other)
    unknown = Group.objects.create(name="another tenant's group")
    page = client.get(f"/admin/kb/document/{soup.pk}/change/")
    offered = set(page.context["adminform"].form.fields["audience_groups"].queryset)
    # a curator chooses among the groups their namespaces know: one a group rule names, one
    # already an audience there; never another tenant's
    assert offered == {org["group"]}
    GroupRule.objects.create(provider="oidc", group="Cooks", namespace=org["namespace"])
    page = client.get(f"/admin/kb/document/{soup.pk}/change/")
    offered = set(page.context["adminform"].form.fields["audience_groups"].queryset)
    assert offered == {org["group"], other} and unknown not in offered
    data, _ = form_data(page.context)
    assert set(page.context["adminform"].form.fields) == {"audience_groups"}
    data["audience_groups"] = [str(other.pk)]
    saved = client.post(f"/admin/kb/document/{soup.pk}/change/", data)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    found = search("pumpkin soup", NAMESPACE, reach=staff_principal(org["out"]).audiences).hits
    assert {hit.document_id for hit in found} == {soup.pk}
    # a reader of the namespace who is no curator may not change a document's audience
    reader = org["in"]
    reader.is_staff = True
    reader.save()
    refused = client_of(reader).post(f"/admin/kb/document/{soup.pk}/change/", data)
    assert refused.status_code == 403


def test_the_audience_benchmark_measures_each_reader_and_leaves_the_namespace_as_it_was(org):
    """`kb_bench --audiences` (evaluation/audience_bench.py) on the small corpus, with a latency
    measure that counts what each reader finds instead of timing it."""
    from evaluation.audience_bench import audience_latency

    before = dict(Document.objects.values_list("pk", "audience_id"))

    def found(namespace, reach=frozenset()):
        hits = search("pumpkin soup roast", namespace, reach=reach, log=False).hits
        return {"p95_ms": 1.0, "documents": len({hit.document_id for hit in hits})}

    report = audience_latency(NAMESPACE, found, rounds=1)
    assert report["restricted_documents"] == (report["documents"] + 1) // 2
    measured = report["rounds"][0]
    assert measured["half_restricted_outside"]["documents"] < measured["open"]["documents"]
    assert measured["half_restricted_inside"]["documents"] >= measured["open"]["documents"]
    assert set(report["p95_vs_open"]) == {
        "half_restricted_outside",
        "half_restricted_inside",
        "every_document_inside_one",
    }
    assert dict(Document.objects.values_list("pk", "audience_id")) == before
    assert not Document.audience_groups.through.objects.exists()


def test_a_vote_on_a_restricted_result_answers_like_a_vote_on_no_result(org):
    """An insider's logged search names the restricted passage; an outsider voting on it gets
    the answer for a passage that is not one of the search's results (no document id back)."""
    searched = client_of(org["in"]).get(
        "/api/search", {"query": "zanzibarite salary bands", "namespace": NAMESPACE}
    )
    query_id = searched.json()["query_id"]
    chunk = org["chunk"].pk
    assert chunk in {hit["chunk_id"] for hit in searched.json()["results"]}

    def vote(who, chunk_id):
        return client_of(org[who]).post(
            "/api/feedback",
            data={"query_id": query_id, "chunk_id": chunk_id, "helpful": True},
            content_type="application/json",
        )

    refused, unknown = vote("out", chunk), vote("out", 10**9)
    assert refused.status_code == unknown.status_code != 200
    assert refused.json()["code"] == unknown.json()["code"]
    assert vote("in", chunk).json()["document_id"] == org["document"].pk
