"""The connector contract, run against every connector through the real pipeline and database:
first sync, a no-op resync that parses nothing, one change, one rename, one delete, a source
that cannot be reached (the run fails with a stable code, nothing is deleted), and a source that
shrinks by more than half (the deletes wait for a curator's confirmation).

Each `World` holds one source kind's real source (a loopback web site, uploaded files, inline
text, a folder on disk, a git repository served by `git daemon`) and knows how to change it."""

from __future__ import annotations

import io
import os
import shutil

import pytest

from ingest.pipeline import IngestPipeline
from ingest.service import confirm_held_removals
from ingest.uploads import add_files
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import Document, IngestRun, Source, SourceFile
from tests.gitserver import GitHttpServer, WorkRepo
from tests.webserver import Route

pytestmark = pytest.mark.django_db

NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
WORDS = {
    name: f"{name.capitalize()} is the document about {name} and nothing else" for name in NAMES
}


def text_of(name: str, version: int = 1) -> str:
    return f"# {name.capitalize()}\n\n{WORDS[name]}, version {version}.\n"


class World:
    """A source of one kind holding the documents NAMES, and what a change to it is."""

    kind = ""
    moves = True  # a rename moves the document (else: the old ref is removed and the new one read)
    can = {"change", "rename", "delete", "unreachable", "shrink"}

    def __init__(self, namespace, tmp_path, settings, request):
        self.namespace, self.tmp, self.settings, self.request = (
            namespace,
            tmp_path,
            settings,
            request,
        )

    def create(self) -> Source: ...
    def ref(self, name: str) -> str: ...
    def change(self, name: str) -> None: ...
    def rename(self, old: str, new: str) -> None: ...
    def delete(self, name: str) -> None: ...
    def unreachable(self) -> None: ...

    unreachable_code = ""


class WebWorld(World):
    kind, moves = "sitemap", False
    unreachable_code = "INGEST_HTTP_STATUS"

    def create(self):
        self.web = self.request.getfixturevalue("web")
        self.request.getfixturevalue("allow_loopback")
        self.pages = {name: 1 for name in NAMES}
        self._publish()
        return Source.objects.create(
            namespace=self.namespace,
            name="web",
            kind="sitemap",
            location=self.web.url("/sitemap.xml"),
            options={"use_llms_txt": False},
        )

    def _publish(self):
        urls = "".join(f"<url><loc>{self.web.url('/' + name)}</loc></url>" for name in self.pages)
        self.web.routes["/sitemap.xml"] = Route(
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'.encode(),
            200,
            {"Content-Type": "application/xml"},
        )
        for name, version in self.pages.items():
            base = name.rstrip("0123456789")
            html = (
                f"<title>{base.capitalize()}</title><h1>{base.capitalize()}</h1>"
                f"<p>{WORDS[base]}, version {version}.</p>"
            )
            self.web.page("/" + name, html, ETag=f'"{name}-{version}"')

    def ref(self, name):
        return self.web.url("/" + name)

    def change(self, name):
        self.pages[name] += 1
        self._publish()

    def rename(self, old, new):
        self.pages[new] = self.pages.pop(old)
        self.web.routes.pop("/" + old)
        self._publish()

    def delete(self, name):
        self.pages.pop(name)
        self.web.routes.pop("/" + name)
        self._publish()

    def unreachable(self):
        self.web.routes.pop("/sitemap.xml")


class FileWorld(World):
    kind, moves = "file", False
    unreachable_code = "INGEST_FILE_MISSING"

    def create(self):
        self.settings.MEDIA_ROOT = str(self.tmp / "media")
        kb_settings.cache_clear()
        self.request.addfinalizer(kb_settings.cache_clear)
        self.source = Source.objects.create(namespace=self.namespace, name="files", kind="file")
        add_files(
            self.source, [(f"{name}.md", io.BytesIO(text_of(name).encode())) for name in NAMES]
        )
        return self.source

    def ref(self, name):
        return f"{name}.md"

    def change(self, name):
        add_files(self.source, [(f"{name}.md", io.BytesIO(text_of(name, 2).encode()))])

    def rename(self, old, new):
        SourceFile.objects.filter(source=self.source, path=f"{old}.md").delete()
        add_files(self.source, [(f"{new}.md", io.BytesIO(text_of(old).encode()))])

    def delete(self, name):
        SourceFile.objects.filter(source=self.source, path=f"{name}.md").delete()

    def unreachable(self):
        shutil.rmtree(self.tmp / "media")


class TextWorld(World):
    """One document, the source's own text: it cannot lose a document, nor be out of reach."""

    kind = "text"
    can = {"change", "rename"}

    def create(self):
        self.source = Source.objects.create(
            namespace=self.namespace, name="alpha", kind="text", text=text_of("alpha")
        )
        return self.source

    def ref(self, name):
        return "inline"

    def change(self, name):
        self.source.text = text_of("alpha", 2)
        self.source.save()

    def rename(self, old, new):
        self.source.name = new  # the document is the source's: it keeps its ref
        self.source.save()


class FolderWorld(World):
    kind = "folder"
    unreachable_code = "INGEST_SOURCE_UNREACHABLE"

    def create(self):
        root = self.tmp / "shares"
        self.folder = root / "handbook"
        (self.folder / "guide").mkdir(parents=True)
        self.settings.KB_FOLDER_ROOTS = [str(root)]
        kb_settings.cache_clear()
        self.request.addfinalizer(kb_settings.cache_clear)
        for name in NAMES:
            self._write(name, text_of(name))
        return Source.objects.create(
            namespace=self.namespace, name="folder", kind="folder", location=str(self.folder)
        )

    def _write(self, name, text):
        path = self.folder / "guide" / f"{name}.md"
        path.write_text(text)
        stamp = path.stat().st_mtime + 10  # a changed file's mtime moves even within a clock tick
        os.utime(path, (stamp, stamp))

    def ref(self, name):
        return f"guide/{name}.md"

    def change(self, name):
        self._write(name, text_of(name, 2))

    def rename(self, old, new):
        (self.folder / "guide" / f"{old}.md").rename(self.folder / "guide" / f"{new}.md")

    def delete(self, name):
        (self.folder / "guide" / f"{name}.md").unlink()

    def unreachable(self):
        self.folder.rename(self.folder.with_name("unmounted"))


class GitWorld(World):
    kind = "git"
    unreachable_code = "INGEST_SOURCE_UNREACHABLE"

    def create(self):
        self.request.getfixturevalue("allow_loopback")
        self.settings.KB_GIT_CACHE_DIR = str(self.tmp / "git-cache")
        kb_settings.cache_clear()
        self.request.addfinalizer(kb_settings.cache_clear)
        self.repo = WorkRepo(self.tmp / "served" / "handbook")
        for name in NAMES:
            self.repo.write(f"docs/{name}.md", text_of(name))
        self.repo.write("setup.py", "print('not documentation')\n")
        self.repo.commit("the handbook")
        self.server = GitHttpServer(self.tmp / "served").__enter__()
        self.request.addfinalizer(self.server.__exit__)
        return Source.objects.create(
            namespace=self.namespace,
            name="git",
            kind="git",
            location=self.server.url("handbook/.git"),
            options={"branch": "main"},
        )

    def ref(self, name):
        return f"docs/{name}.md"

    def change(self, name):
        self.repo.write(f"docs/{name}.md", text_of(name, 2))
        self.repo.commit(f"edit {name}")

    def rename(self, old, new):
        self.repo.git("mv", f"docs/{old}.md", f"docs/{new}.md")
        self.repo.commit(f"rename {old}")

    def delete(self, name):
        self.repo.git("rm", "--quiet", f"docs/{name}.md")
        self.repo.commit(f"delete {name}")

    def unreachable(self):
        (self.tmp / "served" / "handbook").rename(self.tmp / "served" / "moved")


WORLDS = [
    pytest.param(WebWorld, id="web"),
    pytest.param(FileWorld, id="file"),
    pytest.param(TextWorld, id="text"),
    pytest.param(FolderWorld, id="folder"),
    pytest.param(GitWorld, id="git", marks=pytest.mark.child_process),  # git's own binary
]


class CountingEmbedder:
    def __init__(self):
        self.inner = get_embedder()
        self.model_id, self.dimension = self.inner.model_id, self.inner.dimension
        self.texts = 0

    def embed_documents(self, texts):
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.fixture(params=WORLDS)
def world(request, namespace, tmp_path, settings):
    world = request.param(namespace, tmp_path, settings, request)
    world.source = world.create()
    world.embedder = CountingEmbedder()
    return world


def sync(world) -> IngestRun:
    world.source.refresh_from_db()
    run = IngestRun.objects.create(source=world.source)
    IngestPipeline(run, embedder=world.embedder).execute()
    run.refresh_from_db()
    return run


def outcomes(run) -> dict[str, tuple[str, str]]:
    return {item.ref: (item.status, item.reason) for item in run.items.all()}


def documents(world) -> dict[str, int]:
    return dict(Document.objects.filter(source=world.source).values_list("ref", "id"))


def needs(world, what):
    if what not in world.can:
        pytest.skip(f"a {world.kind} source has no {what}: {type(world).__doc__.strip()}")


def first_sync(world) -> IngestRun:
    run = sync(world)
    count = len(NAMES) if "delete" in world.can else 1
    assert (run.status, run.items_changed, run.items_failed) == ("succeeded", count, 0), run.error
    assert len(documents(world)) == count
    return run


def test_first_sync_then_a_resync_without_change_parses_nothing(world):
    first_sync(world)
    world.embedder.texts = 0
    second = sync(world)
    assert (second.status, second.items_changed, second.items_removed) == ("succeeded", 0, 0)
    assert second.items_unchanged == len(documents(world))
    # nothing was chunked (so nothing extracted): each item was known unchanged before any parse
    assert (second.chunks_total, second.chunks_written, world.embedder.texts) == (0, 0, 0)
    assert {reason for _, reason in outcomes(second).values()} <= {"not modified", "same bytes"}


def test_one_change_is_one_changed_document(world):
    needs(world, "change")
    first_sync(world)
    world.change("bravo")
    run = sync(world)
    assert (run.status, run.items_changed, run.items_removed) == ("succeeded", 1, 0)
    assert outcomes(run)[world.ref("bravo")] == ("changed", "content changed")
    document = Document.objects.get(source=world.source, ref=world.ref("bravo"))
    assert "version 2" in document.content


def test_one_rename_moves_or_replaces_one_document(world):
    needs(world, "rename")
    first_sync(world)
    before = documents(world)
    world.rename("charlie", "charlie2")
    world.embedder.texts = 0
    run = sync(world)
    after = documents(world)
    assert run.status == "succeeded"
    if world.kind == "text":  # the source's name is no document's ref
        assert after == before and run.items_changed == 0
        return
    assert world.ref("charlie") not in after and world.ref("charlie2") in after
    assert len(after) == len(before)
    if world.moves:  # the same document, moved: nothing read, nothing embedded
        assert after[world.ref("charlie2")] == before[world.ref("charlie")]
        assert outcomes(run)[world.ref("charlie2")] == (
            "changed",
            f"renamed from {world.ref('charlie')}",
        )
        assert (run.items_changed, run.items_removed, world.embedder.texts) == (1, 0, 0)
    else:
        assert outcomes(run)[world.ref("charlie")] == ("removed", "gone from the source")
        assert outcomes(run)[world.ref("charlie2")][0] == "changed"
        assert (run.items_changed, run.items_removed) == (1, 1)


def test_one_delete_removes_one_document(world):
    needs(world, "delete")
    first_sync(world)
    world.delete("delta")
    run = sync(world)
    assert (run.status, run.items_changed, run.items_removed) == ("succeeded", 0, 1)
    assert outcomes(run)[world.ref("delta")] == ("removed", "gone from the source")
    assert world.ref("delta") not in documents(world) and len(documents(world)) == len(NAMES) - 1


def test_an_unreachable_source_fails_with_a_stable_code_and_deletes_nothing(world):
    needs(world, "unreachable")
    first_sync(world)
    before = documents(world)
    world.unreachable()
    run = sync(world)
    assert run.status == "failed"
    codes = (
        {run.error.split(":", 1)[0]}
        if run.error.startswith("INGEST_")
        else set(run.items.values_list("error_code", flat=True))
    )
    assert codes == {world.unreachable_code}, run.error
    assert documents(world) == before and run.items_removed == 0


def test_a_source_that_shrinks_by_more_than_half_holds_its_deletes_for_the_curator(world):
    needs(world, "shrink")
    first_sync(world)
    gone = NAMES[2:]
    for name in gone:
        world.delete(name)
    run = sync(world)
    assert (run.status, run.items_removed) == ("succeeded", 0)
    held = {ref: reason for ref, (status, reason) in outcomes(run).items() if status == "skipped"}
    assert sorted(held) == sorted(world.ref(name) for name in gone)
    assert all(
        reason.startswith("removal held: the source shrank from 6 to 2 documents")
        for reason in held.values()
    )
    assert len(documents(world)) == len(NAMES)
    world.source.refresh_from_db()
    assert world.source.held_removals == {"run": run.pk, "refs": sorted(held), "stored": 6}

    assert confirm_held_removals(world.source) == len(gone)
    assert sorted(documents(world)) == sorted(world.ref(name) for name in NAMES[:2])
    world.source.refresh_from_db()
    assert world.source.held_removals == {}
    assert sync(world).items_removed == 0  # nothing left to remove, nothing held again


def test_a_connector_that_drops_deletions_fails_the_contract(
    namespace, tmp_path, settings, request, monkeypatch
):
    """The suite's own check: the delete case fails for a connector that reports no deletions."""
    from ingest.connectors.base import Connector

    monkeypatch.setattr(Connector, "deletions", lambda self, stored, seen: set())
    world = FolderWorld(namespace, tmp_path, settings, request)
    world.source = world.create()
    world.embedder = CountingEmbedder()
    with pytest.raises(AssertionError):
        test_one_delete_removes_one_document(world)


def test_a_folder_outside_the_roots_is_refused(namespace, tmp_path, settings):
    settings.KB_FOLDER_ROOTS = [str(tmp_path / "shares")]
    kb_settings.cache_clear()
    try:
        (tmp_path / "shares").mkdir()
        (tmp_path / "secret").mkdir()
        (tmp_path / "secret" / "key.md").write_text("# Key\n\nsecret\n")
        os.symlink(tmp_path / "secret", tmp_path / "shares" / "link")
        for location in (
            str(tmp_path / "secret"),
            str(tmp_path / "shares" / "link"),
            str(tmp_path / "shares" / ".." / "secret"),
        ):
            source = Source.objects.create(
                namespace=namespace, name=location[-40:], kind="folder", location=location
            )
            run = IngestRun.objects.create(source=source)
            IngestPipeline(run, embedder=CountingEmbedder()).execute()
            run.refresh_from_db()
            assert run.status == "failed" and run.error.startswith("INGEST_LOCATION_REFUSED: "), (
                run.error
            )
            assert not Document.objects.filter(source=source).exists()
    finally:
        kb_settings.cache_clear()
