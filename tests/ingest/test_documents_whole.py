"""Documents read whole: what real files carry and the readers used to lose without an error."""

from __future__ import annotations

import datetime
import io
import re
import zipfile
from pathlib import Path

import pytest

from ingest.errors import NoTextLayer
from ingest.extract import documents as doc
from ingest.extract.isolated import extract_isolated
from ingest.extract.pdf import (
    drop_contents_lines,
    drop_running_lines,
    leader_line,
)
from ingest.extract.pdf_words import join_split_words
from retrieval.query import normalise_query

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"


def _xlsx(rows, dimension: str | None = None) -> bytes:
    openpyxl = pytest.importorskip("openpyxl")
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    workbook.save(out)
    if dimension is None:
        return out.getvalue()
    patched = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(out.getvalue())) as source,
        zipfile.ZipFile(patched, "w") as target,
    ):
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(
                    rb'<dimension ref="[^"]*"', f'<dimension ref="{dimension}"'.encode(), data
                )
            target.writestr(item, data)
    return patched.getvalue()


@pytest.mark.child_process
def test_xlsx_with_a_wrong_dimension_record_is_read_whole():
    rows = [["name", "value"]] + [[f"item{i}", i] for i in range(500)]
    extracted = extract_isolated(_xlsx(rows, dimension="A1"), doc.XLSX, fallback_title="t.xlsx")
    assert "item499" in extracted.content and "| value |" in extracted.content


@pytest.mark.child_process
def test_xlsx_dates_are_dates():
    rows = [["born", "at"], [datetime.datetime(1947, 1, 8), datetime.datetime(2024, 5, 1, 13, 30)]]
    content = extract_isolated(_xlsx(rows), doc.XLSX, fallback_title="d.xlsx").content
    assert "1947-01-08 |" in content and "00:00:00" not in content and "2024-05-01 13:30" in content


@pytest.mark.child_process
def test_pptx_text_in_grouped_shapes_is_read():
    pptx = pytest.importorskip("pptx")
    from pptx.util import Inches

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Architecture"
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(
        Inches(1), Inches(2), Inches(3), Inches(1)
    ).text_frame.text = "Grouped box text"
    inner = group.shapes.add_group_shape()
    inner.shapes.add_textbox(
        Inches(1), Inches(3), Inches(3), Inches(1)
    ).text_frame.text = "Nested group text"
    out = io.BytesIO()
    presentation.save(out)
    content = extract_isolated(out.getvalue(), doc.PPTX, fallback_title="s.pptx").content
    assert "Grouped box text" in content and "Nested group text" in content


@pytest.mark.child_process
def test_docx_merged_cells_are_written_once():
    docx = pytest.importorskip("docx")
    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 2))
    merged.text = "Quarterly totals"
    for col, text in enumerate(("q1", "q2", "q3")):
        table.cell(1, col).text = text
    out = io.BytesIO()
    document.save(out)
    content = extract_isolated(out.getvalue(), doc.DOCX, fallback_title="m.docx").content
    assert content.count("Quarterly totals") == 1 and "| q1 | q2 | q3 |" in content


@pytest.mark.child_process
def test_docx_plain_table_keeps_every_row_and_cell():
    docx = pytest.importorskip("docx")
    document = docx.Document()
    rows = [
        ["name", "team", "city"],
        ["alice", "red", "oslo"],
        ["bob", "blue", "lima"],
        ["carol", "green", "rome"],
    ]
    table = document.add_table(rows=len(rows), cols=3)
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    out = io.BytesIO()
    document.save(out)
    content = extract_isolated(out.getvalue(), doc.DOCX, fallback_title="p.docx").content
    assert content == (
        "| name | team | city |\n|---|---|---|\n| alice | red | oslo |\n"
        "| bob | blue | lima |\n| carol | green | rome |\n"
    )


@pytest.mark.child_process
def test_real_docx_tables_keep_their_cells_and_show_a_merged_cell_once():
    """python-docx's own fixture: four 3x3 tables of 1..9, the second with 4 spanning two
    columns, the third with 5 spanning two rows, the fourth with 4 spanning both."""
    content = extract_isolated(
        (REAL / "documents" / "tbl-cell-access.docx").read_bytes(),
        doc.DOCX,
        fallback_title="tbl-cell-access.docx",
    ).content
    header = "| 1 | 2 | 3 |\n|---|---|---|\n"
    assert content.split("\n\n") == [
        header + "| 4 | 5 | 6 |\n| 7 | 8 | 9 |",
        header + "| 4 |  | 6 |\n| 7 | 8 | 9 |",
        header + "| 4 | 5 | 6 |\n| 7 |  | 9 |",
        header + "| 4 |  | 6 |\n|  |  | 9 |\n",
    ]


@pytest.mark.child_process
def test_pdf_hyphenation_is_joined_and_lookalikes_folded():
    content = extract_isolated((REAL / "documents" / "asymptote.pdf").read_bytes(), doc.PDF).content
    assert "\ufffe" not in content and "\u2212" not in content  # 112 and 56 of them in the raw text
    assert normalise_query("\u2212\u2212rcfile \u02dc/.bashrc") == "--rcfile ~/.bashrc"


def test_running_headers_and_footers_are_dropped():
    pages = [
        f"ACME Manual v2\nChapter text of page {n} that is the body.\nMore body {n}.\nPage {n} of 9"
        for n in range(1, 10)
    ]
    kept = drop_running_lines(pages)
    assert all("ACME Manual" not in page and "of 9" not in page for page in kept)
    assert all(f"Chapter text of page {n}" in page for n, page in enumerate(kept, start=1))
    assert drop_running_lines(pages[:2]) == pages[:2]  # two pages are no evidence
    # the Debian Reference's PDF: front matter numbered in roman digits, the body "n / total"
    numbered = [
        f"Debian-Referenz {n}\nFront matter text {n}.\nMore of it." for n in ("ii", "iii", "xix")
    ]
    numbered += [f"Debian-Referenz {n} / 248\nBody text {n}.\nMore body." for n in range(1, 6)]
    assert not any("Debian-Referenz" in page for page in drop_running_lines(numbered))


def test_running_heads_numbered_with_the_page_are_dropped_though_their_text_changes():
    names = ["Introduction"] * 3 + ["Function reference"] * 4 + ["Index"] * 3
    pages = [
        f"Chapter {n}: {name} {number + 3}\nBody of page {number}.\n{'Its end' * number} {number}."
        for number, (n, name) in enumerate(zip([1] * 3 + [4] * 4 + [9] * 3, names, strict=True))
    ]
    pages[5] = "Function reference\nBody of page 5, unnumbered head.\nA last line."
    pages[6] = "Function reference\nBody of page 6.\nA last line."
    kept = drop_running_lines(pages)
    assert all("Chapter" not in page and "Function reference" not in page for page in kept)
    assert (
        all(f"Body of page {n}" in page for n, page in enumerate(kept))
        and "Its endIts end 2." in kept[2]
    )
    # lines that end in numbers out of step with the pages are body text
    words = ["Mixing", "Pouring", "Baking", "Cooling", "Cutting", "Serving"]
    body = [
        f"{word} takes 3\nText of step {n}.\n{words[-n]} is in figure {2 * n + 1}"
        for n, word in enumerate(words)
    ]
    assert drop_running_lines(body) == body


def test_split_words_are_joined_where_the_document_says_so():
    pages = [
        "The func-\ntion reads a well-\nknown value from asn1 read value and the\nre-\nsult of "
        "ASN1_\n"
        "ELEMENT_NOT_FOUND.\nThe file name is set.",
        "int asn1_read_value (node, file_name); this function is well known; a result.",
    ]
    first = join_split_words(pages)[0]
    assert (
        "The function\nreads a well-known\nvalue from asn1_read_value and the\nresult\nof" in first
    )
    assert "ASN1_ELEMENT_NOT_FOUND" in first
    assert (
        "The file name is set." in first
    )  # two parts join only where the same page spells the name


def test_contents_and_index_pages_are_left_out_and_spec_lines_are_not():
    entries = [f"{n}.1 Abschnitt {n} " + ". " * 30 + str(n * 7) for n in range(1, 9)]
    contents = "\n".join(
        [
            "Inhaltsverzeichnis",
            *entries,
            "2.6 Grundlegende Paketmanagement-Operationen mit apt(8) / apt-cache(8) . 52",
        ]
    )
    body = (
        "Use apt to install packages . . . . . . . . 12\nA sentence that ends in an "
        "ellipsis... 10\nPlain text."
    )
    specs = "\n".join(
        f"{name} . . . . . . . . {value}"
        for name, value in (
            ("Nennspannung", "230 V"),
            ("Abmessungen", "10 x 20 cm"),
            ("Espresso", "2,50"),
            ("Gewicht", "3 kg"),
            ("Leistung", "2000 W"),
            ("Kabel", "1,5 m"),
        )
    )
    assert drop_contents_lines([contents, body, specs]) == [
        "",
        body,
        specs,
    ]  # a contents page goes whole
    assert leader_line("box. . . . . . . . . . . . 48, 49, 140") and leader_line(
        "Vorwort . . . . . . . . xix"
    )
    assert leader_line("Kapitel . . . . . . . 12\u201314")
    assert not leader_line("Nennspannung . . . . . . 230 V") and not leader_line(
        "Espresso ........ 2,50"
    )
    assert not leader_line("Index 182") and not leader_line("1. 2. 3. 4. 5. 6")


def _pdf_with_page_numbers_only(pages: int) -> bytes:
    pypdf = pytest.importorskip("pypdf")
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = pypdf.PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    for number in range(1, pages + 1):
        page = writer.add_blank_page(612, 792)
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 10 Tf 300 30 Td (Page {number} of {pages}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
        writer.add_outline_item(title=f"{number} Chapter {number}", page_number=number - 1)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.child_process
def test_pdf_with_an_outline_but_no_body_text_is_reported():
    with pytest.raises(NoTextLayer) as caught:
        extract_isolated(_pdf_with_page_numbers_only(6), doc.PDF)
    assert "no body text" in caught.value.message


@pytest.mark.child_process
def test_pdf_title_from_first_page_when_metadata_has_none():
    extracted = extract_isolated(
        (REAL / "documents" / "asymptote-CAD.pdf").read_bytes(),
        doc.PDF,
        fallback_title="asymptote-CAD.pdf",
    )
    assert extracted.title != "asymptote-CAD.pdf" and "CAD" in extracted.title
