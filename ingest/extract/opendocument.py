"""OpenDocument text and spreadsheets (ODT, ODS) to markdown, reading their XML with defusedxml:
headings by outline level, sheets as tables. Pure: bytes in, `Extracted` out."""

from __future__ import annotations

from defusedxml import ElementTree as SafeXML

from ingest.errors import DocumentCorrupt, DocumentEncrypted
from ingest.extract.blocks import MarkdownBuilder, escape_markdown_line, open_zip, sheets_markdown, table_blocks
from ingest.extract.result import Extracted

ODF_NS = {
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
}


def _odf_content(body: bytes):
    """(content.xml's root, the title the document's properties give), from one reading of the archive."""
    with open_zip(body) as archive:
        if "META-INF/manifest.xml" in archive.namelist():
            manifest = archive.read("META-INF/manifest.xml")
            if b"encryption-data" in manifest:
                raise DocumentEncrypted("The OpenDocument file is encrypted.")
        try:
            root = SafeXML.fromstring(archive.read("content.xml"))
        except KeyError as exc:
            raise DocumentCorrupt("The OpenDocument file has no content.xml.") from exc
        except SafeXML.ParseError as exc:
            raise DocumentCorrupt(f"The OpenDocument content is not valid XML: {exc}") from exc
        return root, _odf_title(archive)


def _odf_title(archive) -> str:
    """The title the document's properties give (meta.xml's dc:title), as Word's core properties
    do for .docx; "" when it has none."""
    if "meta.xml" not in archive.namelist():
        return ""
    try:
        meta = SafeXML.fromstring(archive.read("meta.xml"))
    except SafeXML.ParseError:
        return ""  # the properties are not the content: a bad meta.xml costs only the title
    found = meta.find(".//{http://purl.org/dc/elements/1.1/}title")
    return " ".join((found.text or "").split()) if found is not None else ""


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


def read_odt(body: bytes, fallback_title: str) -> Extracted:
    root, title = _odf_content(body)
    office_text = root.find(".//office:text", ODF_NS)
    if office_text is None:
        raise DocumentCorrupt("The OpenDocument file has no text body.")
    builder = MarkdownBuilder()
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
                builder.add(escape_markdown_line(text))
        elif tag == "table" and element.tag == f"{{{ODF_NS['table']}}}table":
            for table in table_blocks(_odf_rows(element)):
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


def read_ods(body: bytes, fallback_title: str) -> Extracted:
    root, title = _odf_content(body)
    sheets = [(table.get(f"{{{ODF_NS['table']}}}name") or f"Sheet {n}", _odf_rows(table))
              for n, table in enumerate(root.iter(f"{{{ODF_NS['table']}}}table"), start=1)]
    return sheets_markdown(sheets, title or fallback_title)
