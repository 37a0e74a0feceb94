"""Real pages and documents that nobody on the team wrote (tests/fixtures/real/README.md says
where each comes from and under which licence): what comes out must be the page's content with
the site's own anchors, and documents must keep their pages, slides, sheets and headings."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from ingest.boilerplate import blocks
from ingest.chunk import chunk_markdown
from ingest.errors import DocumentCorrupt, DocumentEncrypted, MacrosRefused, NoTextLayer
from ingest.extract import documents as doc
from ingest.extract import extract
from ingest.extract.isolated import ParserBudget, extract_isolated
from kb.markup import plain_text

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
SITE_PAGES = [
    ("sphinx/sqlite3.html", "https://docs.python.org/3.11/library/sqlite3.html"),
    ("sphinx/controlflow.html", "https://docs.python.org/3.11/tutorial/controlflow.html"),
    (
        "mkdocs-site/user-guide/configuration.html",
        "https://www.mkdocs.org/user-guide/configuration/",
    ),
    (
        "mkdocs/literate-nav-reference.html",
        "https://oprypin.github.io/mkdocs-literate-nav/reference.html",
    ),
]
CHROME = (
    "Quick search",
    "Table of Contents",
    "« previous",
    "Previous topic",
    "Next topic",
    "This Page",
    "Report a Bug",
    "Show Source",
    "Last updated",
    "Built with MkDocs",
    "Made with Material",
    "Copyright ©",
)
PERMALINK_MARKS = ("¶", "Permanent link", "Permalink to this heading", "](")


def _page(name: str, url: str):
    body = (REAL / name).read_bytes()
    extracted = extract(body, "text/html", url=url)
    return body, extracted, chunk_markdown(extracted.content, extracted.title, web_page=True)


@pytest.mark.parametrize("name,url", SITE_PAGES, ids=[n for n, _ in SITE_PAGES])
def test_real_site_pages_keep_content_and_drop_chrome(name, url):
    _, extracted, chunks = _page(name, url)
    assert len(chunks) >= 3
    for chunk in chunks:
        for mark in CHROME:
            assert mark not in chunk.text, (mark, chunk.heading_path)
        for crumb in chunk.heading_path:
            assert not any(mark in crumb for mark in PERMALINK_MARKS + ("#", "`", "**")), crumb
        prose = "\n".join(b for b in blocks(chunk.text) if not b.lstrip().startswith("```"))
        assert "](" not in re.sub(
            r"`[^`]*`", "", prose
        )  # links carry their words only (code may show markdown)
    assert extracted.links, "outgoing links are kept as data"
    assert all(link.startswith("http") and "#" not in link for link in extracted.links)


@pytest.mark.parametrize("name,url", SITE_PAGES, ids=[n for n, _ in SITE_PAGES])
def test_real_site_anchors_exist_as_ids_in_the_page(name, url):
    body, _, chunks = _page(name, url)
    ids = {tag["id"] for tag in BeautifulSoup(body, "html.parser").find_all(id=True)}
    with_heading = [c for c in chunks if c.heading_path]
    resolved = [c for c in with_heading if c.anchor in ids or not c.anchor]  # "": the page itself
    assert len(resolved) >= 0.95 * len(with_heading), [
        c.anchor for c in with_heading if c.anchor not in ids
    ]


def test_sphinx_title_headings_and_code_language():
    _, extracted, chunks = _page(*SITE_PAGES[0])
    assert (
        extracted.title == "sqlite3 — DB-API 2.0 interface for SQLite databases"
    )  # no site suffix
    assert "```python\nimport sqlite3" in extracted.content  # from div.highlight-python3
    tutorial = next(c for c in chunks if c.heading_path[-1:] == ("Tutorial",))
    assert tutorial.anchor == "tutorial"


def test_snippet_text_shows_no_markdown():
    _, extracted, _ = _page(*SITE_PAGES[2])
    shown = plain_text(extracted.content)
    assert "```" not in shown and "{#" not in shown and "](" not in shown
    fenced = set(re.findall(r"^```[^\n]*\n(.*?)^```", extracted.content, re.S | re.M))
    code_lines = {line.strip() for block in fenced for line in block.splitlines()}
    assert all(
        line in code_lines for line in shown.splitlines() if line.startswith("#")
    )  # comments in code stay


# --- documents ------------------------------------------------------------------------------------
def _document(name: str, media_type: str):
    return extract_isolated(
        (REAL / "documents" / name).read_bytes(), media_type, fallback_title=name
    )


@pytest.mark.child_process
def test_pdf_pages_and_outline_headings():
    extracted = _document("asymptote.pdf", doc.PDF)
    # the table of contents (pages 3 to 5) and the index (185 to 196) are entries with dot
    # leaders and page numbers, which match every query word: their pages hold no text
    assert extracted.page_unit == "page" and [n for _, n in extracted.pages] == [
        1,
        2,
        *range(6, 186),
    ]
    assert (
        ". . . . ." not in extracted.content and "# Index" in extracted.content
    )  # its outline heading stays
    chunks = chunk_markdown(extracted.content, extracted.title, pages=extracted.pages)
    assert all(c.page_start and c.page_end and c.page_start <= c.page_end for c in chunks)
    assert chunks[-1].page_end == 185 and chunks[0].page_start == 1
    headings = {c.heading_path[0] for c in chunks if c.heading_path}
    assert {"1 Description", "2 Installation", "3 Tutorial"} <= headings  # from the PDF outline
    tutorial = next(c for c in chunks if c.heading_path[:1] == ("3 Tutorial",))
    page_text = extracted.content[dict((n, o) for o, n in extracted.pages)[tutorial.page_start] :]
    assert "Tutorial" in page_text[:2000]


@pytest.mark.child_process
def test_pdf_without_outline_still_has_pages():
    extracted = _document("asymptote-CAD.pdf", doc.PDF)
    chunks = chunk_markdown(extracted.content, extracted.title, pages=extracted.pages)
    assert len(extracted.pages) == 7 and {c.page_start for c in chunks} >= {1, 7}


RUNNING_HEAD = re.compile(r"^(?:Chapter \d+|Appendix [A-Z]): .{3,60} \d+$", re.MULTILINE)


@pytest.mark.parametrize(
    "name, heads", [("libtasn1.pdf", 26), ("asymptote.pdf", 162)], ids=["libtasn1", "asymptote"]
)
@pytest.mark.child_process
def test_pdf_running_heads_that_change_per_chapter_are_in_no_passage(name, heads):
    """Texinfo prints "Chapter 4: Function reference 22" over each page: the chapter's name and
    the page number change, so no line repeats across half the pages, yet none is content."""
    import pypdfium2 as pdfium

    body = (REAL / "documents" / name).read_bytes()
    document = pdfium.PdfDocument(body)
    raw = "\n".join(
        document[i].get_textpage().get_text_range().replace("\r\n", "\n")
        for i in range(len(document))
    )
    assert len(RUNNING_HEAD.findall(raw)) >= heads  # the running heads are there to remove
    extracted = extract_isolated(body, doc.PDF, fallback_title=name)
    chunks = chunk_markdown(extracted.content, extracted.title, pages=extracted.pages)
    assert [c.text for c in chunks if RUNNING_HEAD.search(c.body)] == []


@pytest.mark.child_process
def test_pdf_passages_keep_their_text_and_pages_without_the_running_heads():
    extracted = _document("libtasn1.pdf", doc.PDF)
    chunks = chunk_markdown(extracted.content, extracted.title, pages=extracted.pages)
    decode = next(c for c in chunks if "Decodes a simple DER encoded type" in c.body)
    assert decode.page_start <= 25 <= decode.page_end  # printed page 22 is the PDF's 25th
    assert (
        "GNU Libtasn1 home page" in extracted.content and "## Simple parsing" in extracted.content
    )


@pytest.mark.child_process
def test_pdf_identifiers_whose_underscores_print_as_rules_are_joined():
    """Texinfo draws `_` outside code as a rule, so PDFium reads "asn1 decode simple der" where
    the page shows asn1_decode_simple_der; the page spells the name in code beside it."""
    content = _document("libtasn1.pdf", doc.PDF).content
    assert "\nasn1_decode_simple_der\nint asn1_decode_simple_der (" in content
    assert "asn1 decode simple der" not in content and "asn1 create element" not in content
    assert "der_len: the bytes of the encoded string" in content  # a parameter's name
    assert (
        "ASN1_SYNTAX_ERROR if the syntax is not correct" in content
    )  # broken after its underscore
    asymptote = _document("asymptote.pdf", doc.PDF).content
    assert "defined in three_light.asy:" in asymptote
    assert (
        "The Vector Graphics Language" in asymptote
    )  # a link's Vector_Graphics_Language is not a name


def _pdf_variant(**encrypt) -> bytes:
    pypdf = pytest.importorskip("pypdf")
    reader = pypdf.PdfReader(REAL / "documents" / "asymptote-CAD.pdf")
    writer = pypdf.PdfWriter(clone_from=reader)
    writer.encrypt(**encrypt)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.child_process
def test_pdf_with_only_an_owner_password_ingests_and_a_user_password_does_not():
    owner_only = extract_isolated(_pdf_variant(user_password="", owner_password="owner"), doc.PDF)
    assert len(owner_only.pages) == 7
    with pytest.raises(DocumentEncrypted):
        extract_isolated(_pdf_variant(user_password="secret", owner_password="owner"), doc.PDF)


@pytest.mark.child_process
def test_scanned_pdf_is_reported_as_having_no_text_layer():
    pdfium = pytest.importorskip("pypdfium2")
    page = pdfium.PdfDocument(REAL / "documents" / "asymptote-CAD.pdf")[0]
    image = page.render(scale=0.5).to_pil()
    out = io.BytesIO()
    image.save(out, format="PDF")
    with pytest.raises(NoTextLayer) as caught:
        extract_isolated(out.getvalue(), doc.PDF)
    assert caught.value.code == "INGEST_NO_TEXT_LAYER"


@pytest.mark.child_process
def test_corrupt_and_macro_files_are_item_errors():
    with pytest.raises(DocumentCorrupt):
        extract_isolated(b"%PDF-1.7\n" + b"\x00garbage" * 100, doc.PDF)
    with pytest.raises(DocumentCorrupt):
        extract_isolated((REAL / "documents" / "asymptote-CAD.pdf").read_bytes()[:5000], doc.DOCX)
    with pytest.raises(MacrosRefused):
        extract_isolated(b"anything", doc.MACRO_TYPES[0])


@pytest.mark.child_process
def test_parser_budget_cannot_be_escaped():
    from ingest.errors import ParserBudgetExceeded

    with pytest.raises(ParserBudgetExceeded):
        extract_isolated(
            (REAL / "documents" / "asymptote.pdf").read_bytes(),
            doc.PDF,
            budget=ParserBudget(cpu_seconds=1, memory_bytes=60 * 1024**2),
        )


@pytest.mark.child_process
def test_odt_headings_become_sections():
    extracted = _document("api-for-odfpy.odt", doc.ODT)
    chunks = chunk_markdown(extracted.content, extracted.title)
    paths = {c.heading_path for c in chunks}
    assert ("Introduction", "About OpenDocument") in paths
    assert (
        extracted.title == "Application Programmer's Interface for ODFPY"
    )  # its properties' title, not a heading


@pytest.mark.child_process
def test_docx_heading_styles_become_headings():
    extracted = _document("par-known-styles.docx", doc.DOCX)
    assert "# Heading 1\n\nBody Text" in extracted.content


@pytest.mark.child_process
def test_pptx_slides_are_sections_with_slide_numbers():
    extracted = _document("cht-replace-data.pptx", doc.PPTX)
    chunks = chunk_markdown(extracted.content, extracted.title, pages=extracted.pages)
    assert extracted.page_unit == "slide" and [n for _, n in extracted.pages] == list(range(1, 8))
    assert {c.anchor for c in chunks} >= {"slide-1", "slide-7"}
    assert all(c.page_start == int(c.anchor.split("-")[1]) for c in chunks)


@pytest.mark.parametrize(
    "name,media_type", [("pythagoras-kspread.ods", doc.ODS), ("shp-embedded-xlsx.xlsx", doc.XLSX)]
)
@pytest.mark.child_process
def test_spreadsheets_become_tables_per_sheet(name, media_type):
    extracted = _document(name, media_type)
    assert extracted.page_unit == "sheet"
    assert (
        "## Sheet1 {#sheet-1}" in extracted.content
        and "\n| " in extracted.content
        and "|---|" in extracted.content
    )


def test_csv_rows_become_tables_with_the_header_repeated():
    rows = "name,value\n" + "".join(f"row{i},{i}\n" for i in range(100))
    extracted = extract(rows.encode(), doc.CSV)
    assert extracted.content.count("| name | value |") == 3  # 40 rows a block


def test_email_keeps_subject_sender_and_body():
    extracted = extract((REAL / "documents" / "msg_02.eml").read_bytes(), doc.EML)
    assert extracted.title == "Ppp digest, Vol 1 #2 - 5 msgs"
    assert extracted.content.startswith("From: ")


@pytest.mark.child_process
def test_epub_chapters_in_spine_order():
    """An EPUB packed here around two real Sphinx chapters (the container is the test's; the
    chapters are python3.11-doc's)."""
    chapters = {
        "OEBPS/a.xhtml": (REAL / "sphinx" / "controlflow.html").read_bytes(),
        "OEBPS/b.xhtml": (REAL / "sphinx" / "sqlite3.html").read_bytes(),
    }
    out = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
            'full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        archive.writestr(
            "OEBPS/book.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
            'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Python '
            'chapters</dc:title></metadata><manifest><item id="b" href="b.xhtml" media-type='
            '"application/xhtml+xml"/><item id="a" href="a.xhtml" '
            'media-type="application/xhtml+xml"/>'
            '</manifest><spine><itemref idref="b"/><itemref idref="a"/></spine></package>',
        )
        for name, data in chapters.items():
            archive.writestr(name, data)
    extracted = extract_isolated(out.getvalue(), doc.EPUB)
    assert extracted.title == "Python chapters"
    assert extracted.content.index("sqlite3") < extracted.content.index("More Control Flow Tools")
    assert "{#" not in extracted.content and "Quick search" not in extracted.content
