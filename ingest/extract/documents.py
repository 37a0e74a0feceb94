"""Documents to markdown with their structure: PDF, Word, PowerPoint, spreadsheets, OpenDocument,
EPUB and e-mail. Pure: bytes in, `Extracted` out.

| type | library | structure kept |
|---|---|---|
| PDF | pypdfium2 (PDFium) | pages (`Extracted.pages`), the outline as headings |
| DOCX | python-docx | Heading 1-9 and Title styles as headings, tables as tables |
| PPTX | python-pptx | one section per slide (`## Slide N: title {#slide-N}`), notes, tables |
| XLSX | openpyxl | one section per sheet, rows as tables (header row repeated per block) |
| ODT, ODS | the OpenDocument XML read with defusedxml | headings by outline level; sheets as tables |
| CSV | csv (stdlib) | rows as tables |
| EPUB | zipfile + the HTML extractor | chapters in spine order |
| EML | email (stdlib) | subject as title, sender and date, plain part (or HTML part) |

Native parsers run in a child process with a time and memory budget (`ingest/extract/isolated.py`);
this module is what runs there. Macro-enabled Office files are refused, never opened.
"""

from __future__ import annotations

import csv
import io
import logging
import zipfile
from email import policy
from email.parser import BytesParser
from posixpath import dirname, join, normpath

from defusedxml import ElementTree as SafeXML

from ingest.errors import (
    DocumentCorrupt, DocumentEncrypted, EmptyContent, MacrosRefused, NoTextLayer, UnsupportedType,
)
from ingest.extract.html import html_to_markdown, markdown_table
from ingest.extract.result import Extracted
from ingest.extract.text import decode_text, normalise_text
from kb.markup import strip_heading_id

logger = logging.getLogger(__name__)

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
CSV = "text/csv"
EPUB = "application/epub+zip"
EML = "message/rfc822"
MACRO_TYPES = (
    "application/vnd.ms-word.document.macroenabled.12",
    "application/vnd.ms-excel.sheet.macroenabled.12",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12",
)
DOCUMENT_TYPES = (PDF, DOCX, PPTX, XLSX, ODT, ODS, CSV, EPUB, EML) + MACRO_TYPES
# types whose parser is native code or unzips a container: parsed in the budgeted child process
ISOLATED_TYPES = (PDF, DOCX, PPTX, XLSX, ODT, ODS, EPUB) + MACRO_TYPES
TABLE_BLOCK_ROWS = 40  # rows per table block; each block repeats the header row
MIN_TEXT_CHARS_PER_PAGE = 8  # below this on every page, a PDF is a scan without a text layer
OOXML_MACRO_PART = "vbaProject.bin"
ODF_NS = {
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
}


class _Builder:
    """Markdown built block by block, recording where each page (slide, sheet) starts. Each
    block is normalised on its way in, so the offsets hold in the final content."""

    def __init__(self):
        self.parts: list[str] = []
        self.length = 0
        self.pages: list[tuple[int, int]] = []
        self._pending_page: int | None = None

    def page(self, number: int) -> None:
        self._pending_page = number

    def add(self, markdown: str) -> None:
        text = normalise_text(markdown).strip("\n")
        if not text:
            return
        if self.parts:
            self.length += 2
        if self._pending_page is not None:
            self.pages.append((self.length, self._pending_page))
            self._pending_page = None
        self.parts.append(text)
        self.length += len(text)

    def result(self, title: str, unit: str = "") -> Extracted:
        content = "\n\n".join(self.parts) + "\n" if self.parts else ""
        if not content.strip():
            raise EmptyContent("The document has no text.")
        return Extracted(title=title, content=content, media_type="text/markdown",
                         pages=tuple(self.pages) if unit else (), page_unit=unit)


def extract_document(body: bytes, media_type: str, *, fallback_title: str = "") -> Extracted:
    if media_type in MACRO_TYPES:
        raise MacrosRefused("Macro-enabled Office files are not read; save it without macros (.docx, .xlsx, .pptx).")
    reader = {PDF: _pdf, DOCX: _docx, PPTX: _pptx, XLSX: _xlsx, ODT: _odt, ODS: _ods, CSV: _csv,
              EPUB: _epub, EML: _eml}.get(media_type)
    if reader is None:
        raise UnsupportedType(f"Documents of type {media_type!r} are not read.")
    if media_type in (DOCX, PPTX, XLSX):
        _refuse_ooxml_macros(body)
    return reader(body, fallback_title)


def _zip(body: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(body))
    except zipfile.BadZipFile as exc:
        raise DocumentCorrupt(f"The file is not a readable zip container: {exc}") from exc


def _refuse_ooxml_macros(body: bytes) -> None:
    with _zip(body) as archive:
        if any(name.rsplit("/", 1)[-1] == OOXML_MACRO_PART for name in archive.namelist()):
            raise MacrosRefused("The document contains macros (vbaProject.bin); it is not read.")
        if any(info.flag_bits & 0x1 for info in archive.infolist()):
            raise DocumentEncrypted("The document's parts are encrypted.")


# --- PDF ----------------------------------------------------------------------------------------
def _pdf(body: bytes, fallback_title: str) -> Extracted:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(body)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise DocumentEncrypted("The PDF needs a password to open.") from exc
        raise DocumentCorrupt(f"The PDF cannot be read: {exc}") from exc
    try:
        page_count = len(document)
        outline = _pdf_outline(document, page_count)
        texts = []
        for index in range(page_count):
            page = document[index]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range().replace("\r\n", "\n").replace("\r", "\n"))
            textpage.close()
            page.close()
        title = (document.get_metadata_value("Title") or "").strip()
    finally:
        document.close()
    if page_count and all(len(t.strip()) < MIN_TEXT_CHARS_PER_PAGE for t in texts):
        raise NoTextLayer(f"The PDF's {page_count} pages have no text layer (a scan?); it needs OCR first.")
    builder = _Builder()
    for number, text in enumerate(texts, start=1):
        builder.page(number)
        for block in _pdf_page_blocks(text, outline.get(number, [])):
            builder.add(block)
    return builder.result(title or fallback_title, "page")


def _pdf_outline(document, page_count: int) -> dict[int, list[tuple[int, str]]]:
    """Outline (bookmarks) by 1-based page: [(level, title)], in order."""
    headings: dict[int, list[tuple[int, str]]] = {}
    try:
        for item in document.get_toc(max_depth=6):
            destination = item.get_dest()
            index = destination.get_index() if destination is not None else None
            if index is None or not 0 <= index < page_count:
                continue
            title = " ".join((item.get_title() or "").split())
            if title:
                headings.setdefault(index + 1, []).append((min(6, item.level + 1), title))
    except pdfium_errors() as exc:  # a broken outline loses the headings, never the text
        logger.warning("PDF outline unreadable: %s", exc)
        return {}
    return headings


def pdfium_errors() -> tuple[type[BaseException], ...]:
    import pypdfium2 as pdfium

    return (pdfium.PdfiumError, ValueError, KeyError)


def _pdf_page_blocks(text: str, headings: list[tuple[int, str]]) -> list[str]:
    """The page's text with each outline heading placed at the line where its title starts
    (at the top of the page when the title is not found on it)."""
    lines = text.split("\n")
    inserts: dict[int, list[str]] = {}
    cursor = 0
    for level, title in headings:
        at = _find_line(lines, title, cursor)
        if at is None:
            inserts.setdefault(cursor, []).append("#" * level + " " + title)
        else:
            inserts.setdefault(at, []).append("#" * level + " " + title)
            lines[at] = ""  # the heading replaces the line that printed it
            cursor = at
    blocks, paragraph = [], []
    for index, line in enumerate(lines):
        if index in inserts:
            if paragraph:
                blocks.append("\n".join(paragraph))
                paragraph = []
            blocks.extend(inserts[index])
        if line.strip():
            paragraph.append(_escape_markdown_line(line.rstrip()))
        elif paragraph:
            blocks.append("\n".join(paragraph))
            paragraph = []
    if paragraph:
        blocks.append("\n".join(paragraph))
    return blocks


def _find_line(lines: list[str], title: str, start: int) -> int | None:
    """The first line from `start` that prints the title (alone, or after a section number)."""
    wanted = " ".join(title.split()).lower()
    for index in range(start, len(lines)):
        line = " ".join(lines[index].split()).lower()
        if line and wanted in line and len(line) <= len(wanted) + 8:
            return index
    return None


def _escape_markdown_line(line: str) -> str:
    """Text from a PDF or a sheet is not markdown: a leading `#` or fence must not become one."""
    stripped = line.lstrip()
    if stripped.startswith(("#", "```", "~~~")):
        return "\\" + stripped
    return line


# --- Word -----------------------------------------------------------------------------------------
def _docx(body: bytes, fallback_title: str) -> Extracted:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(body))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DocumentCorrupt(f"The Word file cannot be read: {exc}") from exc
    builder = _Builder()
    title = (document.core_properties.title or "").strip()
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = " ".join(block.text.split())
            if not text:
                continue
            level = _docx_heading_level(block.style.name if block.style is not None else "")
            if level:
                builder.add("#" * level + " " + text)
                title = title or (text if level == 1 else "")
            elif block.style is not None and block.style.name.lower().startswith("list"):
                builder.add("- " + text)
            else:
                builder.add(_escape_markdown_line(text))
        elif isinstance(block, Table):
            rows = [[" ".join(cell.text.split()).replace("|", "\\|") for cell in row.cells] for row in block.rows]
            for table in _table_blocks(rows):
                builder.add(table)
    return builder.result(title or fallback_title)


def _docx_heading_level(style: str) -> int:
    name = style.lower()
    if name == "title":
        return 1
    if name.startswith("heading "):
        digits = name[len("heading "):]
        if digits.isdigit():
            return min(6, int(digits))
    return 0


# --- PowerPoint -------------------------------------------------------------------------------
def _pptx(body: bytes, fallback_title: str) -> Extracted:
    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    try:
        presentation = Presentation(io.BytesIO(body))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DocumentCorrupt(f"The PowerPoint file cannot be read: {exc}") from exc
    builder = _Builder()
    title = (presentation.core_properties.title or "").strip()
    for number, slide in enumerate(presentation.slides, start=1):
        builder.page(number)
        slide_title = ""
        if slide.shapes.title is not None and slide.shapes.title.has_text_frame:
            slide_title = " ".join(slide.shapes.title.text_frame.text.split())
        heading = f"Slide {number}: {slide_title}" if slide_title else f"Slide {number}"
        builder.add(f"## {heading} {{#slide-{number}}}")
        for shape in slide.shapes:
            if shape == slide.shapes.title:
                continue
            if shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join("".join(run.text for run in paragraph.runs).split())
                    if text:
                        builder.add(("  " * paragraph.level) + "- " + text if paragraph.level
                                    else _escape_markdown_line(text))
            elif getattr(shape, "has_table", False) and shape.has_table:
                rows = [[" ".join(cell.text.split()).replace("|", "\\|") for cell in row.cells]
                        for row in shape.table.rows]
                for table in _table_blocks(rows):
                    builder.add(table)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                builder.add("Notes: " + " ".join(notes.split()))
        title = title or (slide_title if number == 1 else "")
    return builder.result(title or fallback_title, "slide")


# --- spreadsheets -----------------------------------------------------------------------------
def _xlsx(body: bytes, fallback_title: str) -> Extracted:
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        workbook = openpyxl.load_workbook(io.BytesIO(body), read_only=True, data_only=True)
    except (InvalidFileException, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DocumentCorrupt(f"The Excel file cannot be read: {exc}") from exc
    sheets = []
    for sheet in workbook.worksheets:
        rows = [[_cell_text(value) for value in row] for row in sheet.iter_rows(values_only=True)]
        sheets.append((sheet.title, rows))
    workbook.close()
    return _sheets(sheets, fallback_title)


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split()).replace("|", "\\|")


def _sheets(sheets: list[tuple[str, list[list[str]]]], title: str) -> Extracted:
    builder = _Builder()
    for number, (name, rows) in enumerate(sheets, start=1):
        rows = _trim_rows(rows)
        if not rows:
            continue
        builder.page(number)
        builder.add(f"## {name} {{#sheet-{number}}}")
        for table in _table_blocks(rows):
            builder.add(table)
    return builder.result(title, "sheet")


def _trim_rows(rows: list[list[str]]) -> list[list[str]]:
    rows = [row for row in rows if any(cell for cell in row)]
    if not rows:
        return []
    width = max(max((i + 1 for i, cell in enumerate(row) if cell), default=0) for row in rows)
    return [row[:width] for row in rows]


def _table_blocks(rows: list[list[str]]) -> list[str]:
    """A table as blocks of TABLE_BLOCK_ROWS rows, each repeating the header row, so a chunk of
    a long table still says what its columns are."""
    rows = _trim_rows(rows)
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    if not body:
        return [markdown_table([header])]
    return [markdown_table([header] + body[i:i + TABLE_BLOCK_ROWS]) for i in range(0, len(body), TABLE_BLOCK_ROWS)]


def _csv(body: bytes, fallback_title: str) -> Extracted:
    text = decode_text(body)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = [[" ".join(cell.split()).replace("|", "\\|") for cell in row]
                for row in csv.reader(io.StringIO(text), dialect)]
    except csv.Error as exc:
        raise DocumentCorrupt(f"The CSV file cannot be read: {exc}") from exc
    builder = _Builder()
    for table in _table_blocks(rows):
        builder.add(table)
    return builder.result(fallback_title)


# --- OpenDocument -------------------------------------------------------------------------------
def _odf_content(body: bytes):
    with _zip(body) as archive:
        if "META-INF/manifest.xml" in archive.namelist():
            manifest = archive.read("META-INF/manifest.xml")
            if b"encryption-data" in manifest:
                raise DocumentEncrypted("The OpenDocument file is encrypted.")
        try:
            return SafeXML.fromstring(archive.read("content.xml"))
        except KeyError as exc:
            raise DocumentCorrupt("The OpenDocument file has no content.xml.") from exc
        except SafeXML.ParseError as exc:
            raise DocumentCorrupt(f"The OpenDocument content is not valid XML: {exc}") from exc


def _odf_text(element) -> str:
    """An element's text with `text:s`, `text:tab` and `text:line-break` as spaces."""
    parts = [element.text or ""]
    for child in element:
        tag = child.tag.rsplit("}", 1)[-1]
        if tag in ("s", "tab", "line-break"):
            parts.append(" ")
        elif tag not in ("note", "annotation"):
            parts.append(_odf_text(child))
        parts.append(child.tail or "")
    return " ".join("".join(parts).split())


def _odt(body: bytes, fallback_title: str) -> Extracted:
    root = _odf_content(body)
    office_text = root.find(".//office:text", ODF_NS)
    if office_text is None:
        raise DocumentCorrupt("The OpenDocument file has no text body.")
    builder = _Builder()
    title = ""
    in_tables = {id(p) for table in office_text.iter(f"{{{ODF_NS['table']}}}table")
                 for p in table.iter(f"{{{ODF_NS['text']}}}p")}
    for element in office_text.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if element.tag == f"{{{ODF_NS['text']}}}h":
            level = element.get(f"{{{ODF_NS['text']}}}outline-level") or "1"
            text = _odf_text(element)
            if text:
                builder.add("#" * min(6, int(level) if level.isdigit() else 1) + " " + text)
                title = title or text
        elif element.tag == f"{{{ODF_NS['text']}}}p" and id(element) not in in_tables:
            text = _odf_text(element)
            if text:
                builder.add(_escape_markdown_line(text))
        elif tag == "table" and element.tag == f"{{{ODF_NS['table']}}}table":
            for table in _table_blocks(_odf_rows(element)):
                builder.add(table)
    return builder.result(title or fallback_title)


def _odf_rows(table) -> list[list[str]]:
    rows = []
    max_repeat = 1000  # repeated empty rows and columns pad sheets to a million cells
    for row in table.iter(f"{{{ODF_NS['table']}}}table-row"):
        cells = []
        for cell in row:
            if cell.tag.rsplit("}", 1)[-1] not in ("table-cell", "covered-table-cell"):
                continue
            text = " ".join(_odf_text(p) for p in cell.iter(f"{{{ODF_NS['text']}}}p")).replace("|", "\\|")
            repeat = int(cell.get(f"{{{ODF_NS['table']}}}number-columns-repeated") or 1)
            cells.extend([text] * min(repeat, max_repeat if text else 1))
        repeat = int(row.get(f"{{{ODF_NS['table']}}}number-rows-repeated") or 1)
        rows.extend([cells] * min(repeat, max_repeat if any(cells) else 1))
    return rows


def _ods(body: bytes, fallback_title: str) -> Extracted:
    root = _odf_content(body)
    sheets = [(table.get(f"{{{ODF_NS['table']}}}name") or f"Sheet {n}", _odf_rows(table))
              for n, table in enumerate(root.iter(f"{{{ODF_NS['table']}}}table"), start=1)]
    return _sheets(sheets, fallback_title)


# --- EPUB -----------------------------------------------------------------------------------------
def _epub(body: bytes, fallback_title: str) -> Extracted:
    with _zip(body) as archive:
        names = set(archive.namelist())
        if "META-INF/encryption.xml" in names:
            raise DocumentEncrypted("The EPUB's content is encrypted (DRM).")
        try:
            container = SafeXML.fromstring(archive.read("META-INF/container.xml"))
            rootfile = next(e.get("full-path") for e in container.iter() if e.tag.endswith("rootfile"))
            package = SafeXML.fromstring(archive.read(rootfile))
        except (KeyError, StopIteration, SafeXML.ParseError) as exc:
            raise DocumentCorrupt(f"The EPUB has no readable package document: {exc}") from exc
        base = dirname(rootfile)
        manifest = {e.get("id"): e.get("href") for e in package.iter() if e.tag.endswith("}item")}
        spine = [e.get("idref") for e in package.iter() if e.tag.endswith("}itemref")]
        title = next((" ".join((e.text or "").split()) for e in package.iter() if e.tag.endswith("}title")), "")
        builder = _Builder()
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
    message = BytesParser(policy=policy.default).parsebytes(body)
    subject = " ".join(str(message.get("subject", "")).split())
    plain = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    builder = _Builder()
    header = [f"{name}: {' '.join(str(message[name]).split())}" for name in ("From", "To", "Date") if message[name]]
    if header:
        builder.add("\n".join(header))
    if plain is not None:
        builder.add(_escape_lines(plain.get_content()))
    elif html is not None:
        builder.add(html_to_markdown(html.get_content().encode("utf-8"), charset="utf-8").content)
    attachments = [part.get_filename() for part in message.iter_attachments() if part.get_filename()]
    if attachments:
        builder.add("Attachments: " + ", ".join(attachments))
    return builder.result(subject or fallback_title)


def _escape_lines(text: str) -> str:
    return "\n".join(_escape_markdown_line(line) for line in text.split("\n"))
