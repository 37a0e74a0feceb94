"""Tables: a data table told apart from a layout table, its cells laid on a grid as a browser lays
them out, and written as markdown tables cut between rows, each repeating the header. Pure.
"""

from __future__ import annotations

from bs4 import Tag

MAX_SPAN = 50  # a colspan or rowspan beyond this is a typo or an attack, not a layout


def _span(cell: Tag, name: str) -> int:
    value = str(cell.get(name) or "1").strip()
    return max(1, min(MAX_SPAN, int(value))) if value.isdigit() else 1


def spanned_grid(rows: list[list[tuple[str, Tag]]]) -> list[list[str]]:
    """The table's cell texts on a grid, as a browser lays them out: a cell spanning columns takes
    them all (its text in the first, the rest empty), so the header cells after it stay above their
    columns; a cell spanning rows is repeated in the rows below, where its text belongs."""
    grid: list[list[str]] = []
    below: dict[int, tuple[str, int]] = {}  # column -> (text, rows still spanned)
    for row in rows:
        out: list[str] = []
        spanned_to = max(below) + 1 if below else 0  # columns cells from the rows above reach
        index = 0
        while index < len(row) or len(out) < spanned_to:
            column = len(out)
            if column in below:
                text, left = below.pop(column)
                out.append(text)
                if left > 1:
                    below[column] = (text, left - 1)
                continue
            if index == len(row):
                out.append("")
                continue
            text, cell = row[index]
            index += 1
            width, height = _span(cell, "colspan"), _span(cell, "rowspan")
            for offset in range(width):
                if height > 1:
                    below[column + offset] = (text, height - 1)
                out.append(text if offset == 0 else "")
        grid.append(out)
    return grid


def own_rows(table: Tag) -> list[list[Tag]]:
    rows = []
    for part in [table, *table.find_all(["thead", "tbody", "tfoot"], recursive=False)]:
        for tr in part.find_all("tr", recursive=False):
            cells = tr.find_all(["th", "td"], recursive=False)
            if cells:
                rows.append(cells)
    return rows


LAYOUT_MARKS = ["h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "ul", "ol", "dl", "blockquote"]


def is_layout_table(rows: list[list[Tag]]) -> bool:
    if not rows:
        return True
    if max(len(row) for row in rows) == 1:
        return True
    return any(cell.find(LAYOUT_MARKS) is not None for row in rows for cell in row)


TABLE_BLOCK_TOKENS = 250  # a table block stays well inside one chunk; each repeats the header


def table_blocks_by_size(rows: list[list[str]]) -> list[str]:
    """A table as markdown tables of about TABLE_BLOCK_TOKENS each, cut between rows, each
    repeating the header row, so a chunk of a long table still says what its columns are."""
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    if not body:
        return [markdown_table([header])]
    header_size = _size(header)
    blocks, current, size = [], [], header_size
    for row in body:
        row_size = _size(row)
        if current and size + row_size > TABLE_BLOCK_TOKENS:
            blocks.append(markdown_table([header] + current))
            current, size = [], header_size
        current.append(row)
        size += row_size
    blocks.append(markdown_table([header] + current))
    return blocks


def _size(row: list[str]) -> int:
    return sum(len(cell.split()) + 2 for cell in row)


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a markdown table, the first row as its header."""
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)
