"""Git sources against real repositories served by `git http-backend` on loopback, holding a real
documentation tree (docutils' own reStructuredText docs, nbformat's test notebooks): sections
with the ids Sphinx gives them, citations on a forge at the passage's line, git's rename
detection, and the safety rules (SSRF guard and address pinning, local paths, budgets, tokens)."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_doctree

from ingest.extract.rst import SETTINGS
from ingest.pipeline import IngestPipeline
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import Chunk, Document, IngestRun, Source
from retrieval.citations import document_citation_url
from tests.gitserver import GitHttpServer, WorkRepo

pytestmark = [pytest.mark.django_db, pytest.mark.child_process]  # starts git or the parser child
REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
INTRO = "docs/ref/rst/introduction.rst"
FORGE = "https://forge.example/docutils/blob/{commit}/{path}#L{line}"


@pytest.fixture
def served(tmp_path):
    repo = WorkRepo(tmp_path / "served" / "docutils")
    shutil.copytree(REAL / "docutils-docs", repo.path, dirs_exist_ok=True)
    for notebook in ("test3.ipynb", "test4.ipynb"):
        repo.write(f"notebooks/{notebook}", (REAL / "notebooks" / notebook).read_bytes())
    repo.write(
        "docs/secret-include.rst",
        "Secret\n======\n\n.. include:: ../TOPSECRET.txt\n\n"
        ".. raw:: html\n\n   <script>alert(1)</script>\n\nVisible text.\n",
    )
    repo.write("TOPSECRET.txt", "TOPSECRET the server's own file\n")
    repo.commit("docutils docs and notebooks")
    with GitHttpServer(tmp_path / "served") as server:
        server.repo = repo
        yield server


def _source(namespace, location, name="docutils", **options) -> Source:
    return Source.objects.create(
        namespace=namespace,
        name=name,
        kind="git",
        location=location,
        options={"include": ["docs/*", "notebooks/*"], **options},
    )


def _sync(source) -> IngestRun:
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=get_embedder()).execute()
    run.refresh_from_db()
    source.refresh_from_db()
    return run


def _sphinx_ids(path: Path) -> list[str]:
    """The section ids docutils gives the file with Sphinx's settings (what Sphinx publishes)."""
    document = publish_doctree(path.read_text(), settings_overrides=dict(SETTINGS))
    return [section["ids"][0] for section in document.findall(nodes.section)]


def test_a_real_rst_tree_becomes_sections_with_sphinx_ids_and_forge_citations_at_their_line(
    namespace, git_settings, allow_loopback, served
):
    source = _source(namespace, served.url("docutils/.git"), web_url=FORGE)
    run = _sync(source)
    assert (run.status, run.items_failed) == ("succeeded", 0), run.error
    commit = served.repo.git("rev-parse", "HEAD")
    assert source.indexed_commit == commit
    refs = set(Document.objects.filter(source=source).values_list("ref", flat=True))
    assert {INTRO, "docs/howto/cmdline-tool.rst", "notebooks/test4.ipynb"} <= refs
    assert "TOPSECRET.txt" not in refs  # not under an include glob

    intro = Document.objects.get(source=source, ref=INTRO)
    assert intro.title == "An Introduction to reStructuredText"
    written = re.findall(r"^#+ .*\{#([^}]+)\}$", intro.content, flags=re.M)
    assert written == _sphinx_ids(served.repo.path / INTRO)
    assert written == ["an-introduction-to-restructuredtext", "goals"]

    lines = (served.repo.path / INTRO).read_text().splitlines()
    goals = lines.index("Goals") + 1  # the title's line, 1-based
    chunks = list(
        Chunk.objects.filter(document=intro, heading_path__contains=["Goals"]).order_by("position")
    )
    chunk = chunks[0]
    line = int(chunk.anchor.removeprefix("L"))
    assert (
        line == goals
    )  # the section's first passage opens at its title, docutils' own position of it
    later = [
        int(c.anchor.removeprefix("L")) for c in chunks[1:]
    ]  # the others at their own first words
    assert later and all(goals < number for number in later) and later == sorted(later)
    citation = document_citation_url(
        url=intro.metadata["url"],
        ref=intro.ref,
        anchor=chunk.anchor,
        namespace=namespace.slug,
        document_id=intro.pk,
        chunk_id=chunk.pk,
    )
    assert citation == f"https://forge.example/docutils/blob/{commit}/{INTRO}#L{line}"

    notebook = Document.objects.get(source=source, ref="notebooks/test4.ipynb")
    assert notebook.title == "nbconvert latex test"
    assert (
        '```\nfrom __future__ import annotations\n\nprint("hello")\n```\n\n```text\nhello\n```'
        in notebook.content
    )
    secret = Document.objects.get(source=source, ref="docs/secret-include.rst")
    assert "Visible text." in secret.content
    assert "TOPSECRET" not in secret.content and "<script>" not in secret.content


def test_without_a_forge_pattern_citations_open_the_document_view_at_the_section(
    namespace, git_settings, allow_loopback, served
):
    source = _source(namespace, served.url("docutils/.git"), include=[INTRO])
    assert _sync(source).status == "succeeded"
    intro = Document.objects.get(source=source)
    assert "url" not in intro.metadata
    assert "goals" in set(intro.chunks.values_list("anchor", flat=True))
    chunk = intro.chunks.filter(anchor="goals").order_by("position").first()
    citation = document_citation_url(
        url="",
        ref=intro.ref,
        anchor=chunk.anchor,
        namespace=namespace.slug,
        document_id=intro.pk,
        chunk_id=chunk.pk,
    )
    assert citation == f"/documents/{intro.pk}/#passage-{chunk.pk}"


def test_a_commit_that_edits_renames_and_deletes_yields_exactly_those_three_changes(
    namespace, git_settings, allow_loopback, served
):
    source = _source(namespace, served.url("docutils/.git"), web_url=FORGE)
    first = _sync(source)
    documents = dict(Document.objects.filter(source=source).values_list("ref", "id"))
    repo = served.repo
    cmdline = repo.path / "docs/howto/cmdline-tool.rst"
    cmdline.write_text(cmdline.read_text().replace("command-line", "command line"))
    repo.git("mv", "docs/user/todo-lists.rst", "docs/user/todo.rst")
    repo.git("rm", "--quiet", "docs/dev/website.rst")
    head = repo.commit("edit one, rename one, delete one")
    requests = len(served.requests)

    run = _sync(source)
    items = {item.ref: (item.status, item.reason) for item in run.items.all()}
    assert (run.status, run.items_changed, run.items_removed) == ("succeeded", 2, 1)
    assert run.items_unchanged == first.items_changed - 3
    assert items["docs/howto/cmdline-tool.rst"] == ("changed", "content changed")
    assert items["docs/user/todo.rst"] == ("changed", "renamed from docs/user/todo-lists.rst")
    assert items["docs/dev/website.rst"] == ("removed", "gone from the source")
    moved = Document.objects.get(source=source, ref="docs/user/todo.rst")
    assert moved.pk == documents["docs/user/todo-lists.rst"]
    assert moved.metadata["url"] == f"https://forge.example/docutils/blob/{head}/docs/user/todo.rst"
    assert source.indexed_commit == head
    assert len(served.requests) - requests <= 3  # one fetch: the refs, then one pack

    # a rename with an edit in the same commit: git's rename detection moves it, then it is re-read
    todo = repo.path / "docs/user/todo.rst"
    repo.git("mv", "docs/user/todo.rst", "docs/user/todo-list.rst")
    (repo.path / "docs/user/todo-list.rst").write_text(
        todo.with_name("todo-list.rst").read_text() + "\nOne more.\n"
    )
    repo.commit("rename and edit")
    run = _sync(source)
    items = {item.ref: (item.status, item.reason) for item in run.items.all()}
    assert items["docs/user/todo-list.rst"] == (
        "changed",
        "renamed from docs/user/todo.rst; content changed",
    )
    assert Document.objects.get(source=source, ref="docs/user/todo-list.rst").pk == moved.pk
    assert run.items_removed == 0


def test_the_remote_is_checked_by_the_ssrf_guard_and_git_connects_to_the_vetted_address(
    namespace, git_settings, served, no_private, monkeypatch
):
    refused = _source(namespace, served.url("docutils/.git"))
    run = _sync(refused)
    assert run.status == "failed" and run.error.startswith("INGEST_FETCH_BLOCKED: "), run.error
    assert served.requests == [] and not Document.objects.filter(source=refused).exists()

    # a name only this process resolves: git (curl) can only reach it through the pinned address
    lookup = socket.getaddrinfo
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *a, **k: lookup(
            "127.0.0.1" if host == "docs.kb-pinned.test" else host, *a, **k
        ),
    )
    git_settings.KB_FETCH_ALLOWED_PRIVATE = ["127.0.0.0/8:*"]
    kb_settings.cache_clear()
    pinned = _source(
        namespace,
        served.url("docutils/.git", host="docs.kb-pinned.test"),
        "pinned",
        include=[INTRO],
    )
    run = _sync(pinned)
    assert run.status == "succeeded", run.error
    assert served.requests and all(
        headers["host"].startswith("docs.kb-pinned.test:") for _, headers in served.requests
    )


def test_local_paths_need_the_operators_leave(namespace, git_settings, served):
    source = _source(namespace, str(served.repo.path), include=[INTRO])
    run = _sync(source)
    assert run.status == "failed" and run.error.startswith("INGEST_LOCATION_REFUSED: ")
    assert "KB_GIT_ALLOW_LOCAL" in run.error
    git_settings.KB_GIT_ALLOW_LOCAL = True
    kb_settings.cache_clear()
    run = _sync(source)
    assert run.status == "succeeded" and Document.objects.filter(source=source).count() == 1


def test_a_repository_over_the_size_budget_fails_and_keeps_what_was_indexed(
    namespace, git_settings, allow_loopback, served
):
    source = _source(namespace, served.url("docutils/.git"), include=[INTRO])
    assert _sync(source).status == "succeeded"
    git_settings.KB_GIT_MAX_BYTES = 20_000
    kb_settings.cache_clear()
    shutil.rmtree(git_settings.KB_GIT_CACHE_DIR)  # a fresh clone: the whole tree comes again
    run = _sync(source)
    assert run.status == "failed" and run.error.startswith("INGEST_SYNC_BUDGET: "), run.error
    assert Document.objects.filter(source=source).count() == 1


def test_a_token_comes_from_the_servers_environment_never_from_the_database(
    namespace, git_settings, allow_loopback, served
):
    source = _source(namespace, served.url("docutils/.git"), include=[INTRO], token="DOCS")
    run = _sync(source)
    assert run.status == "failed" and run.error.startswith("INGEST_LOCATION_REFUSED: ")
    assert "KB_GIT_TOKEN_DOCS" in run.error
    assert served.requests == []
    git_settings.KB_GIT_TOKENS = {"DOCS": "127.0.0.1=s3cret-token"}
    kb_settings.cache_clear()
    run = _sync(
        source
    )  # over plain http, even to the host it is for: refused (test_git_security.py)
    assert run.error.startswith("INGEST_GIT_TOKEN_REFUSED: ") and served.requests == []
    assert "s3cret" not in str(Source.objects.filter(pk=source.pk).values().get())


def test_an_unknown_branch_is_a_clear_error_and_deletes_nothing(
    namespace, git_settings, allow_loopback, served
):
    source = _source(namespace, served.url("docutils/.git"), include=[INTRO])
    assert _sync(source).status == "succeeded"
    source.options = {**source.options, "branch": "no-such-branch"}
    source.save()
    run = _sync(source)
    assert run.status == "failed" and run.error.startswith("INGEST_SOURCE_UNREACHABLE: ")
    assert "'no-such-branch'" in run.error and Document.objects.filter(source=source).count() == 1


def test_a_renamed_file_whose_forge_url_sorts_before_its_path_still_moves(
    namespace, git_settings, allow_loopback, served
):
    """The store knows each document under its forge URL too (its `url`): only paths are renamed
    from."""
    source = _source(namespace, served.url("docutils/.git"), include=["notebooks/*"], web_url=FORGE)
    assert _sync(source).items_changed == 2
    before = Document.objects.get(source=source, ref="notebooks/test4.ipynb").pk
    served.repo.git("mv", "notebooks/test4.ipynb", "notebooks/v4.ipynb")
    served.repo.commit("rename a notebook")
    run = _sync(source)
    assert {
        item.ref: (item.status, item.reason) for item in run.items.exclude(status="unchanged")
    } == {"notebooks/v4.ipynb": ("changed", "renamed from notebooks/test4.ipynb")}
    assert Document.objects.get(source=source, ref="notebooks/v4.ipynb").pk == before
