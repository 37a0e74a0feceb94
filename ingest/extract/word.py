"""Word (.docx) to markdown with python-docx. Pure: bytes in, `Extracted` out.

List numbers run on through the document as Word counts them; a level whose marker is blank (as
pandoc writes an item's later paragraphs) continues the item. A note that no paragraph cites (one
cited in a table) ends the document.
"""

from __future__ import annotations

import io
import zipfile

from defusedxml import ElementTree as SafeXML

from ingest.errors import DocumentCorrupt
from ingest.extract.blocks import (
    MarkdownBuilder,
    Notes,
    escape_markdown_line,
    list_markdown,
    table_blocks,
)
from ingest.extract.result import Extracted

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
NOTE_PARTS = {
    "footnotes": "footnote",
    "endnotes": "endnote",
}  # relationship type's end -> note kind
NOT_NOTES = ("separator", "continuationSeparator", "continuationNotice")
STYLE_DEPTH = 10  # styles based on styles: a loop in a crafted file ends here


def read_docx(body: bytes, fallback_title: str) -> Extracted:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(body))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DocumentCorrupt(f"The Word file cannot be read: {exc}") from exc
    builder = MarkdownBuilder()
    title = (document.core_properties.title or "").strip()
    formats = _numbering_formats(document)
    note_texts = _note_texts(document)
    notes, cited = Notes(), set()
    counters: dict[tuple[str, int], int] = {}
    items: list[tuple[int, str, str]] = []

    def end_list() -> None:
        if items:
            builder.add(list_markdown(items))
            items.clear()

    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            level = _heading_level(block.style.name if block.style is not None else "")
            if level:  # a section ends: its list and its notes
                end_list()
                notes.flush(builder)
            text = _paragraph_text(block._p, note_texts, notes, cited)
            if not text:
                continue
            item = _list_item(block, formats, counters)
            if level:
                builder.add("#" * level + " " + text)
                title = title or (text if level == 1 else "")
            elif item is not None:
                items.append((item[0], item[1], escape_markdown_line(text)))
            else:
                end_list()
                builder.add(escape_markdown_line(text))
        elif isinstance(block, Table):
            end_list()
            for table in table_blocks(_rows(block)):
                builder.add(table)
    end_list()
    for key, text in note_texts.items():
        if key not in cited:
            notes.cite(text)
    notes.flush(builder)
    return builder.result(title or fallback_title)


def _paragraph_text(p, note_texts: dict[tuple[str, str], str], notes: Notes, cited: set) -> str:
    """The paragraph's text as python-docx reads it (runs and hyperlinks), with `[^N]` where a
    run cites a footnote or an endnote."""
    parts = []
    for element in p.xpath("w:r | w:hyperlink/w:r"):
        parts.append(element.text)
        for ref in element.xpath("w:footnoteReference | w:endnoteReference"):
            key = (
                "footnote" if ref.tag == f"{W}footnoteReference" else "endnote",
                ref.get(f"{W}id"),
            )
            if key in note_texts and key not in cited:
                cited.add(key)
                parts.append(notes.cite(note_texts[key]))
    return " ".join("".join(parts).split())


def _note_texts(document) -> dict[tuple[str, str], str]:
    """{(kind, id): text} of the document's footnotes and endnotes, without Word's separators."""
    texts = {}
    for rel in document.part.rels.values():
        kind = NOTE_PARTS.get(rel.reltype.rsplit("/", 1)[-1])
        if kind is None or rel.is_external:
            continue
        try:
            root = SafeXML.fromstring(rel.target_part.blob)
        except SafeXML.ParseError:
            continue  # a broken notes part costs its notes, not the document
        for note in root.findall(f"{W}{kind}"):
            if note.get(f"{W}type") in NOT_NOTES:
                continue
            paragraphs = [
                "".join(
                    (e.text or "") if e.tag == f"{W}t" else " "
                    for e in p.iter()
                    if e.tag in (f"{W}t", f"{W}tab")
                )
                for p in note.iter(f"{W}p")
            ]
            text = " ".join(" ".join(paragraphs).split())
            if text:
                texts[(kind, note.get(f"{W}id") or "")] = text
    return texts


def _numbering_formats(document) -> dict[tuple[str, int], tuple[str, int, str]]:
    """{(numId, level): (number format, start, level text)} from the numbering part."""
    try:
        root = document.part.numbering_part.element
    except (KeyError, NotImplementedError):
        return {}
    levels: dict[str, dict[int, tuple[str, int, str]]] = {}
    for abstract in root.findall(f"{W}abstractNum"):
        found = levels.setdefault(abstract.get(f"{W}abstractNumId") or "", {})
        for lvl in abstract.findall(f"{W}lvl"):
            found[_int(lvl.get(f"{W}ilvl"), 0)] = (
                _val(lvl, "numFmt") or "decimal",
                _int(_val(lvl, "start"), 1),
                _val(lvl, "lvlText"),
            )
    formats = {}
    for num in root.findall(f"{W}num"):
        num_id = num.get(f"{W}numId") or ""
        for level, (fmt, start, text) in levels.get(_val(num, "abstractNumId"), {}).items():
            formats[(num_id, level)] = (fmt, start, text)
        for override in num.findall(f"{W}lvlOverride"):
            level = _int(override.get(f"{W}ilvl"), 0)
            start = _val(override, "startOverride")
            if start and (num_id, level) in formats:
                fmt, _, text = formats[(num_id, level)]
                formats[(num_id, level)] = (fmt, _int(start, 1), text)
    return formats


def _val(element, child: str) -> str:
    found = element.find(f"{W}{child}")
    return (found.get(f"{W}val") or "") if found is not None else ""


def _int(value: str | None, default: int) -> int:
    return int(value) if value and value.lstrip("-").isdigit() else default


def _list_item(paragraph, formats, counters: dict[tuple[str, int], int]) -> tuple[int, str] | None:
    """(level, marker) when the paragraph is a list item: `N.`, `-`, or "" for a further
    paragraph."""
    num_id, level = _numbering(paragraph)
    style = (paragraph.style.name if paragraph.style is not None else "").lower()
    if num_id is None:
        if not style.startswith("list") or style == "list paragraph":
            return None
        num_id = "style:" + style  # a list style without numbering: numbered as its name says
        formats = {(num_id, level): ("decimal" if "number" in style else "bullet", 1, "")}
    if num_id == "0":  # numbering taken off the paragraph
        return None
    fmt, start, text = formats.get((num_id, level), ("decimal", 1, ""))
    if fmt == "none" or (fmt == "bullet" and formats.get((num_id, level)) and not text.strip()):
        return level, ""
    for key in [key for key in counters if key[0] == num_id and key[1] > level]:
        del counters[key]  # a deeper level starts again under each item
    if fmt == "bullet":
        return level, "-"
    counters[(num_id, level)] = counters.get((num_id, level), start - 1) + 1
    return level, f"{counters[(num_id, level)]}."


def _numbering(paragraph) -> tuple[str | None, int]:
    """(numId, level) the paragraph's own properties give, else those of its style and the
    styles that style is based on."""
    properties = [paragraph._p.pPr]
    style = paragraph.style
    for _ in range(STYLE_DEPTH):
        if style is None:
            break
        properties.append(style.element.pPr)
        style = style.base_style
    num_id = level = None
    for pPr in properties:
        numPr = pPr.numPr if pPr is not None else None
        if numPr is None:
            continue
        if num_id is None and numPr.numId is not None:
            num_id = str(numPr.numId.val)
        if level is None and numPr.ilvl is not None:
            level = int(numPr.ilvl.val)
    return num_id, level or 0


def _rows(table) -> list[list[str]]:
    """The table's cell texts, a merged cell's text once: python-docx repeats a merged cell in
    every grid column (and row) it spans, as the same underlying `<w:tc>`.

    The set holds the `<w:tc>` elements themselves, not their `id()`: lxml hands out the same
    proxy for an element only while one is alive, so a dropped proxy's `id()` is reused by
    another cell's and distinct cells would look like repeats."""
    seen: set = set()
    rows = []
    for row in table.rows:
        cells = []
        for cell in row.cells:
            tc = cell._tc
            cells.append("" if tc in seen else " ".join(cell.text.split()).replace("|", "\\|"))
            seen.add(tc)
        rows.append(cells)
    return rows


def _heading_level(style: str) -> int:
    name = style.lower()
    if name == "title":
        return 1
    if name.startswith("heading "):
        digits = name[len("heading ") :]
        if digits.isdigit():
            return min(6, int(digits))
    return 0
