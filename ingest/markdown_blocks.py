"""Read markdown into blocks and the section tree they form, with each heading's anchor. Pure.

`## Title {#id}` (the HTML extractor writes a page's own ids so) gives the anchor `id`; other
headings get a GitHub-style slug. Every scan is linear in the input: plain string operations, never
backtracking patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb.markup import plain_text, split_heading_id


@dataclass
class Block:
    kind: str  # heading | code | para
    start: int  # character offsets into the document
    end: int
    level: int = 0
    heading: str = ""
    heading_id: str = ""


@dataclass
class Section:
    path: tuple[str, ...]
    anchor: str
    blocks: list[Block] = field(default_factory=list)


def slugify_heading(text: str) -> str:
    """GitHub-style anchor: lowercase, tags and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^<>]*>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def parse_atx_heading(line: str) -> tuple[int, str] | None:
    """`## Title ##` -> (2, "Title"); None when the line is not an ATX heading."""
    indent = len(line) - len(line.lstrip(" "))
    if indent > 3:
        return None
    rest = line[indent:]
    level = len(rest) - len(rest.lstrip("#"))
    if not 1 <= level <= 6:
        return None
    rest = rest[level:]
    if rest and rest[0] not in " \t":
        return None
    text = rest.strip(" \t")
    closing = text.rstrip("#")
    if closing != text and (not closing or closing[-1] in " \t"):
        text = closing.rstrip(" \t")
    return level, text


def _fence_open(line: str) -> str:
    """The fence marker (``` or ~~~, three or more) that opens a code block on this line, or ""."""
    indent = len(line) - len(line.lstrip(" "))
    if indent > 3:
        return ""
    rest = line[indent:]
    if not rest or rest[0] not in "`~":
        return ""
    marker = rest[: len(rest) - len(rest.lstrip(rest[0]))]
    if len(marker) < 3 or (rest[0] == "`" and "`" in rest[len(marker) :]):
        return ""
    return marker


def _fence_closes(line: str, marker: str) -> bool:
    indent = len(line) - len(line.lstrip(" "))
    rest = line[indent:].rstrip(" \t")
    return indent <= 3 and len(rest) >= len(marker) and rest == marker[0] * len(rest)


def read_blocks(content: str) -> list[Block]:
    blocks: list[Block] = []
    lines = content.splitlines(keepends=True)
    offset = 0
    i = 0
    para_start = None
    para_end = 0

    def close_para():
        nonlocal para_start
        if para_start is not None:
            blocks.append(Block("para", para_start, para_end))
            para_start = None

    while i < len(lines):
        line = lines[i]
        stripped = line.rstrip("\r\n")
        line_end = offset + len(stripped)
        marker = _fence_open(stripped)
        heading = None if marker else parse_atx_heading(stripped)
        if marker:
            close_para()
            start = offset
            end = line_end
            offset += len(line)
            i += 1
            while i < len(lines):
                inner = lines[i].rstrip("\r\n")
                end = offset + len(inner)
                offset += len(lines[i])
                i += 1
                if _fence_closes(inner, marker):
                    break
            blocks.append(Block("code", start, end))
            continue
        if heading:
            close_para()
            text, identifier = split_heading_id(heading[1])
            blocks.append(
                Block("heading", offset, line_end, heading[0], plain_text(text).strip(), identifier)
            )
        elif stripped.strip():
            if para_start is None:
                para_start = offset + (len(stripped) - len(stripped.lstrip()))
            para_end = line_end
        else:
            close_para()
        offset += len(line)
        i += 1
    close_para()
    return blocks


def read_sections(content: str, blocks: list[Block], web_page: bool = False) -> list[Section]:
    sections = [Section(path=(), anchor="")]
    stack: list[tuple[int, str, str]] = []
    seen: dict[str, int] = {}
    # a web page: a heading it gives no id (an admonition's "Note", a synopsis, a page without
    # ids at all) is cited at the enclosing section that has one, or at the page's top, never at
    # a slug the page lacks (the citation would open somewhere else than it says)
    for block in blocks:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            if web_page and not block.heading_id:
                inherited = next((a for _, _, a in reversed(stack) if a), "")
                stack.append((block.level, block.heading, inherited))
                sections.append(Section(path=tuple(h for _, h, _ in stack), anchor=inherited))
                sections[-1].blocks.append(block)
                continue
            anchor = block.heading_id or slugify_heading(block.heading)
            stack.append((block.level, block.heading, anchor))
            if block.heading_id or not anchor:
                seen.setdefault(anchor, 0)
            elif anchor in seen:
                seen[anchor] += 1
                anchor = f"{anchor}-{seen[anchor]}"
            else:
                seen[anchor] = 0
            sections.append(Section(path=tuple(h for _, h, _ in stack), anchor=anchor))
        sections[-1].blocks.append(block)
    return [s for s in sections if s.blocks]
