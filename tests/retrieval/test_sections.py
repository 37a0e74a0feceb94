"""A section read by its anchor (MCP `fetch` with an anchor) is what a reader of the page means
by that section: its own text and its subsections', up to the next section of its level or above."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import pytest

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import Chunk, IngestRun, Namespace, Source
from retrieval.documents import section_range, section_text

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def _document(ref: str, body: bytes, media_type: str):
    namespace = Namespace.objects.create(slug="sections", title="Sections", is_public=True)
    source = Source.objects.create(
        namespace=namespace, name="pages", kind=Source.Kind.TEXT, text="x"
    )
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [LoadedItem(ref=ref, body=body, media_type=media_type, charset="utf-8", path=ref)]
    )
    assert run.status == "succeeded", run.error
    return run.source.documents.get()


@pytest.mark.django_db
def test_a_section_holds_its_subsections_and_stops_at_its_next_sibling():
    text = (
        "# Guide\n\nHow to install and use kb.\n\n## Installing {#install}\n\n### On Debian "
        "{#debian}\n\n"
        + "Run apt-get install kb. " * 30
        + "\n\n### On Fedora {#fedora}\n\n"
        + "Run dnf install kb. " * 30
        + "\n\n## Using {#usage}\n\nSearch it.\n"
    )
    document = _document("guide.md", text.encode(), "text/markdown")
    installing, start, end = section_text(document, "install")
    assert (
        installing.startswith("## Installing")
        and "apt-get" in installing
        and "dnf install" in installing
    )
    assert "Using" not in installing and installing.rstrip().endswith("Run dnf install kb.")
    assert document.content.encode()[start:end].decode() == installing  # an exact slice
    fedora, *_ = section_text(document, "fedora")
    assert fedora.startswith("### On Fedora") and "apt-get" not in fedora and "Using" not in fedora


@pytest.mark.django_db
def test_a_comment_in_a_long_script_is_no_heading_and_a_second_section_of_one_name_is_no_subsection():  # noqa: E501
    script = "".join(f"# step {n}\necho {n}\n" for n in range(400))  # split across chunks
    text = (
        "# Guide\n\nIntro.\n\n## Install\n\n```sh\n" + script + "```\n\nAfter the script.\n\n"
        "## Examples\n\n### One\n\nFirst.\n\n## Examples\n\n### Two\n\nSecond.\n"
    )
    document = _document("guide.md", text.encode(), "text/markdown")
    assert Chunk.objects.filter(document=document, anchor="install").count() > 1
    install, *_ = section_text(document, "install")
    assert "echo 399" in install and install.rstrip().endswith("After the script.")
    examples, *_ = section_text(document, "examples")
    assert "First." in examples and "Second." not in examples
    second, *_ = section_text(document, "examples-1")
    assert second.startswith("## Examples") and "Second." in second


@pytest.mark.django_db
def test_every_section_of_a_real_docbook_page_holds_text_beyond_its_heading():
    """PostgreSQL's psql reference (DocBook): "Usage" and "Advanced Features" open straight onto
    their first subsections."""
    document = _document(
        "app-psql.html", (REAL / "docbook" / "app-psql.html").read_bytes(), "text/html"
    )
    anchors = list(
        dict.fromkeys(
            Chunk.objects.filter(document=document)
            .exclude(anchor="")
            .order_by("position")
            .values_list("anchor", flat=True)
        )
    )
    assert len(anchors) >= 5
    headings = re.findall(r"^#+ .*\{#([^}]+)\}$", document.content, re.M)  # every id, cited or not
    assert set(anchors) <= set(headings) and len(headings) > len(anchors)
    for anchor in headings:
        text, *_ = section_text(document, anchor)
        assert len(text.split("\n\n")) > 1, (anchor, text)  # a heading and something under it
    usage, *_ = section_text(document, "id-1.9.4.20.8")
    assert usage.startswith("## Usage") and "### Advanced Features" in usage and len(usage) > 50_000


@pytest.mark.django_db
def test_the_document_view_keeps_the_id_of_a_heading_that_opens_a_passage_it_does_not_head(client):
    """ "Version 1.4" opens the chunk of its first subsection, "Features", cited at "Features";
    a link to the release's id still lands on it, once, and its section is read whole."""
    text = (
        "# Notes\n\nAll releases.\n\n## Version 1.4 {#v14}\n\n### Features {#features-14}\n\n"
        "Faster builds.\n\n## Version 1.3 {#v13}\n\nFixes.\n"
    )
    document = _document("notes.md", text.encode(), "text/markdown")
    assert list(
        Chunk.objects.filter(document=document)
        .order_by("position")
        .values_list("anchor", flat=True)
    ) == ["notes", "features-14", "v13"]
    page = client.get(f"/documents/{document.pk}/").content.decode()
    for anchor in ("notes", "v14", "features-14", "v13"):
        assert page.count(f'id="{anchor}"') == 1, anchor
    assert page.index('id="features-14"') < page.index("Faster builds")
    release, *_ = section_text(document, "v14")
    assert (
        release.startswith("## Version 1.4")
        and "Faster builds." in release
        and "1.3" not in release
    )


def test_section_range_reads_subsections_and_stops_at_a_sibling_of_any_name():
    sections = [
        ("", 0, 0),
        ("guide", 1, 5),
        ("install", 2, 10),
        ("debian", 3, 20),
        ("examples", 2, 40),
        ("one", 3, 50),
        ("examples-1", 2, 60),
        ("dup", 2, 70),
        ("b", 2, 80),
        ("dup", 2, 90),
    ]
    assert section_range(sections, "", 100) == (0, 5)  # the text before the first heading
    assert section_range(sections, "guide", 100) == (5, 100)
    assert section_range(sections, "install", 100) == (10, 40)
    assert section_range(sections, "debian", 100) == (20, 40)
    assert section_range(sections, "examples", 100) == (40, 60)  # not the second "Examples" section
    assert section_range(sections, "dup", 100) == (
        70,
        80,
    )  # an anchor used twice: its first section
    assert section_range(sections, "missing", 100) is None


@pytest.mark.django_db
def test_every_heading_id_of_a_real_javadoc_page_is_one_target_of_its_document_view(client):
    """Javadoc's "Method Detail" opens the chunk of its first method: its id heads no passage,
    and a link to it must still land."""
    document = _document(
        "ArgumentParser.html", (REAL / "javadoc" / "ArgumentParser.html").read_bytes(), "text/html"
    )
    ids = re.findall(r"^#+ .*\{#([^}]+)\}$", document.content, re.M)
    cited = set(Chunk.objects.filter(document=document).values_list("anchor", flat=True))
    assert "method.detail" in set(ids) - cited
    page = client.get(f"/documents/{document.pk}/").content.decode()
    for anchor in set(ids):
        assert page.count(f'id="{escape(anchor)}"') == 1, anchor


@pytest.mark.django_db
def test_the_document_view_shows_what_two_passages_share_once(client):
    """Passages overlap (each repeats the last sentences of the one before, so it reads alone);
    the document view reads the document once."""
    sentences = [
        f"Sentence {n} of the long guide says something plain about pumpkins number {n}."
        for n in range(300)
    ]
    document = _document(
        "long.md", ("# Long\n\n" + " ".join(sentences) + "\n").encode(), "text/markdown"
    )
    chunks = list(Chunk.objects.filter(document=document).order_by("position"))
    shared = [(a, b) for a, b in zip(chunks, chunks[1:], strict=False) if b.start_byte < a.end_byte]
    assert shared, "the chunker no longer overlaps: this test needs another document"
    page = client.get(f"/documents/{document.pk}/").content.decode()
    for n in range(300):
        assert page.count(f"pumpkins number {n}.") == 1, n
