"""Scan markdown links and markup with plain string operations. Pure, and linear in its input.

Regular expressions with nested or adjacent quantifiers backtrack on inputs such as `"[](" * 20000`;
these scanners look at each character a bounded number of times. `strip_links` gives what is
embedded and indexed, so URL fragments never reach BM25 or the model's 256 WordPieces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MAX_URL_CHARS = 2048  # a longer "(...)" after a label is not a link target


@dataclass(frozen=True)
class Link:
    start: int  # offsets of the whole `[label](url)` in the text, end exclusive
    end: int
    label: str
    url: str
    image: bool = False


def markdown_links(text: str) -> list[Link]:
    links: list[Link] = []
    position = 0
    length = len(text)
    while True:
        open_bracket = text.find("[", position)
        if open_bracket < 0:
            return links
        close_bracket = text.find("]", open_bracket + 1)
        if close_bracket < 0:
            return links
        nested = text.find("[", open_bracket + 1, close_bracket)
        if nested >= 0:  # "[a [b](c)": the innermost "[" starts the label
            position = nested
            continue
        if close_bracket + 1 >= length or text[close_bracket + 1] != "(":
            position = close_bracket + 1
            continue
        close_paren = text.find(")", close_bracket + 2, close_bracket + 2 + MAX_URL_CHARS)
        if close_paren < 0:
            position = close_bracket + 1
            continue
        target = text[close_bracket + 2 : close_paren].strip()
        url = target.split(None, 1)[0].strip("<>") if target else ""
        if not url or "\n" in target:
            position = close_bracket + 1
            continue
        image = open_bracket > 0 and text[open_bracket - 1] == "!"
        start = open_bracket - 1 if image else open_bracket
        links.append(
            Link(start, close_paren + 1, text[open_bracket + 1 : close_bracket], url, image)
        )
        position = close_paren + 1


def strip_links(text: str) -> str:
    """Each link becomes its label (an image its alt text); code fences and everything else are
    unchanged."""
    if "```" not in text and "~~~" not in text:
        return _strip_links(text)
    out, prose, fence = [], [], ""
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence:
            out.append(line)
            if stripped.startswith(fence) and not stripped.strip(fence[0]).strip():
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            if prose:
                out.append(_strip_links("\n".join(prose)))
                prose = []
            fence = stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]
            out.append(line)
        else:
            prose.append(line)
    if prose:
        out.append(_strip_links("\n".join(prose)))
    return "\n".join(out)


def _strip_links(text: str) -> str:
    links = markdown_links(text)
    if not links:
        return text
    out: list[str] = []
    cursor = 0
    for link in links:
        out.append(text[cursor : link.start])
        out.append(link.label)
        cursor = link.end
    out.append(text[cursor:])
    return "".join(out)


FENCE, CODE, TEXT = "fence", "code", "text"


def fenced(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Each line with what it is: a fence's opening or closing line (``` or ~~~), a line inside a
    fence, or text."""
    fence = ""
    for line in lines:
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
                yield line, FENCE
            else:
                yield line, CODE
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            yield line, FENCE
        else:
            yield line, TEXT


def plain_text(text: str) -> str:
    """Markdown to readable text, line by line: fences and tables' delimiter rows dropped, `#`
    markers, quote markers, emphasis, inline code ticks and link syntax removed, heading ids
    (`{#id}`) dropped, a table row's cells joined by " · " and closed by ";". Code, fenced or
    inline, keeps every character (`f(*args, **kwargs)`)."""
    lines = []
    for line, kind in fenced(strip_links(text).splitlines()):
        stripped = line.strip()
        if kind == CODE:
            lines.append(stripped)
        if kind != TEXT or _table_delimiter(stripped):
            continue
        if len(stripped) > 1 and stripped[0] == stripped[-1] == "|" and stripped[-2] != "\\":
            stripped = " · ".join(cell for cell in _cells(stripped[1:-1]) if cell) + ";"
        elif stripped.startswith("#"):
            stripped = strip_heading_id(stripped.lstrip("#").strip())
        elif stripped.startswith(">"):
            stripped = stripped.lstrip("> ")
        lines.append(_plain_inline(stripped))
    return "\n".join(lines)


def _plain_inline(line: str) -> str:
    """A line without its emphasis marks and code ticks; what is between ticks stays as written."""
    parts = line.split("`")
    return "".join(
        part if index % 2 else _without_emphasis(part.replace("**", ""))
        for index, part in enumerate(parts)
    )


def _without_emphasis(text: str) -> str:
    """`*word*` -> `word`: an asterisk that opens (before a non-space, after no letter or digit)
    or closes (after a non-space, before no letter or digit) emphasis goes; `a * b` and `2*3` stay,
    and an escaped one (`f(\\*args)`) is a plain asterisk."""
    out = []
    for i, char in enumerate(text):
        if char == "\\" and text[i + 1 : i + 2] == "*":
            continue
        if char == "*":
            if i and text[i - 1] == "\\":
                out.append(char)
                continue
            before = text[i - 1] if i else " "
            after = text[i + 1] if i + 1 < len(text) else " "
            if (not after.isspace() and not before.isalnum()) or (
                not before.isspace() and not after.isalnum()
            ):
                continue
        out.append(char)
    return "".join(out)


def _cells(row: str) -> list[str]:
    """A table row's cells between its outer pipes, split at pipes the row does not escape
    (`\\|` is a pipe inside a cell, as the extractors write one)."""
    cells, cell, i = [], [], 0
    while i < len(row):
        if row[i] == "\\" and i + 1 < len(row) and row[i + 1] == "|":
            cell.append("|")
            i += 2
            continue
        if row[i] == "|":
            cells.append("".join(cell).strip())
            cell = []
        else:
            cell.append(row[i])
        i += 1
    cells.append("".join(cell).strip())
    return cells


def _table_delimiter(line: str) -> bool:
    """`|---|:---:|`: the row under a table's header, nothing to read."""
    return "|" in line and "-" in line and not line.strip("|:- \t")


def split_heading_id(heading: str) -> tuple[str, str]:
    """`Title {#some-id}` -> ("Title", "some-id"); a heading without one -> (heading, "")."""
    heading = heading.rstrip()
    if not heading.endswith("}"):
        return heading, ""
    open_brace = heading.rfind("{#")
    if open_brace < 0 or (open_brace > 0 and heading[open_brace - 1] not in " \t"):
        return heading, ""
    identifier = heading[open_brace + 2 : -1]
    if not identifier or any(c.isspace() or c in "{}" for c in identifier):
        return heading, ""
    return heading[:open_brace].rstrip(), identifier


def strip_heading_id(heading: str) -> str:
    return split_heading_id(heading)[0]


def passage_anchor(chunk_id: int) -> str:
    """The document view's anchor of one passage (chunk): what a citation of it targets."""
    return f"passage-{chunk_id}"
