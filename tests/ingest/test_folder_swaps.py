"""A folder source's files read safely when the share changes under the run: between the listing
and the read, a directory on a file's path swapped for a link out of the root, a file swapped for
a FIFO, and a hard link to a file outside the folder are refused, each as that file's failure."""

from __future__ import annotations

import os
import shutil
import threading

import pytest

from ingest.connectors.folder import FolderConnector
from ingest.errors import FolderEntryRefused
from ingest.loaders import SourceSpec
from ingest.pipeline import IngestPipeline
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import IngestRun, Source

SECRET = "# Secret\n\nThe server's own file, outside every root.\n"


@pytest.fixture
def share(settings, tmp_path):
    root = tmp_path / "shares"
    (root / "handbook" / "docs").mkdir(parents=True)
    (root / "handbook" / "docs" / "guide.md").write_text("# Guide\n\nThe handbook's guide.\n")
    (tmp_path / "outside" / "docs").mkdir(parents=True)
    (tmp_path / "outside" / "docs" / "guide.md").write_text(SECRET)
    settings.KB_FOLDER_ROOTS = [str(root)]
    kb_settings.cache_clear()
    yield root / "handbook"
    kb_settings.cache_clear()


def _listed(folder):
    connector = FolderConnector(SourceSpec(kind="folder", location=str(folder)))
    return connector, {entry.ref: entry for entry in connector.listing()}


def test_a_directory_swapped_for_a_link_after_the_listing_is_not_followed(share, tmp_path):
    connector, entries = _listed(share)
    assert list(entries) == ["docs/guide.md"]
    shutil.rmtree(share / "docs")
    os.symlink(tmp_path / "outside" / "docs", share / "docs")
    with pytest.raises(FolderEntryRefused, match=r"'docs' is now a symbolic link") as refused:
        connector.read(entries["docs/guide.md"])
    assert refused.value.code == "INGEST_FOLDER_ENTRY_REFUSED"


def test_a_file_swapped_for_a_fifo_is_refused_without_blocking(share):
    connector, entries = _listed(share)
    (share / "docs" / "guide.md").unlink()
    os.mkfifo(share / "docs" / "guide.md")
    outcome = []

    def read():
        try:
            outcome.append(connector.read(entries["docs/guide.md"]))
        except FolderEntryRefused as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=5)
    if reader.is_alive():  # blocked in open(): a writer releases it, and the test fails
        with open(share / "docs" / "guide.md", "wb"):
            pass
        reader.join(timeout=5)
        pytest.fail("reading a FIFO blocked the run")
    assert isinstance(outcome[0], FolderEntryRefused) and "no longer a regular file" in str(
        outcome[0]
    )


def test_a_hard_link_to_a_file_outside_the_folder_is_not_read(share, tmp_path):
    os.link(tmp_path / "outside" / "docs" / "guide.md", share / "docs" / "linked.md")
    connector, entries = _listed(share)
    with pytest.raises(FolderEntryRefused, match=r"'docs/linked.md' has 2 hard links"):
        connector.read(entries["docs/linked.md"])
    assert connector.read(entries["docs/guide.md"]).startswith(b"# Guide")


@pytest.mark.django_db
def test_a_refused_file_fails_alone_and_the_run_goes_on(namespace, share, tmp_path):
    os.link(tmp_path / "outside" / "docs" / "guide.md", share / "docs" / "linked.md")
    source = Source.objects.create(
        namespace=namespace, name="handbook", kind="folder", location=str(share)
    )
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=get_embedder()).execute()
    run.refresh_from_db()
    failed = {item.ref: item.error_code for item in run.items.filter(status="failed")}
    assert failed == {"docs/linked.md": "INGEST_FOLDER_ENTRY_REFUSED"}
    assert list(source.documents.values_list("ref", flat=True)) == ["docs/guide.md"]
    assert "secret" not in source.documents.get().content.lower()


@pytest.mark.django_db
def test_a_listing_cut_at_the_file_limit_removes_nothing_and_says_so(namespace, share, settings):
    for number in range(3):
        (share / "docs" / f"page{number}.md").write_text(
            f"# Page {number}\n\nThe text of page {number}.\n"
        )
    source = Source.objects.create(
        namespace=namespace, name="handbook", kind="folder", location=str(share)
    )
    first = IngestRun.objects.create(source=source)
    IngestPipeline(first, embedder=get_embedder()).execute()
    assert source.documents.count() == 4
    settings.KB_ARCHIVE_MAX_FILES = 3
    kb_settings.cache_clear()
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=get_embedder()).execute()
    run.refresh_from_db()
    assert run.items_removed == 0 and source.documents.count() == 4
    cut = run.items.get(status="failed")
    assert (cut.ref, cut.error_code) == ("docs/page2.md", "INGEST_SYNC_BUDGET")
    assert "more than 3 files (KB_ARCHIVE_MAX_FILES)" in cut.error_message
