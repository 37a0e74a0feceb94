"""The access log of restricted documents: every read of a document with an audience, through the
document page, the API (a person token, a session) and an answer, is a row saying who, which
document, which namespace, when and through what; reads of open documents and refused reads are
not; rows are kept KB_ACCESS_LOG_DAYS days and exported as CSV by superusers. Over HTTP against
the real pages and API (MCP: tests/mcp/test_person_tokens.py)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from kb.audiences import apply_source
from kb.auth import issue_token, staff_principal
from kb.identity.reads import is_restricted, record_restricted_reads
from kb.models import Document, NamespaceMembership
from kb.models.identity import RestrictedRead
from tests.answers.scripted_model import Reply, ScriptedModel
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db

NAMESPACE = "org:handbook"


@pytest.fixture
def org():
    """A private namespace: the corpus, open to its readers, and a source limited to the group
    "hr" with one document; a reader in the group ("in") and one in none ("out")."""
    namespace, _ = ingest(NAMESPACE, CORPUS)
    _, hr = ingest(
        NAMESPACE,
        {"salary": ("=Salary bands", "The salary bands of the grades, paid each quarter.")},
        source_name="hr",
    )
    group = Group.objects.create(name="hr")
    hr.audience_groups.set([group])
    apply_source(hr)
    users = get_user_model().objects
    people = {name: users.create_user(name, password="pw-123456789") for name in ("in", "out")}
    people["in"].groups.add(group)
    for user in people.values():
        NamespaceMembership.objects.create(user=user, namespace=namespace)
    return {
        "secret": Document.objects.get(source=hr),
        "open": Document.objects.filter(source__name="corpus").order_by("pk").first(),
        **people,
    }


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_restricted_means_having_an_audience(org):
    assert is_restricted(org["secret"]) and not is_restricted(org["open"])


def test_the_document_page_logs_a_restricted_read_and_nothing_else(org):
    reader = signed_in(org["in"])
    assert reader.get(f"/documents/{org['open'].pk}/").status_code == 200
    assert not RestrictedRead.objects.exists()
    page = reader.get(f"/documents/{org['secret'].pk}/", REMOTE_ADDR="192.0.2.7")
    assert page.status_code == 200
    row = RestrictedRead.objects.get()
    assert (row.surface, row.user_id, row.username, row.token_id) == (
        "page",
        org["in"].pk,
        "in",
        None,
    )
    assert (row.document_number, row.title, row.namespace) == (
        org["secret"].pk,
        "=Salary bands",
        NAMESPACE,
    )
    assert row.address == "192.0.2.7"
    refused = signed_in(org["out"]).get(f"/documents/{org['secret'].pk}/")
    assert refused.status_code == 404 and RestrictedRead.objects.count() == 1


def test_the_api_logs_the_person_token_and_its_owner(org):
    token, secret = issue_token("laptop", user=org["in"])
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    client = Client()
    for path in (f"/api/documents/{org['secret'].pk}", f"/api/documents/{org['secret'].pk}/text"):
        assert client.get(path, **headers).status_code == 200
    assert client.get(f"/api/documents/{org['open'].pk}", **headers).status_code == 200
    rows = list(RestrictedRead.objects.order_by("pk"))
    assert [(r.surface, r.user_id, r.token_id, r.document_number) for r in rows] == [
        ("api", org["in"].pk, token.pk, org["secret"].pk)
    ] * 2
    assert rows[0].token_name == str(token)
    _, outsider = issue_token("other", user=org["out"])
    refused = client.get(
        f"/api/documents/{org['secret'].pk}", HTTP_AUTHORIZATION=f"Bearer {outsider}"
    )
    assert refused.status_code == 404 and RestrictedRead.objects.count() == 2
    org["in"].groups.clear()  # the owner leaves the group: the token reads it no more, at once
    gone = client.get(f"/api/documents/{org['secret'].pk}", **headers)
    assert gone.status_code == 404 and RestrictedRead.objects.count() == 2


def test_rows_older_than_the_retention_are_pruned_as_new_ones_are_written(org, settings):
    principal = staff_principal(org["in"])
    assert record_restricted_reads(principal, [org["secret"], org["open"]], "api") == 1
    old = RestrictedRead.objects.get()
    RestrictedRead.objects.filter(pk=old.pk).update(at=old.at - timedelta(days=31))
    settings.KB_ACCESS_LOG_DAYS = 30
    from kb.conf import kb_settings

    kb_settings.cache_clear()
    try:
        assert record_restricted_reads(principal, [org["secret"].pk, org["open"].pk], "mcp") == 1
    finally:
        kb_settings.cache_clear()
    assert list(RestrictedRead.objects.values_list("surface", flat=True)) == ["mcp"]


def test_a_superuser_exports_the_log_as_csv_and_nobody_else_sees_it(org):
    record_restricted_reads(staff_principal(org["in"]), [org["secret"]], "page")
    admin = get_user_model().objects.create_superuser("root", password="pw-123456789")
    console = signed_in(admin)
    assert console.get("/admin/kb/restrictedread/").status_code == 200
    response = console.post(
        "/admin/kb/restrictedread/",
        {
            "action": "export_csv",
            "_selected_action": list(RestrictedRead.objects.values_list("pk", flat=True)),
        },
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:3] == ["time (UTC)", "surface", "user name"]
    assert rows[1][1:4] == ["page", "in", str(org["in"].pk)]
    assert "'=Salary bands" in rows[1]  # a title is anyone's text: no formula for a spreadsheet
    curator = get_user_model().objects.create_user(
        "staffer", password="pw-123456789", is_staff=True
    )
    assert signed_in(curator).get("/admin/kb/restrictedread/").status_code == 403


@pytest.fixture
def scripted_answers(settings):
    """The answer tests' scripted model server, answering once without the read tool."""
    from kb.conf import kb_settings

    with ScriptedModel([Reply(text=["The bands are paid each quarter [1]."])]) as server:
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = server.url, server.model
        settings.KB_ANSWER_TOOLS = "off"
        kb_settings.cache_clear()
        yield server
    kb_settings.cache_clear()


def test_an_answer_logs_the_restricted_sources_its_model_read(org, scripted_answers):
    token, secret = issue_token("agent", user=org["in"])
    response = Client().post(
        "/api/answer",
        data={"q": "salary bands of the grades paid each quarter", "namespaces": [NAMESPACE]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert response.status_code == 200, response.content
    sources = {source["document_id"] for source in response.json()["sources"]}
    assert org["secret"].pk in sources
    rows = list(RestrictedRead.objects.all())
    assert [(r.surface, r.user_id, r.token_id, r.document_number) for r in rows] == [
        ("answer", org["in"].pk, token.pk, org["secret"].pk)
    ]  # the open sources beside it are not logged
