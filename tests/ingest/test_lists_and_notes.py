"""Numbered lists stay lists, and footnotes and endnotes stay with their text, in every format
the document view shows: HTML, DOCX and ODT (issues #57 point 5 and #63 item 4)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from ingest.extract import documents as doc
from ingest.extract import extract
from ingest.extract.isolated import extract_isolated
from retrieval.render import render_markdown

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"


def _html(body: str) -> str:
    return extract(
        f"<html><body><main><h1>T</h1>{body}</main></body></html>".encode(), "text/html"
    ).content


def test_html_ordered_list_nested_under_an_item_stays_nested_and_keeps_its_start():
    content = _html(
        "<ol><li>one</li><li>two<ol><li>inner</li></ol></li><li>three</li></ol>"
        "<p>then</p><ol start='4'><li>four</li></ol>"
    )
    assert (
        "2. two\n   1. inner\n3. three" in content
    )  # three spaces: CommonMark's indent under "2. "
    html = render_markdown(content)
    assert "<li>two\n<ol>\n<li>inner</li>\n</ol>\n</li>" in html
    assert '<ol start="4">\n<li>four</li>' in html


def test_real_html_list_numbered_from_zero_keeps_its_numbers():
    page = (
        REAL / "makeinfo" / "GNU-Free-Documentation-License.html"
    )  # <ol start="0">: sections 0 to 11
    content = extract(
        page.read_bytes(), "text/html", url="https://www.gnu.org/software/hello/manual/"
    ).content
    assert "\n0. PREAMBLE\n" in content and "\n11. RELICENSING\n" in content


# --- numbered lists
# ---------------------------------------------------------------------------------
# gfdl.docx and gfdl.odt: pandoc's rendering of the GFDL page above: sections 0 to 11 a numbered
# list, each item's later paragraphs in the item, section 4's conditions A to O a list inside it
@pytest.mark.parametrize(
    "name, media_type", [("gfdl.docx", doc.DOCX), ("gfdl.odt", doc.ODT)], ids=["docx", "odt"]
)
@pytest.mark.child_process
def test_real_numbered_list_is_a_markdown_ordered_list(name, media_type):
    content = extract_isolated(
        (REAL / "documents" / name).read_bytes(), media_type, fallback_title=name
    ).content
    assert (
        "\n0. PREAMBLE\n\n   The purpose of this License is" in content
    )  # the item's paragraph stays in it
    assert "\n4. MODIFICATIONS\n" in content and "\n11. RELICENSING\n" in content
    assert (
        "\n   1. Use in the Title Page" in content and "\n   2. List on the Title Page" in content
    )
    html = render_markdown(content)
    assert '<ol start="0">\n<li>\n<p>PREAMBLE</p>\n<p>The purpose of this License' in html
    assert html.count("<ol") == 2 and "<li>\n<p>MODIFICATIONS</p>" in html


@pytest.mark.child_process
def test_docx_list_styles_number_and_bullet_as_word_does():
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_paragraph("Steps", style="Heading 1")
    for text in ("Unpack", "Configure", "Build"):
        document.add_paragraph(text, style="List Number")
    document.add_paragraph("Then choose:")
    for text in ("static", "shared"):
        document.add_paragraph(text, style="List Bullet")
    document.add_paragraph("Install", style="List Number")  # Word's numbering runs on: 4
    out = io.BytesIO()
    document.save(out)
    content = extract_isolated(out.getvalue(), doc.DOCX, fallback_title="steps.docx").content
    assert (
        "1. Unpack\n2. Configure\n3. Build\n\nThen choose:\n\n- static\n- shared\n4. Install"
        in content
    )
    assert (
        '<ul>\n<li>static</li>\n<li>shared</li>\n</ul>\n<ol start="4">\n<li>Install</li>'
        in render_markdown(content)
    )


# --- footnotes and endnotes
# -------------------------------------------------------------------------
# tutorial-join-notes.*: PostgreSQL's "2.6. Joins Between Tables" with its footnote, by pandoc
NOTE = "This is only a conceptual model. The join is usually performed in a more efficient manner"


def _as_endnotes(body: bytes) -> bytes:
    """The same file with its footnotes made endnotes (Word's parts and ODF's note class)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(body)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "content.xml":
                data = data.replace(b'note-class="footnote"', b'note-class="endnote"')
            elif item.filename.startswith(("word/", "[Content_Types]")):
                data = data.replace(b"footnote", b"endnote").replace(b"Footnote", b"Endnote")
            target.writestr(item.filename.replace("footnote", "endnote"), data)
    return out.getvalue()


@pytest.mark.parametrize("endnotes", [False, True], ids=["footnote", "endnote"])
@pytest.mark.parametrize(
    "name, media_type",
    [("tutorial-join-notes.docx", doc.DOCX), ("tutorial-join-notes.odt", doc.ODT)],
    ids=["docx", "odt"],
)
@pytest.mark.child_process
def test_real_note_is_kept_cited_where_it_was_and_linked(name, media_type, endnotes):
    body = (REAL / "documents" / name).read_bytes()
    body = _as_endnotes(body) if endnotes else body
    content = extract_isolated(body, media_type, fallback_title=name).content
    assert (
        "select the pairs of rows where these values match.[^1] This would be accomplished"
        in content
    )
    assert content.rstrip().endswith(
        "[^1]: " + NOTE + " than actually comparing each possible pair of rows, "
        "but this is invisible to the user."
    )
    html = render_markdown(content)
    assert '<sup class="note-citation"><a href="#fn-1" id="fnref-1">1</a></sup>' in html
    assert f'<p class="note" id="fn-1"><a class="note-back" href="#fnref-1">1</a> {NOTE}' in html


@pytest.mark.child_process
def test_docx_note_ends_its_own_section():
    body = (REAL / "documents" / "tutorial-join-notes.docx").read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(body)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                data = data.replace(
                    b"<w:sectPr",
                    b'<w:p><w:pPr><w:pStyle w:val="Heading2" /></w:pPr><w:r><w:t>'
                    b"Next section</w:t></w:r></w:p><w:p><w:r><w:t>More text.</w:t></w:r></w:p>"
                    b"<w:sectPr",
                    1,
                )
            target.writestr(item, data)
    content = extract_isolated(out.getvalue(), doc.DOCX, fallback_title="t.docx").content
    assert f"quite frequently.\n\n[^1]: {NOTE}" in content
    assert content.endswith("invisible to the user.\n\n## Next section\n\nMore text.\n")


def _odt(text_xml: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr(
            "content.xml",
            (
                "<office:document-content "
                'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
                'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
                'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"><office:automatic-styles>'
                '<text:list-style style:name="N"><text:list-level-style-number text:level="1" '
                'style:num-format="1"/>'
                '<text:list-level-style-bullet text:level="2" '
                'text:bullet-char="*"/></text:list-style>'
                f"</office:automatic-styles><office:body><office:text>{text_xml}</office:text></office:body>"
                "</office:document-content>"
            ),
        )
    return out.getvalue()


def _note(n: int, kind: str, text: str) -> str:
    return (
        f'<text:note text:id="n{n}" '
        f'text:note-class="{kind}"><text:note-citation>{n}</text:note-citation>'
        f"<text:note-body><text:p>{text}</text:p></text:note-body></text:note>"
    )


@pytest.mark.child_process
def test_odt_notes_end_their_sections_and_lists_continue():
    content = extract_isolated(
        _odt(
            '<text:h text:outline-level="1">One</text:h>'
            f"<text:p>Cited here{_note(1, 'footnote', 'First note.')}"
            f" and here{_note(2, 'endnote', 'An endnote.')}.</text:p>"
            '<text:list text:style-name="N"><text:list-item><text:p>Alpha</text:p>'
            "<text:list><text:list-item><text:p>inner</text:p></text:list-item></text:list></text:list-item><text:list-item><text:p>Beta</text:p></text:list-item></text:list>"
            '<text:h text:outline-level="1">Two</text:h><text:p>Between.</text:p>'
            '<text:list text:style-name="N" text:continue-numbering="true">'
            "<text:list-item><text:p>Gamma</text:p></text:list-item></text:list>"
        ),
        doc.ODT,
        fallback_title="n.odt",
    ).content
    assert content == (
        "# One\n\nCited here[^1] and here[^2].\n\n1. Alpha\n   - inner\n2. Beta\n\n"
        "[^1]: First note.\n\n[^2]: An endnote.\n\n# Two\n\nBetween.\n\n3. Gamma\n"
    )
