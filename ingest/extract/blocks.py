"""Markdown built block by block from a document's parts, and the tables and escapes every
document reader shares. Pure."""

from __future__ import annotations

import io
import zipfile

from ingest.errors import DocumentCorrupt, EmptyContent
from ingest.extract.html_tables import markdown_table
from ingest.extract.result import Extracted
from ingest.extract.text import normalise_text

TABLE_BLOCK_ROWS = 40  # rows per table block; each block repeats the header row


class MarkdownBuilder:
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
        return Extracted(
            title=title,
            content=content,
            media_type="text/markdown",
            pages=tuple(self.pages) if unit else (),
            page_unit=unit,
        )


def open_zip(body: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(body))
    except zipfile.BadZipFile as exc:
        raise DocumentCorrupt(f"The file is not a readable zip container: {exc}") from exc


def escape_markdown_line(line: str) -> str:
    """Text from a PDF or a sheet is not markdown: a leading `#` or fence must not become one."""
    stripped = line.lstrip()
    if stripped.startswith(("#", "```", "~~~")):
        return "\\" + stripped
    return line


def sheets_markdown(sheets: list[tuple[str, list[list[str]]]], title: str) -> Extracted:
    builder = MarkdownBuilder()
    for number, (name, rows) in enumerate(sheets, start=1):
        rows = trim_rows(rows)
        if not rows:
            continue
        builder.page(number)
        builder.add(f"## {name} {{#sheet-{number}}}")
        for table in table_blocks(rows):
            builder.add(table)
    return builder.result(title, "sheet")


def trim_rows(rows: list[list[str]]) -> list[list[str]]:
    rows = [row for row in rows if any(cell for cell in row)]
    if not rows:
        return []
    width = max(max((i + 1 for i, cell in enumerate(row) if cell), default=0) for row in rows)
    return [row[:width] for row in rows]


def table_blocks(rows: list[list[str]]) -> list[str]:
    """A table as blocks of TABLE_BLOCK_ROWS rows, each repeating the header row, so a chunk of
    a long table still says what its columns are."""
    rows = trim_rows(rows)
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    if not body:
        return [markdown_table([header])]
    return [
        markdown_table([header] + body[i : i + TABLE_BLOCK_ROWS])
        for i in range(0, len(body), TABLE_BLOCK_ROWS)
    ]


def list_markdown(items: list[tuple[int, str, str]]) -> str:
    """List items (level, marker, text) as one markdown list. The marker is `-` or `N.`; a
    nested item is indented under its parent's text (two spaces under `- `, three under `1. `,
    as CommonMark nests them); an empty marker is a further paragraph of the item before it."""
    lines: list[str] = []
    open_items: list[tuple[int, int]] = []  # (level, column of the item's text), outermost first
    after_paragraph = False
    for level, marker, text in items:
        while open_items and (open_items[-1][0] > level or (marker and open_items[-1][0] == level)):
            open_items.pop()
        column = open_items[-1][1] if open_items else 0
        if not marker:
            lines.extend(["", " " * column + text])
            after_paragraph = True
            continue
        if after_paragraph:
            lines.append("")  # after an item's further paragraph, the next item starts clear of it
            after_paragraph = False
        lines.append(" " * column + f"{marker} {text}")
        open_items.append((level, column + len(marker) + 1))
    return "\n".join(lines)


class Notes:
    """Footnotes and endnotes as markdown notes: `[^N]` where the text cites one, and
    `[^N]: text` after the section that cites it (`flush` at its end), numbered in the order
    they are cited, so each label is unique in the document."""

    def __init__(self):
        self.count = 0
        self.pending: list[str] = []

    def cite(self, text: str) -> str:
        text = " ".join(text.split())
        if not text:
            return ""
        self.count += 1
        self.pending.append(f"[^{self.count}]: {text}")
        return f"[^{self.count}]"

    def flush(self, builder: MarkdownBuilder) -> None:
        for note in self.pending:
            builder.add(note)
        self.pending = []
