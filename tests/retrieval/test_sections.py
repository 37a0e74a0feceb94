"""A section read by its anchor (MCP `fetch` with an anchor) is what a reader of the page means
by that section: its own text and its subsections', up to the next section of its level or above."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import Chunk, IngestRun, Namespace, Source
from retrieval.documents import SectionChunk, section_span, section_text

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def _document(ref: str, body: bytes, media_type: str):
    namespace = Namespace.objects.create(slug="sections", title="Sections", is_public=True)
    source = Source.objects.create(namespace=namespace, name="pages", kind=Source.Kind.TEXT, text="x")
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [LoadedItem(ref=ref, body=body, media_type=media_type, charset="utf-8", path=ref)])
    assert run.status == "succeeded", run.error
    return run.source.documents.get()


@pytest.mark.django_db
def test_a_section_holds_its_subsections_and_stops_at_its_next_sibling():
    text = ("# Guide\n\nHow to install and use kb.\n\n## Installing {#install}\n\n### On Debian {#debian}\n\n"
            + "Run apt-get install kb. " * 30
            + "\n\n### On Fedora {#fedora}\n\n" + "Run dnf install kb. " * 30
            + "\n\n## Using {#usage}\n\nSearch it.\n")
    document = _document("guide.md", text.encode(), "text/markdown")
    installing, start, end = section_text(document, "install")
    assert installing.startswith("## Installing") and "apt-get" in installing and "dnf install" in installing
    assert "Using" not in installing and installing.rstrip().endswith("Run dnf install kb.")
    assert document.content.encode()[start:end].decode() == installing  # an exact slice
    fedora, *_ = section_text(document, "fedora")
    assert fedora.startswith("### On Fedora") and "apt-get" not in fedora and "Using" not in fedora


@pytest.mark.django_db
def test_every_section_of_a_real_docbook_page_holds_text_beyond_its_heading():
    """PostgreSQL's psql reference (DocBook): "Usage" and "Advanced Features" open straight onto
    their first subsections."""
    document = _document("app-psql.html", (REAL / "docbook" / "app-psql.html").read_bytes(), "text/html")
    anchors = list(dict.fromkeys(Chunk.objects.filter(document=document).exclude(anchor="")
                                 .order_by("position").values_list("anchor", flat=True)))
    assert len(anchors) >= 5
    for anchor in anchors:
        text, *_ = section_text(document, anchor)
        assert len(text.split("\n\n")) > 1, (anchor, text)  # a heading and something under it
    usage, *_ = section_text(document, "id-1.9.4.20.8")
    assert usage.startswith("## Usage") and "### Advanced Features" in usage and len(usage) > 50_000


@pytest.mark.django_db
def test_the_document_view_keeps_the_id_of_a_heading_that_opens_a_passage_it_does_not_head(client):
    """"Features" is read within its release's passage (its heading opens nothing alone), and a
    link to its id still lands on it, once."""
    text = ("# Notes\n\nAll releases.\n\n## Version 1.4 {#v14}\n\n### Features {#features-14}\n\n"
            "Faster builds.\n\n## Version 1.3 {#v13}\n\nFixes.\n")
    document = _document("notes.md", text.encode(), "text/markdown")
    assert list(Chunk.objects.filter(document=document).order_by("position").values_list("anchor", flat=True)) == [
        "notes", "v14", "v13"]
    page = client.get(f"/documents/{document.pk}/").content.decode()
    for anchor in ("notes", "v14", "features-14", "v13"):
        assert page.count(f'id="{anchor}"') == 1, anchor
    assert page.index('id="v14"') < page.index('id="features-14"') < page.index("Faster builds")


def test_section_span_reads_subsections_and_stops_at_a_sibling_of_any_name():
    def chunk(anchor, path, start, level=0):
        return SectionChunk(anchor, path, start, start + 10, level)

    chunks = [chunk("", ("Guide",), 0, 1), chunk("install", ("Guide", "Installing"), 10, 2),
              chunk("debian", ("Guide", "Installing", "On Debian"), 20, 3),
              chunk("install", ("Guide", "Installing"), 30),
              chunk("examples", ("Guide", "Examples"), 40, 2), chunk("one", ("Guide", "Examples", "One"), 50, 3),
              chunk("two", ("Guide", "Examples", "Two"), 60, 2),  # "## Examples" again, no id, opens "Two"
              chunk("dup", ("Guide", "A"), 70, 2), chunk("b", ("Guide", "B"), 80, 2),
              chunk("dup", ("Guide", "C"), 90, 2)]
    assert section_span(chunks, "install") == (10, 40)
    assert section_span(chunks, "debian") == (20, 30)
    assert section_span(chunks, "examples") == (40, 60)  # not the second "Examples" section
    assert section_span(chunks, "dup") == (70, 80)  # an anchor used twice: its first section
    assert section_span(chunks, "missing") is None
