"""Every OpenDocument type is read, templates too (issue #63): presentations and drawings as
sections per slide or page, text and spreadsheet templates as their documents are. The files are
LibreOffice's own templates and odfpy's test files (tests/fixtures/real/README.md), read in the
parser child as the worker reads them."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from ingest.chunk import chunk_markdown
from ingest.errors import EmptyContent
from ingest.extract import documents as doc
from ingest.extract.isolated import extract_isolated
from ingest.filetypes import media_type_for

DOCUMENTS = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "documents"


def _read(name: str, body: bytes | None = None):
    return extract_isolated(
        body if body is not None else (DOCUMENTS / name).read_bytes(),
        media_type_for(name),
        fallback_title=name,
    )


@pytest.mark.parametrize(
    "suffix, media_type",
    [
        (".odp", doc.ODP),
        (".otp", doc.OTP),
        (".odg", doc.ODG),
        (".otg", doc.OTG),
        (".ott", doc.OTT),
        (".ots", doc.OTS),
    ],
    ids=lambda value: value if value.startswith(".") else None,
)
def test_every_opendocument_type_is_read(suffix, media_type):
    assert media_type_for("slides" + suffix.upper()) == media_type
    assert media_type in doc.DOCUMENT_TYPES


@pytest.mark.child_process
def test_presentation_template_slides_are_sections_with_their_table():
    extracted = _read("Freshes.otp")
    assert extracted.title == "Freshes"  # its properties' title
    assert extracted.page_unit == "slide" and [n for _, n in extracted.pages] == list(range(1, 13))
    # a title whose line break sits in a span of its own keeps its words apart
    assert extracted.content.startswith(
        "## Slide 1: Freshes Impress Template {#slide-1}\n\nLorem ipsum dolor"
    )
    assert (
        "## Slide 9: Lorem Ipsum {#slide-9}\n\n| Lorem Ipsum Dolor 1 | M 1,000 | M 1,489 | M "
        "2,388 |\n"
        "|---|---|---|---|\n| Lorem Ipsum Dolor 2 | M 2,135 | M 3,432 | M 1,235 |"
    ) in extracted.content
    assert extracted.content.endswith(
        "## Slide 12: Thank you {#slide-12}\n\nCC by SA, Risyad Rais\n"
    )
    chunks = chunk_markdown(extracted.content, extracted.title, pages=extracted.pages)
    assert {c.anchor for c in chunks} >= {"slide-1", "slide-9", "slide-12"}
    assert all(c.page_start == int(c.anchor.split("-")[1]) for c in chunks)


@pytest.mark.child_process
def test_presentation_lists_keep_their_numbers_and_nesting():
    content = _read("ol.odp").content
    assert content.startswith(
        "## Slide 1: OL {#slide-1}\n\n1. Eins\n2. Tsvey\n   1. Dray\n   2. Fir\n3. Finf\n"
    )
    assert "            1. Draytsn\n            2. fertsn\n" in content


@pytest.mark.child_process
def test_speaker_notes_follow_their_slide():
    """ol.odp's notes frame is empty; a note is written into it, the rest of the file unchanged."""
    out = io.BytesIO()
    with zipfile.ZipFile(DOCUMENTS / "ol.odp") as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "content.xml":
                data = data.replace(
                    b'presentation:placeholder="true"><draw:text-box/>',
                    b"><draw:text-box><text:p>Count in Yiddish,</text:p>"
                    b"<text:p>then in German.</text:p></draw:text-box>",
                    1,
                )
            target.writestr(item, data)
    content = _read("ol.odp", out.getvalue()).content
    assert content.endswith("2. fertsn\n\nNotes: Count in Yiddish, then in German.\n")


@pytest.mark.child_process
def test_drawing_pages_are_sections():
    extracted = _read("bpmn.otg")
    assert (
        extracted.title == "BPMN" and extracted.page_unit == ""
    )  # a drawing's pages are no printed pages
    assert extracted.content.startswith("## Page 1 {#page-1}\n\nBPMN - Tutorial\n\n")
    assert "Styles All BPMN gallery items has styles support" in extracted.content
    assert "## Page 2 {#page-2}\n\nItems\n\nfetched" in extracted.content


@pytest.mark.child_process
def test_drawing_without_text_is_empty():
    body = (DOCUMENTS / "bpmn.otg").read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(body)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "content.xml":
                start, end = data.index(b"<office:drawing>"), data.index(b"</office:drawing>")
                data = data[:start] + b'<office:drawing><draw:page draw:name="page1"/>' + data[end:]
            target.writestr(item, data)
    with pytest.raises(EmptyContent):
        _read("empty.odg", out.getvalue())


@pytest.mark.child_process
def test_text_and_spreadsheet_templates_read_as_their_documents():
    cv = _read("CV.ott")
    assert cv.title == "CV" and cv.content.startswith(
        "# Curriculum Vitae\n\n| About me |  |\n|---|---|\n"
    )
    assert "| Programming | C, C++ |" in cv.content
    sheet = _read("diner.ots")
    assert sheet.page_unit == "sheet" and sheet.content.startswith("## Diner {#sheet-1}\n\n")
    assert "| Text (Card) | Input |  | Result |" in sheet.content
