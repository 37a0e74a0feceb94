"""Tenancy edges: ids of another namespace read as missing; staff see only the namespaces they
are members of (superusers all) in the API, the page and the admin; capabilities never open
another tenant's documents."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from kb.auth import issue_token
from kb.models import Document, IngestRun, NamespaceMembership, Source
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants():
    a, _ = ingest("tenant:a", CORPUS)
    b, _ = ingest(
        "tenant:b", {"secret": ("Pumpkin secret", "The secret pumpkin recipe of tenant B.")}
    )
    return a, b


@pytest.mark.parametrize(
    "path",
    [
        "/api/sources/{source}",
        "/api/runs/{run}",
        "/api/documents/{document}",
        "/api/documents/{document}/text",
    ],
)
def test_another_tenants_ids_answer_like_missing_ones(tenants, path):
    a, b = tenants
    _, reader = issue_token("r", namespaces=[a])
    source = Source.objects.filter(namespace=b).first()
    run = IngestRun.objects.create(source=source)
    document = Document.objects.filter(namespace=b).first()
    ids = {"source": source.pk, "run": run.pk, "document": document.pk}
    if path.startswith("/api/sources/"):
        path_method = "patch"
    else:
        path_method = "get"
    client = Client(HTTP_AUTHORIZATION=f"Bearer {reader}")
    foreign = getattr(client, path_method)(
        path.format(**ids), content_type="application/json", data={}
    )
    missing = getattr(client, path_method)(
        path.format(source=10**9, run=10**9, document=10**9),
        content_type="application/json",
        data={},
    )
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json()["code"] == missing.json()["code"]


def test_staff_members_see_only_their_namespaces(tenants):
    a, b = tenants
    user = get_user_model().objects.create_user("editor", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="kb"))
    NamespaceMembership.objects.create(user=user, namespace=a, can_write=False)
    client = Client()
    client.force_login(user)
    assert (
        client.get("/api/search", {"query": "pumpkin", "namespace": "tenant:a"}).status_code == 200
    )
    assert (
        client.get("/api/search", {"query": "pumpkin", "namespace": "tenant:b"}).status_code == 403
    )
    page = client.get("/", {"q": "pumpkin", "namespace": "tenant:b"}).content.decode()
    assert "tenant B" not in page
    listing = client.get("/admin/kb/document/").content.decode()
    assert "Pumpkin soup" in listing or "pumpkin" in listing.lower()
    assert "Pumpkin secret" not in listing
    foreign = Document.objects.filter(namespace=b).first()
    assert client.get(f"/admin/kb/document/{foreign.pk}/change/").status_code in (302, 404)
    source = Source.objects.filter(namespace=a).first()
    # a read-only member may look but not change
    assert client.post(f"/admin/kb/source/{source.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.patch(
        f"/api/sources/{source.pk}",
        data={"enabled": False},
        content_type="application/json",
        HTTP_X_CSRFTOKEN="x",
    ).status_code in (403, 401)
    assert client.get("/admin/kb/apitoken/").status_code == 403  # tokens are a superuser's to issue


def test_a_superuser_sees_every_namespace(tenants):
    superuser = get_user_model().objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(superuser)
    assert (
        client.get("/api/search", {"query": "pumpkin", "namespace": "tenant:b"}).status_code == 200
    )
    assert "Pumpkin secret" in client.get("/admin/kb/document/").content.decode()


def test_staff_members_see_and_define_providers_only_in_their_namespaces(tenants):
    from capabilities import service
    from kb.models import Capability, Provider

    a, b = tenants
    for slug, namespace in (("ours", "tenant:a"), ("theirs", "tenant:b")):
        service.load_definitions(
            {
                "id": slug,
                "namespace": namespace,
                "capabilities": [
                    {
                        "name": "cook",
                        "title": f"Cook for {slug}",
                        "knowledge": [{"source": "corpus"}],
                    }
                ],
            },
            reindex=False,
        )
    user = get_user_model().objects.create_user("editor", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="kb"))
    NamespaceMembership.objects.create(user=user, namespace=a, can_write=True)
    client = Client()
    client.force_login(user)
    providers = client.get("/admin/kb/provider/").content.decode()
    assert "ours" in providers and "theirs" not in providers
    capabilities = client.get("/admin/kb/capability/").content.decode()
    assert "Cook for ours" in capabilities and "Cook for theirs" not in capabilities
    theirs = Provider.objects.get(slug="theirs")
    assert client.get(f"/admin/kb/provider/{theirs.pk}/change/").status_code in (302, 404)
    # a definition naming a namespace the member may not change is refused, and nothing is written
    form = {"slug": "sneaky", "definition": '{"namespace": "tenant:b", "capabilities": []}'}
    refused = client.post("/admin/kb/provider/add/", form)
    assert refused.status_code == 200 and "KB_FORBIDDEN" in refused.content.decode()
    assert not Provider.objects.filter(slug="sneaky").exists()
    assert Capability.objects.filter(provider__slug="theirs").count() == 1


def test_a_membership_alone_opens_the_console_as_the_docs_say(tenants):
    """getting-started.md: a staff user with a *read* membership sees the namespace's sources, runs
    and documents; *write* may also add sources. No Django model permission is ticked here."""
    a, b = tenants
    users = {}
    for name, can_write in (("reader", False), ("writer", True), ("outsider", None)):
        user = get_user_model().objects.create_user(name, password="pw", is_staff=True)
        if can_write is not None:
            NamespaceMembership.objects.create(user=user, namespace=a, can_write=can_write)
        users[name] = Client()
        users[name].force_login(user)
    index = users["reader"].get("/admin/").content.decode()
    assert (
        "/admin/kb/source/" in index
        and "/admin/kb/document/" in index
        and "/admin/kb/ingestrun/" in index
    )
    listing = users["reader"].get("/admin/kb/document/").content.decode()
    mine = Document.objects.filter(namespace=a).first()
    assert f"/admin/kb/document/{mine.pk}/change/" in listing and "Pumpkin secret" not in listing
    assert users["reader"].get("/admin/kb/source/add/?kind=crawl").status_code == 403
    assert users["writer"].get("/admin/kb/source/add/?kind=crawl").status_code == 200
    assert "/admin/kb/source/" not in users["outsider"].get("/admin/").content.decode()
    assert users["outsider"].get("/admin/kb/document/").status_code == 403
    assert "/admin/kb/namespacemembership/" not in index  # who may read what stays a superuser's


def test_a_superuser_only_page_refuses_a_member_alike_for_existing_and_missing_ids(tenants):
    a, _ = tenants
    user = get_user_model().objects.create_user("member", password="pw", is_staff=True)
    membership = NamespaceMembership.objects.create(user=user, namespace=a, can_write=True)
    client = Client()
    client.force_login(user)
    for path in ("/admin/kb/namespacemembership/{}/history/", "/admin/auth/user/{}/history/"):
        existing = client.get(path.format(membership.pk if "membership" in path else user.pk))
        missing = client.get(path.format(10**9))
        assert existing.status_code == missing.status_code == 403


def test_a_writing_member_cannot_rename_or_publish_the_namespace(tenants):
    """A taken slug would be refused as taken, naming another tenant's namespace; and whether
    anyone may read a namespace is the operator's decision."""
    a, b = tenants
    user = get_user_model().objects.create_user("writer", password="pw", is_staff=True)
    NamespaceMembership.objects.create(user=user, namespace=a, can_write=True)
    client = Client()
    client.force_login(user)
    page = client.get(f"/admin/kb/namespace/{a.pk}/change/").content.decode()
    assert 'name="title"' in page and 'name="slug"' not in page and 'name="is_public"' not in page
    response = client.post(
        f"/admin/kb/namespace/{a.pk}/change/",
        {
            "slug": b.slug,
            "title": "Renamed",
            "is_public": "on",
            "language": a.language,
            "description": "",
        },
    )
    a.refresh_from_db()
    assert response.status_code == 302 and "already exists" not in response.content.decode()
    assert (a.slug, a.title, a.is_public) == ("tenant:a", "Renamed", False)
