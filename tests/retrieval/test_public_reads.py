"""A signed-in member reads its memberships and every public namespace, on every surface a session
reaches (the search page, the API, the document views and originals), and the namespace lists
say which is which; it changes and curates only its own; private namespaces stay closed."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import override_settings

from ingest.service import start_ingest
from ingest.uploads import add_files
from kb.auth import issue_token, staff_principal
from kb.conf import kb_settings
from kb.errors import Forbidden
from kb.models import Document, EvalSuite, Namespace, NamespaceMembership, QueryLog, Source
from retrieval import querylog
from retrieval.service import search
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)  # the public namespace's uploaded original
    kb_settings.cache_clear()
    own, _ = ingest("team-a", CORPUS)
    private, _ = ingest(
        "team-b", {"secret": ("Pumpkin secret", "The secret pumpkin recipe of team B.")}
    )
    public, _ = ingest(
        "demo", {"faq": ("Public FAQ", "Pumpkins are orange, and this answer is public.")}
    )
    Namespace.objects.filter(pk=public.pk).update(is_public=True, title="Demo docs")
    files = Source.objects.create(namespace=public, name="files", kind="file")
    add_files(
        files,
        [("notes.md", io.BytesIO(b"# Public notes\n\nGourds and squashes of the public demo.\n"))],
    )
    assert start_ingest(files, sync=True).status == "succeeded"
    reader = get_user_model().objects.create_user("reader", password="pw-reader-123")
    NamespaceMembership.objects.create(user=reader, namespace=own)
    yield {"own": own, "private": private, "public": public, "reader": reader}
    kb_settings.cache_clear()


def _signed_in(client, user):
    client.force_login(user)
    return client


def test_a_member_reads_a_public_namespace_on_every_surface(client, world):
    _signed_in(client, world["reader"])
    page = client.get("/", {"q": "orange pumpkins", "namespace": "demo"})
    assert page.status_code == 200, page.content.decode()[:500]
    assert [row["hit"].title for row in page.context["results"]["rows"]][0] == "Public FAQ"
    api = client.get("/api/search", {"query": "orange pumpkins", "namespace": "demo"})
    assert api.status_code == 200 and api.json()["results"][0]["title"] == "Public FAQ"
    assert client.get("/api/spelling", {"query": "pumpkns", "namespace": "demo"}).json() == {
        "correction": "pumpkins"
    }
    assert client.get("/suggest", {"q": "pumpkns", "namespace": "demo"}).json() == {
        "correction": "pumpkins"
    }
    faq = Document.objects.get(namespace=world["public"], ref="faq")
    assert client.get(f"/documents/{faq.pk}/").status_code == 200
    assert client.get(f"/api/documents/{faq.pk}").status_code == 200
    assert (
        client.get(f"/api/documents/{faq.pk}/text").json()["text"].startswith("Pumpkins are orange")
    )
    listed = client.get("/api/documents", {"namespace": "demo"}).json()
    assert listed["count"] == 2
    notes = Document.objects.get(namespace=world["public"], ref="notes.md")
    original = client.get(f"/documents/{notes.pk}/original")
    assert original.status_code == 200 and original.content.startswith(b"# Public notes")
    sources = client.get("/api/sources", {"namespace": "demo"}).json()
    assert sorted(s["name"] for s in sources) == ["corpus", "files"]
    # a vote on a public namespace's result, as a signed-out reader may cast
    query_id = api.json()["query_id"]
    chunk_id = api.json()["results"][0]["chunk_id"]
    vote = client.post(
        "/api/feedback",
        {"query_id": query_id, "chunk_id": chunk_id, "helpful": True},
        content_type="application/json",
    )
    assert vote.status_code == 200, vote.content


def test_private_namespaces_stay_closed_to_a_member_of_another(client, world):
    _signed_in(client, world["reader"])
    denied = client.get("/api/search", {"query": "pumpkin", "namespace": "team-b"})
    missing = client.get("/api/search", {"query": "pumpkin", "namespace": "no-such-team"})
    assert denied.status_code == missing.status_code == 403
    assert denied.json()["message"].replace("team-b", "X") == missing.json()["message"].replace(
        "no-such-team", "X"
    )
    assert client.get("/", {"q": "pumpkin", "namespace": "team-b"}).status_code == 403
    secret = Document.objects.get(namespace=world["private"])
    assert client.get(f"/documents/{secret.pk}/").status_code == 404
    assert client.get(f"/api/documents/{secret.pk}").status_code == 404
    assert client.get("/api/sources", {"namespace": "team-b"}).status_code == 403
    assert client.get("/suggest", {"q": "pumpkn", "namespace": "team-b"}).json() == {
        "correction": None
    }


def test_reading_a_public_namespace_gives_no_right_to_change_it(client, world):
    _signed_in(client, world["reader"])
    source = Source.objects.get(namespace=world["public"], name="corpus")
    for answer in (
        client.patch(
            f"/api/sources/{source.pk}", {"enabled": False}, content_type="application/json"
        ),
        client.post(f"/api/sources/{source.pk}/ingest"),
        client.delete(f"/api/sources/{source.pk}"),
        client.post(
            "/api/sources",
            {"namespace": "demo", "name": "mine", "kind": "text", "text": "x"},
            content_type="application/json",
        ),
    ):
        assert answer.status_code == 403 and answer.json()["code"] == "KB_FORBIDDEN", answer.content
        assert (
            "is public: you may read it, but changing it needs a membership with write rights"
            in answer.json()["message"]
        )
    source.refresh_from_db()
    assert source.enabled and not Source.objects.filter(name="mine").exists()
    principal = staff_principal(world["reader"])
    principal.check("demo")
    with pytest.raises(Forbidden, match="is public: you may read it"):
        principal.check("demo", write=True)


def test_a_staff_member_does_not_curate_a_public_namespace_it_merely_reads(client, world):
    editor = get_user_model().objects.create_user("editor", password="pw", is_staff=True)
    editor.user_permissions.add(*Permission.objects.filter(content_type__app_label="kb"))
    NamespaceMembership.objects.create(user=editor, namespace=world["own"], can_write=True)
    search("orange pumpkins", "demo", limit=3)  # a logged search of the public namespace
    querylog.flush()
    _signed_in(client, editor)
    assert (
        client.get("/api/search", {"query": "orange pumpkins", "namespace": "demo"}).status_code
        == 200
    )
    report = client.get("/curate/", {"namespace": "demo"})
    assert [ns.slug for ns in report.context["namespaces"]] == ["team-a"]
    assert (
        report.context["namespace"] is None and report.context["report"] is None
    )  # nothing of demo's queries
    log = QueryLog.objects.filter(namespace=world["public"]).latest("pk")
    made = client.post("/curate/eval-case", {"namespace": "demo", "query": str(log.pk)})
    assert made.status_code in (403, 404) and not EvalSuite.objects.exists()
    admin_sources = client.get("/admin/kb/source/").content.decode()
    public_source = Source.objects.get(namespace=world["public"], name="files")
    own_source = Source.objects.get(namespace=world["own"])
    assert (
        f"/admin/kb/source/{own_source.pk}/change/" in admin_sources
    )  # the admin lists its own namespaces
    assert f"/admin/kb/source/{public_source.pk}/change/" not in admin_sources
    assert client.get(f"/admin/kb/source/{public_source.pk}/change/").status_code in (302, 404)


def test_the_namespace_lists_mark_member_and_public_namespaces(client, world):
    def access(answer):
        return {n["slug"]: n["access"] for n in answer.json()["namespaces"]}

    assert access(client.get("/api/namespaces")) == {"demo": "public"}
    _, token = issue_token("a", namespaces=[world["own"]])
    assert access(client.get("/api/namespaces", HTTP_AUTHORIZATION=f"Bearer {token}")) == {
        "team-a": "token"
    }
    _signed_in(client, world["reader"])
    assert access(client.get("/api/namespaces")) == {"demo": "public", "team-a": "member"}
    page = client.get("/")
    groups = [(label, [ns.slug for ns in group]) for label, group in page.context["groups"]]
    assert groups == [("Your collections", ["team-a"]), ("Public collections", ["demo"])]
    html = page.content.decode()
    assert (
        '<optgroup label="Your collections">' in html
        and '<optgroup label="Public collections">' in html
    )
    client.logout()
    assert (
        "<optgroup" not in client.get("/").content.decode()
    )  # signed out, every collection is public
    root = get_user_model().objects.create_superuser("root", password="pw")
    _signed_in(client, root)
    assert access(client.get("/api/namespaces")) == {
        "demo": "superuser",
        "team-a": "superuser",
        "team-b": "superuser",
    }


@override_settings(KB_DEFAULT_NAMESPACE="demo")
def test_a_member_opens_on_its_own_collection_before_the_public_default(client, world):
    kb_settings.cache_clear()
    assert client.get("/").context["namespace"] == "demo"  # signed out: the default
    _signed_in(client, world["reader"])
    assert client.get("/").context["namespace"] == "team-a"
    NamespaceMembership.objects.filter(
        user=world["reader"]
    ).delete()  # no membership: the public default
    assert client.get("/").context["namespace"] == "demo"
