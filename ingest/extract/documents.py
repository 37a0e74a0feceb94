"""Documents to markdown with their structure: PDF, Office, OpenDocument, EPUB, CSV, e-mail. Pure.

`extract_document` is what runs in the budgeted parser child (`isolated.py`). Macro-enabled Office
files are refused, never opened. A sheet is read to its real extent, not to its `<dimension>` record
(read-only openpyxl trusts it), up to `MAX_SHEET_CELLS`; past that the content says it was
truncated.
"""

from __future__ import annotations

import csv
import datetime
import io
import logging
import zipfile
from dataclasses import replace
from email import policy
from email.parser import BytesParser
from posixpath import dirname, join, normpath

from defusedxml import ElementTree as SafeXML

from ingest.errors import (
    DocumentCorrupt,
    DocumentEncrypted,
    MacrosRefused,
    UnsupportedType,
)
from ingest.extract import ocr
from ingest.extract.blocks import (
    MarkdownBuilder,
    escape_markdown_line,
    open_zip,
    sheets_markdown,
    table_blocks,
)
from ingest.extract.html import html_to_markdown
from ingest.extract.numformat import date_text, format_number
from ingest.extract.opendocument import read_odp, read_ods, read_odt
from ingest.extract.pdf import read_pdf
from ingest.extract.result import Extracted
from ingest.extract.text import decode_text
from ingest.extract.word import read_docx
from kb.markup import strip_heading_id

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
ODP = "application/vnd.oasis.opendocument.presentation"
ODG = "application/vnd.oasis.opendocument.graphics"
OTT = "application/vnd.oasis.opendocument.text-template"
OTS = "application/vnd.oasis.opendocument.spreadsheet-template"
OTP = "application/vnd.oasis.opendocument.presentation-template"
OTG = "application/vnd.oasis.opendocument.graphics-template"
OPENDOCUMENT_TYPES = (ODT, ODS, ODP, ODG, OTT, OTS, OTP, OTG)
CSV = "text/csv"
EPUB = "application/epub+zip"
EML = "message/rfc822"
MACRO_TYPES = (
    "application/vnd.ms-word.document.macroenabled.12",
    "application/vnd.ms-excel.sheet.macroenabled.12",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12",
)
DOCUMENT_TYPES = (
    (PDF, DOCX, PPTX, XLSX, CSV, EPUB, EML) + OPENDOCUMENT_TYPES + MACRO_TYPES + ocr.IMAGE_TYPES
)
# every document type is parsed in the budgeted child process (native code, containers, images,
# and the stdlib's e-mail and CSV parsers, whose cost a crafted header or line can blow up)
ISOLATED_TYPES = DOCUMENT_TYPES
MAX_SHEET_CELLS = 2_000_000  # a workbook's cells read; past it the content says it was truncated
logger = logging.getLogger(__name__)
OOXML_MACRO_PART = "vbaProject.bin"


def extract_document(
    body: bytes,
    media_type: str,
    *,
    fallback_title: str = "",
    ocr_options: ocr.OcrOptions | None = None,
) -> Extracted:
    """`ocr_options` (given in the parser child) lets scans be read by OCR (`ocr.py`)."""
    if media_type in ocr.IMAGE_TYPES:
        return ocr.read_image(body, media_type, fallback_title, ocr_options or ocr.OcrOptions())
    if media_type == PDF:
        return read_pdf(body, fallback_title, ocr_options)
    if media_type in MACRO_TYPES:
        raise MacrosRefused(
            "Macro-enabled Office files are not read; save it without macros (.docx, .xlsx, .pptx)."
        )
    reader = {
        PDF: read_pdf,
        DOCX: read_docx,
        PPTX: _pptx,
        XLSX: _xlsx,
        ODT: read_odt,
        OTT: read_odt,
        ODS: read_ods,
        OTS: read_ods,
        ODP: read_odp,
        OTP: read_odp,
        ODG: read_odp,
        OTG: read_odp,
        CSV: _csv,
        EPUB: _epub,
        EML: _eml,
    }.get(media_type)
    if reader is None:
        raise UnsupportedType(f"Documents of type {media_type!r} are not read.")
    if media_type in (DOCX, PPTX, XLSX):
        _refuse_ooxml_macros(body)
    return reader(body, fallback_title)


def _refuse_ooxml_macros(body: bytes) -> None:
    with open_zip(body) as archive:
        if any(name.rsplit("/", 1)[-1] == OOXML_MACRO_PART for name in archive.namelist()):
            raise MacrosRefused("The document contains macros (vbaProject.bin); it is not read.")
        if any(info.flag_bits & 0x1 for info in archive.infolist()):
            raise DocumentEncrypted("The document's parts are encrypted.")


# --- PowerPoint -------------------------------------------------------------------------------
def _pptx(body: bytes, fallback_title: str) -> Extracted:
    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    try:
        presentation = Presentation(io.BytesIO(body))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DocumentCorrupt(f"The PowerPoint file cannot be read: {exc}") from exc
    builder = MarkdownBuilder()
    title = (presentation.core_properties.title or "").strip()
    for number, slide in enumerate(presentation.slides, start=1):
        builder.page(number)
        slide_title = ""
        if slide.shapes.title is not None and slide.shapes.title.has_text_frame:
            slide_title = " ".join(slide.shapes.title.text_frame.text.split())
        heading = f"Slide {number}: {slide_title}" if slide_title else f"Slide {number}"
        builder.add(f"## {heading} {{#slide-{number}}}")
        for shape in _flat_shapes(slide.shapes):
            if shape == slide.shapes.title:
                continue
            if shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join("".join(run.text for run in paragraph.runs).split())
                    if text:
                        builder.add(
                            ("  " * paragraph.level) + "- " + text
                            if paragraph.level
                            else escape_markdown_line(text)
                        )
            elif getattr(shape, "has_table", False) and shape.has_table:
                rows = [
                    [" ".join(cell.text.split()).replace("|", "\\|") for cell in row.cells]
                    for row in shape.table.rows
                ]
                for table in table_blocks(rows):
                    builder.add(table)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                builder.add("Notes: " + " ".join(notes.split()))
        title = title or (slide_title if number == 1 else "")
    return builder.result(title or fallback_title, "slide")


def _flat_shapes(shapes):
    """Every shape of a slide in reading order, the members of groups (and of nested groups)
    included; iterative, so no nesting depth can exhaust the stack."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    stack = [iter(shapes)]
    while stack:
        shape = next(stack[-1], None)
        if shape is None:
            stack.pop()
        elif shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            stack.append(iter(shape.shapes))
        else:
            yield shape


# --- spreadsheets -----------------------------------------------------------------------------
def _xlsx(body: bytes, fallback_title: str) -> Extracted:
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        workbook = openpyxl.load_workbook(io.BytesIO(body), read_only=True, data_only=True)
    except (InvalidFileException, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DocumentCorrupt(f"The Excel file cannot be read: {exc}") from exc
    sheets = []
    cells = 0
    for sheet in workbook.worksheets:
        if hasattr(sheet, "reset_dimensions"):
            # read-only mode trusts <dimension>, which may say "A1" of 6,000 cells
            sheet.reset_dimensions()
        rows = []
        for row in sheet.iter_rows():
            cells += len(row)
            if cells > MAX_SHEET_CELLS:
                rows.append(
                    [
                        f"(truncated: the workbook has more than {MAX_SHEET_CELLS:,} cells; "
                        "the rest is not indexed)"
                    ]
                )
                break
            rows.append(
                [_cell_text(cell.value, getattr(cell, "number_format", "")) for cell in row]
            )
        sheets.append((sheet.title, rows))
        if cells > MAX_SHEET_CELLS:
            logger.warning("workbook %r truncated at %d cells", fallback_title, MAX_SHEET_CELLS)
            break
    workbook.close()
    return sheets_markdown(sheets, fallback_title)


def _cell_text(value, number_format: str = "") -> str:
    """A cell's value as its number format shows it (`0.000%`, `#,##0.00 €`); dates as ISO
    dates or times, as much of them as the format shows."""
    if value is None:
        return ""
    if isinstance(value, bool):
        value = "TRUE" if value else "FALSE"
    elif isinstance(value, (int, float)):
        shown = format_number(value, number_format)
        if shown is not None:
            value = shown
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
    elif isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        value = date_text(value, number_format)
    return " ".join(str(value).split()).replace("|", "\\|")


def _csv(body: bytes, fallback_title: str) -> Extracted:
    text = decode_text(body)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = [
            [" ".join(cell.split()).replace("|", "\\|") for cell in row]
            for row in csv.reader(io.StringIO(text), dialect)
        ]
    except csv.Error as exc:
        raise DocumentCorrupt(f"The CSV file cannot be read: {exc}") from exc
    builder = MarkdownBuilder()
    for table in table_blocks(rows):
        builder.add(table)
    return builder.result(fallback_title)


# --- EPUB -----------------------------------------------------------------------------------------
def _epub(body: bytes, fallback_title: str) -> Extracted:
    with open_zip(body) as archive:
        names = set(archive.namelist())
        if "META-INF/encryption.xml" in names:
            raise DocumentEncrypted("The EPUB's content is encrypted (DRM).")
        try:
            container = SafeXML.fromstring(archive.read("META-INF/container.xml"))
            rootfile = next(
                e.get("full-path") for e in container.iter() if e.tag.endswith("rootfile")
            )
            package = SafeXML.fromstring(archive.read(rootfile))
        except (KeyError, StopIteration, SafeXML.ParseError) as exc:
            raise DocumentCorrupt(f"The EPUB has no readable package document: {exc}") from exc
        base = dirname(rootfile)
        manifest = {e.get("id"): e.get("href") for e in package.iter() if e.tag.endswith("}item")}
        spine = [e.get("idref") for e in package.iter() if e.tag.endswith("}itemref")]
        title = next(
            (" ".join((e.text or "").split()) for e in package.iter() if e.tag.endswith("}title")),
            "",
        )
        builder = MarkdownBuilder()
        for idref in spine:
            href = manifest.get(idref)
            path = normpath(join(base, href)) if href else ""
            if not path or path not in names:
                continue
            chapter = html_to_markdown(archive.read(path), url="")
            for block in chapter.content.split("\n\n"):
                builder.add(block if not block.startswith("#") else _drop_heading_id(block))
    return builder.result(title or fallback_title)


def _drop_heading_id(heading: str) -> str:
    """Ids inside an EPUB's chapters are not addressable from a citation: slugs serve instead."""
    marks, _, text = heading.partition(" ")
    return f"{marks} {strip_heading_id(text)}"


# --- e-mail ---------------------------------------------------------------------------------------
def _eml(body: bytes, fallback_title: str) -> Extracted:
    """One body part is read (plain text, else HTML) and attachments are named; every other part
    is counted in `left_out`, so an e-mail of 100,000 parts does not pass for one of a single
    part."""
    message = BytesParser(policy=policy.default).parsebytes(body)
    subject = " ".join(str(message.get("subject", "")).split())
    plain = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    builder = MarkdownBuilder()
    header = [
        f"{name}: {' '.join(str(message[name]).split())}"
        for name in ("From", "To", "Date")
        if message[name]
    ]
    if header:
        builder.add("\n".join(header))
    if plain is not None:
        builder.add(_escape_lines(plain.get_content()))
    elif html is not None:
        builder.add(html_to_markdown(html.get_content().encode("utf-8"), charset="utf-8").content)
    named = [
        (part, part.get_filename()) for part in message.iter_attachments() if _may_be_named(part)
    ]
    named = [(part, name) for part, name in named if name]
    if named:
        builder.add("Attachments: " + ", ".join(name for _, name in named))
    unread, total = _unread_parts(
        message, plain if plain is not None else html, [part for part, _ in named]
    )
    left_out = f"{unread:,} of {total:,} e-mail parts not read" if unread else ""
    return replace(builder.result(subject or fallback_title), left_out=left_out)


def _may_be_named(part) -> bool:
    """Whether a part's raw headers could give it a file name: parsing every header of an e-mail
    of thousands of parts costs seconds of the parser's budget."""
    return any(
        key.lower() in ("content-disposition", "content-type") and "name" in value.lower()
        for key, value in part.raw_items()
    )


def _unread_parts(message, body, named: list) -> tuple[int, int]:
    """(unread, total) leaf parts: unread is neither the body read, another version of it (its
    multipart/alternative siblings), nor inside an attachment named in the text."""
    read = {
        id(leaf) for part in ([body] if body is not None else []) + named for leaf in part.walk()
    }
    for part in message.walk():
        if (
            part.is_multipart()
            and part.get_content_type() == "multipart/alternative"
            and body is not None
            and any(sub is body for sub in part.get_payload())
        ):
            read.update(id(leaf) for leaf in part.walk())
    leaves = [part for part in message.walk() if not part.is_multipart()]
    return sum(1 for leaf in leaves if id(leaf) not in read), len(leaves)


def _escape_lines(text: str) -> str:
    return "\n".join(escape_markdown_line(line) for line in text.split("\n"))
