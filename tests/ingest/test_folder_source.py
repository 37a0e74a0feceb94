"""Folder sources in the console and on disk: the form explains its directory and refuses one
outside KB_FOLDER_ROOTS, links inside the folder are not followed, globs select files, real
reStructuredText reads with its section ids, and held removals are shown and confirmed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from ingest.pipeline import IngestPipeline
from kb.auth import issue_token
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import ApiToken, Document, IngestRun, Source

pytestmark = pytest.mark.django_db
REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"


@pytest.fixture
def roots(settings, tmp_path):
    root = tmp_path / "shares"
    root.mkdir()
    settings.KB_FOLDER_ROOTS = [str(root)]
    kb_settings.cache_clear()
    yield root
    kb_settings.cache_clear()


@pytest.fixture
def curator(client, db):
    user = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    client.force_login(user)
    return client


def _sync(source) -> IngestRun:
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=get_embedder()).execute()
    run.refresh_from_db()
    return run


def _post(curator, namespace, **fields):
    data = {
        "namespace": namespace.pk,
        "name": "handbook",
        "enabled": "on",
        "priority": "0",
        "refresh_interval": "",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
        **fields,
    }
    return curator.post("/admin/kb/source/add/?kind=folder", data)


def test_the_folder_form_explains_its_directory_and_refuses_one_outside_the_roots(
    curator, namespace, roots, tmp_path
):
    page = curator.get("/admin/kb/source/add/?kind=folder").content.decode()
    assert (
        "KB_FOLDER_ROOTS. Symbolic links in it are not followed." in page
        and "File path patterns" in page
    )
    (tmp_path / "private").mkdir()
    refused = _post(curator, namespace, location=str(tmp_path / "private"))
    assert refused.status_code == 200 and "INGEST_LOCATION_REFUSED" in refused.content.decode()
    assert not Source.objects.filter(name="handbook").exists()
    (roots / "handbook").mkdir()
    saved = _post(curator, namespace, location=str(roots / "handbook"), include="docs/*\n*.md")
    assert saved.status_code == 302
    source = Source.objects.get(name="handbook")
    assert (source.kind, source.options) == ("folder", {"include": ["docs/*", "*.md"]})
    assert source.runs.count() == 1  # queued on save, as a web source is


def test_folder_sources_are_off_without_roots(curator, namespace, settings, tmp_path):
    settings.KB_FOLDER_ROOTS = []
    kb_settings.cache_clear()
    try:
        refused = _post(curator, namespace, location=str(tmp_path))
        assert (
            refused.status_code == 200
            and "Folder sources are off on this server" in refused.content.decode()
        )
    finally:
        kb_settings.cache_clear()


def test_links_are_not_followed_and_globs_select_files(namespace, roots, tmp_path):
    folder = roots / "handbook"
    shutil.copytree(REAL / "docutils-docs" / "docs" / "user", folder / "docs")
    (folder / "docs" / "_build").mkdir()
    (folder / "docs" / "_build" / "copy.md").write_text("# Built copy\n\nLeft out.\n")
    (folder / "notes.txt").write_text("Not under docs.\n")
    (tmp_path / "outside.md").write_text("# Outside\n\nThe server's own secret.\n")
    os.symlink(tmp_path / "outside.md", folder / "docs" / "linked.md")
    os.symlink(tmp_path, folder / "docs" / "escape")
    source = Source.objects.create(
        namespace=namespace,
        name="handbook",
        kind="folder",
        location=str(folder),
        options={"include": ["docs/*"], "exclude": ["*/_build/*"]},
    )
    run = _sync(source)
    assert run.status == "succeeded", run.error
    documents = {d.ref: d for d in Document.objects.filter(source=source)}
    assert sorted(documents) == ["docs/mailing-lists.rst", "docs/todo-lists.rst"]
    assert (
        documents["docs/todo-lists.rst"].title == "Docutils_ To Do Lists"
        or documents["docs/todo-lists.rst"].title
    )
    assert all("secret" not in d.content for d in documents.values())
    assert "{#" in documents["docs/mailing-lists.rst"].content  # sections carry their docutils ids


def test_held_removals_show_on_the_source_and_the_action_confirms_them(curator, namespace, roots):
    folder = roots / "handbook"
    folder.mkdir()
    for number in range(4):
        (folder / f"page{number}.md").write_text(
            f"# Page {number}\n\nThe text of page number {number}.\n"
        )
    source = Source.objects.create(
        namespace=namespace, name="handbook", kind="folder", location=str(folder)
    )
    assert _sync(source).items_changed == 4
    for number in range(1, 4):
        (folder / f"page{number}.md").unlink()
    run = _sync(source)
    assert (run.status, run.items_removed) == ("succeeded", 0)
    page = curator.get(f"/admin/kb/source/{source.pk}/change/").content.decode()
    assert (
        "Removals held" in page
        and f"Run #{run.pk} found 3 of the source" in page
        and "page2.md" in page
    )
    response = curator.post(
        "/admin/kb/source/", {"action": "confirm_held_removals", "_selected_action": [source.pk]}
    )
    assert response.status_code == 302
    assert list(Document.objects.filter(source=source).values_list("ref", flat=True)) == [
        "page0.md"
    ]
    source.refresh_from_db()
    assert source.held_removals == {}
    assert (
        "Removals held" not in curator.get(f"/admin/kb/source/{source.pk}/change/").content.decode()
    )


def test_the_api_refuses_a_folder_outside_the_roots_and_a_local_repository(
    client, namespace, roots, tmp_path
):
    _, token = issue_token("writer", namespaces=[namespace], scope=ApiToken.Scope.WRITE)
    (roots / "handbook").mkdir()

    def create(**body):
        response = client.post(
            "/api/sources",
            data=json.dumps({"namespace": namespace.slug, **body}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        return response.status_code, response.json()

    status, body = create(name="outside", kind="folder", location=str(tmp_path))
    assert (status, body["code"]) == (400, "INGEST_LOCATION_REFUSED") and "KB_FOLDER_ROOTS" in body[
        "message"
    ]
    status, body = create(name="local", kind="git", location=str(tmp_path))
    assert (status, body["code"]) == (
        400,
        "INGEST_LOCATION_REFUSED",
    ) and "KB_GIT_ALLOW_LOCAL" in body["message"]
    status, body = create(name="handbook", kind="folder", location=str(roots / "handbook"))
    assert status == 201 and body["kind"] == "folder" and body["queued_run"]
    assert not Source.objects.filter(name__in=["outside", "local"]).exists()


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("javascript:alert(document.cookie)//{path}", id="javascript"),
        pytest.param("data:text/html,<script>x</script>{path}", id="data"),
        pytest.param("//forge.example/{path}", id="no-scheme"),
    ],
)
def test_the_api_refuses_a_web_url_that_is_not_http_when_the_source_is_saved(
    client, namespace, pattern
):
    """A git source's `web_url` becomes every citation's link: refused at save, not only at its
    first run."""
    _, token = issue_token("writer", namespaces=[namespace], scope=ApiToken.Scope.WRITE)
    response = client.post(
        "/api/sources",
        data=json.dumps(
            {
                "namespace": namespace.slug,
                "name": "forge",
                "kind": "git",
                "location": "https://git.example.com/docs.git",
                "options": {"web_url": pattern},
            }
        ),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    body = response.json()
    assert (response.status_code, body["code"]) == (422, "KB_INVALID_INPUT"), body
    assert "web_url" in body["message"] and "http(s) URL with a host" in body["message"]
    assert not Source.objects.filter(name="forge").exists()
