"""OpenDocument text, sheets, slides and drawings, templates too, to markdown via defusedxml. Pure.

A list is numbered or bulleted as its style's level says (in content.xml or styles.xml), from the
style's `start-value`, continued where the list says so. Notes (`text:note`) are cited `[^N]` and
written after their section (`blocks.Notes`).
"""

from __future__ import annotations

from defusedxml import ElementTree as SafeXML

from ingest.errors import DocumentCorrupt, DocumentEncrypted
from ingest.extract.blocks import (
    MarkdownBuilder,
    Notes,
    escape_markdown_line,
    list_markdown,
    open_zip,
    sheets_markdown,
    table_blocks,
)
from ingest.extract.result import Extracted

ODF_NS = {
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
}
TEXT = f"{{{ODF_NS['text']}}}"
DRAW = f"{{{ODF_NS['draw']}}}"
PRESENTATION = f"{{{ODF_NS['presentation']}}}"


def _odf_content(body: bytes):
    """(content.xml's root, the title the document's properties give, the list styles), from one
    reading of the archive."""
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
        return root, _odf_title(archive), _list_styles([root, _styles_root(archive)])


def _styles_root(archive):
    """styles.xml's root, where a document's named list styles live; None when it is absent or
    unreadable."""
    if "styles.xml" not in archive.namelist():
        return None
    try:
        return SafeXML.fromstring(archive.read("styles.xml"))
    except SafeXML.ParseError:
        return None  # the styles are not the content: a bad styles.xml costs only the numbering


def _list_styles(roots) -> dict[tuple[str, int], int | None]:
    """{(list style, level): the number its items start at, or None for bullets}."""
    styles: dict[tuple[str, int], int | None] = {}
    for root in roots:
        if root is None:
            continue
        for style in root.iter(f"{TEXT}list-style"):
            name = style.get(f"{{{ODF_NS['style']}}}name") or ""
            for level_style in style:
                level = level_style.get(f"{TEXT}level") or "1"
                numbered = level_style.tag == f"{TEXT}list-level-style-number" and (
                    level_style.get(f"{{{ODF_NS['style']}}}num-format") != ""
                )
                start = level_style.get(f"{TEXT}start-value") or "1"
                styles[(name, int(level) if level.isdigit() else 1)] = (
                    int(start) if numbered and start.isdigit() else (1 if numbered else None)
                )
    return styles


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


def _odf_text(element, notes: Notes | None = None) -> str:
    """An element's text with `text:s`, `text:tab` and `text:line-break` as spaces, and `[^N]`
    where it cites a note (given `notes`, which keeps the note's text)."""
    return " ".join(_odf_raw_text(element, notes).split())


def _odf_raw_text(element, notes: Notes | None) -> str:
    """`_odf_text` before its spaces are collapsed: a span holding only a line break still
    parts the words around it."""
    parts = [element.text or ""]
    for child in element:
        tag = child.tag.rsplit("}", 1)[-1]
        if tag in ("s", "tab", "line-break"):
            parts.append(" ")
        elif tag == "note" and notes is not None:
            note_body = child.find(f"{TEXT}note-body")
            if note_body is not None:
                parts.append(
                    notes.cite(
                        " ".join(_odf_text(p) for p in note_body.iter() if p.tag in BODY_TAGS)
                    )
                )
        elif tag not in ("note", "annotation"):
            parts.append(_odf_raw_text(child, notes))
        parts.append(child.tail or "")
    return "".join(parts)


BODY_TAGS = (f"{TEXT}p", f"{TEXT}h")


def read_odt(body: bytes, fallback_title: str) -> Extracted:
    """A text document or its template (.odt, .ott)."""
    root, title, list_styles = _odf_content(body)
    office_text = root.find(".//office:text", ODF_NS)
    if office_text is None:
        raise DocumentCorrupt("The OpenDocument file has no text body.")
    builder = MarkdownBuilder()
    notes = Notes()
    first_heading = _add_blocks(office_text, builder, list_styles, notes)
    notes.flush(builder)
    return builder.result(title or first_heading or fallback_title)


def _add_blocks(
    container, builder: MarkdownBuilder, list_styles, notes: Notes, skip: set[int] | None = None
) -> str:
    """A container's headings, paragraphs, lists and tables, in document order, added to
    `builder`, the elements of `skip` (and what they hold) left out; returns its first heading."""
    done = set(skip or ())
    done |= {id(e) for element in container.iter() if id(element) in done for e in element.iter()}
    done |= {
        id(p)
        for table in container.iter(f"{{{ODF_NS['table']}}}table")
        for p in table.iter(f"{TEXT}p")
    }  # read with their table
    done |= {id(e) for note in container.iter(f"{TEXT}note") for e in note.iter()}  # read as notes
    counters: dict[tuple[str, int], int] = {}
    first_heading = ""
    for element in container.iter():
        if id(element) in done:
            continue
        if element.tag == f"{TEXT}h":
            notes.flush(builder)  # the notes of the section before
            level = element.get(f"{TEXT}outline-level") or "1"
            text = _odf_text(element, notes)
            if text:
                builder.add("#" * min(6, int(level) if level.isdigit() else 1) + " " + text)
                first_heading = first_heading or text
        elif element.tag == f"{TEXT}p":
            text = _odf_text(element, notes)
            if text:
                builder.add(escape_markdown_line(text))
        elif (
            element.tag == f"{TEXT}list" and element.find(f".//{TEXT}h") is None
        ):  # numbered headings stay headings
            items = _list_items(element, list_styles, counters, notes)
            if items:
                builder.add(list_markdown(items))
            done |= {id(e) for e in element.iter()}
        elif element.tag == f"{{{ODF_NS['table']}}}table":
            for table in table_blocks(_odf_rows(element, notes)):
                builder.add(table)
    return first_heading


def _list_items(
    lst, styles, counters: dict[tuple[str, int], int], notes: Notes, level: int = 0, style: str = ""
) -> list[tuple[int, str, str]]:
    """A `text:list`'s items as (level, marker, text) for `blocks.list_markdown`: a nested
    list takes its style from the list around it unless it names its own."""
    style = lst.get(f"{TEXT}style-name") or style
    key = (style, level)
    continues = lst.get(f"{TEXT}continue-numbering") == "true" or lst.get(f"{TEXT}continue-list")
    if not (level == 0 and continues):
        counters.pop(key, None)
    start = styles.get(
        (style, level + 1)
    )  # a list of no known style is bulleted: numbers would be made up
    items = []
    for item in lst:
        first = item.tag == f"{TEXT}list-item"
        for child in item:
            if child.tag == f"{TEXT}list":
                items.extend(_list_items(child, styles, counters, notes, level + 1, style))
                continue
            if child.tag not in BODY_TAGS or not (text := _odf_text(child, notes)):
                continue
            marker = ""
            if first:
                if start is None:
                    marker = "-"
                else:
                    value = item.get(f"{TEXT}start-value")
                    counters[key] = (
                        int(value)
                        if value and value.isdigit()
                        else counters.get(key, start - 1) + 1
                    )
                    marker = f"{counters[key]}."
                first = False
            items.append((level, marker, escape_markdown_line(text)))
    return items


def _odf_rows(table, notes: Notes | None = None) -> list[list[str]]:
    rows = []
    in_notes = {id(e) for note in table.iter(f"{TEXT}note") for e in note.iter()}
    max_repeat = 1000  # repeated empty rows and columns pad sheets to a million cells
    for row in table.iter(f"{{{ODF_NS['table']}}}table-row"):
        cells = []
        for cell in row:
            if cell.tag.rsplit("}", 1)[-1] not in ("table-cell", "covered-table-cell"):
                continue
            text = " ".join(
                _odf_text(p, notes) for p in cell.iter(f"{TEXT}p") if id(p) not in in_notes
            ).replace("|", "\\|")
            repeat = int(cell.get(f"{{{ODF_NS['table']}}}number-columns-repeated") or 1)
            cells.extend([text] * min(repeat, max_repeat if text else 1))
        repeat = int(row.get(f"{{{ODF_NS['table']}}}number-rows-repeated") or 1)
        rows.extend([cells] * min(repeat, max_repeat if any(cells) else 1))
    return rows


def read_ods(body: bytes, fallback_title: str) -> Extracted:
    root, title, _ = _odf_content(body)
    sheets = [
        (table.get(f"{{{ODF_NS['table']}}}name") or f"Sheet {n}", _odf_rows(table))
        for n, table in enumerate(root.iter(f"{{{ODF_NS['table']}}}table"), start=1)
    ]
    return sheets_markdown(sheets, title or fallback_title)


def read_odp(body: bytes, fallback_title: str) -> Extracted:
    """A presentation or a drawing, or their templates (.odp, .otp, .odg, .otg): one section per
    slide (`## Slide N: title {#slide-N}`, as PowerPoint's are) or per drawing page
    (`## Page N`), holding its text frames, shapes, lists and tables in document order, then
    its speaker notes (`Notes: ...`)."""
    root, title, list_styles = _odf_content(body)
    presentation = root.find(".//office:presentation", ODF_NS)
    drawing = presentation if presentation is not None else root.find(".//office:drawing", ODF_NS)
    if drawing is None:
        raise DocumentCorrupt("The OpenDocument file has no presentation or drawing body.")
    builder = MarkdownBuilder()
    notes = Notes()
    for number, page in enumerate(drawing.iter(f"{DRAW}page"), start=1):
        title_frames = [
            frame
            for frame in page.iter(f"{DRAW}frame")
            if frame.get(f"{PRESENTATION}class") == "title"
        ]
        slide_title = next((text for frame in title_frames if (text := _odf_text_of(frame))), "")
        speaker_notes = page.findall(f"{PRESENTATION}notes")
        if presentation is not None:
            builder.page(number)
            heading = f"Slide {number}: {slide_title}" if slide_title else f"Slide {number}"
            builder.add(f"## {heading} {{#slide-{number}}}")
        elif _odf_text_of(page):  # a drawing page of shapes alone is no section
            builder.add(f"## Page {number} {{#page-{number}}}")
        _add_blocks(
            page, builder, list_styles, notes, skip={id(e) for e in title_frames + speaker_notes}
        )
        notes.flush(builder)
        said = " ".join(text for element in speaker_notes if (text := _odf_text_of(element)))
        if said:
            builder.add("Notes: " + said)
        title = title or (slide_title if number == 1 else "")
    return builder.result(title or fallback_title, "slide" if presentation is not None else "")


def _odf_text_of(element) -> str:
    """The text of every paragraph and heading inside `element`, joined by spaces."""
    return " ".join(text for p in element.iter() if p.tag in BODY_TAGS and (text := _odf_text(p)))
