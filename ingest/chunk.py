"""Heading-aware markdown chunking and plain-text chunking. Pure: strings in, dataclasses out.

Markdown is read into blocks (headings, paragraphs, fenced code) and a section tree; each
section's blocks are packed up to a token budget. A code fence is never split, unless one fence
alone exceeds the budget: then it is split at line boundaries and its chunks are marked
`partial_code`. Overlap is taken only from the same section. Each chunk's body is an exact slice
of the document (`start_byte`/`end_byte` are UTF-8 offsets, end exclusive); its `text` is the
heading breadcrumb followed by that body, which is what gets embedded and indexed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})([^`]*)$")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|\w+|[^\w\s]")
SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)|[。！？]+")


def estimate_tokens(text: str) -> int:
    """Words, punctuation marks and CJK characters: close to a WordPiece count, never zero."""
    return max(1, len(TOKEN.findall(text)))


@dataclass(frozen=True)
class ChunkSpec:
    position: int
    text: str  # breadcrumb + body: what is embedded and indexed
    body: str  # exactly the document's content between the byte offsets
    heading_path: tuple[str, ...]
    anchor: str
    start_byte: int
    end_byte: int
    token_estimate: int
    partial_code: bool = False


@dataclass(frozen=True)
class ChunkOptions:
    max_tokens: int = 400
    overlap_tokens: int = 30


@dataclass
class _Block:
    kind: str  # heading | code | para
    start: int  # character offsets into the document
    end: int
    level: int = 0
    heading: str = ""


@dataclass
class _Section:
    path: tuple[str, ...]
    anchor: str
    blocks: list[_Block] = field(default_factory=list)


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    tokens: int
    partial_code: bool = False


def slugify_heading(text: str) -> str:
    """GitHub-style anchor: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def chunk_markdown(content: str, title: str = "", options: ChunkOptions = ChunkOptions()) -> list[ChunkSpec]:
    sections = _sections(content, _blocks(content))
    pieces: list[tuple[_Section, list[_Unit]]] = []
    for section in sections:
        units: list[_Unit] = []
        for block in section.blocks:
            units.extend(_split_block(content, block, options.max_tokens))
        for group in _pack(units, options):
            pieces.append((section, group))
    return _finish(content, title, pieces)


def chunk_text(content: str, title: str = "", options: ChunkOptions = ChunkOptions()) -> list[ChunkSpec]:
    """Plain text: paragraphs, then sentences, then a hard cut; overlap between chunks."""
    units: list[_Unit] = []
    for match in re.finditer(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", content, re.S):
        block = _Block("para", match.start(), match.end())
        units.extend(_split_block(content, block, options.max_tokens))
    section = _Section(path=(), anchor="")
    return _finish(content, title, [(section, group) for group in _pack(units, options)])


def _blocks(content: str) -> list[_Block]:
    blocks: list[_Block] = []
    lines = content.splitlines(keepends=True)
    offset = 0
    i = 0
    para_start = None
    para_end = 0

    def close_para():
        nonlocal para_start
        if para_start is not None:
            blocks.append(_Block("para", para_start, para_end))
            para_start = None

    while i < len(lines):
        line = lines[i]
        stripped = line.rstrip("\r\n")
        line_end = offset + len(stripped)
        fence = FENCE_OPEN.match(stripped)
        heading = ATX_HEADING.match(stripped)
        if fence:
            close_para()
            marker = fence.group(1)
            start = offset
            end = line_end
            offset += len(line)
            i += 1
            while i < len(lines):
                inner = lines[i].rstrip("\r\n")
                end = offset + len(inner)
                offset += len(lines[i])
                i += 1
                if re.match(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", inner):
                    break
            blocks.append(_Block("code", start, end))
            continue
        if heading:
            close_para()
            text = (heading.group(2) or "").strip()
            blocks.append(_Block("heading", offset, line_end, len(heading.group(1)), text))
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


def _sections(content: str, blocks: list[_Block]) -> list[_Section]:
    sections = [_Section(path=(), anchor="")]
    stack: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for block in blocks:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.heading))
            anchor = slugify_heading(block.heading)
            if anchor in seen:
                seen[anchor] += 1
                anchor = f"{anchor}-{seen[anchor]}"
            else:
                seen[anchor] = 0
            sections.append(_Section(path=tuple(h for _, h in stack), anchor=anchor))
        sections[-1].blocks.append(block)
    return [s for s in sections if s.blocks]


def _split_block(content: str, block: _Block, budget: int) -> list[_Unit]:
    text = content[block.start:block.end]
    tokens = estimate_tokens(text)
    if tokens <= budget:
        return [_Unit(block.start, block.end, tokens)]
    if block.kind == "code":
        return _split_lines(content, block, budget)
    units = []
    for start, end in _sentences(content, block.start, block.end):
        piece_tokens = estimate_tokens(content[start:end])
        if piece_tokens <= budget:
            units.append(_Unit(start, end, piece_tokens))
        else:
            units.extend(_hard_cut(content, start, end, budget))
    return units


def _split_lines(content: str, block: _Block, budget: int) -> list[_Unit]:
    """An oversized fence: consecutive lines up to the budget (a single huge line is cut)."""
    units: list[_Unit] = []
    start = block.start
    tokens = 0
    position = block.start
    for line in content[block.start:block.end].splitlines(keepends=True):
        line_tokens = estimate_tokens(line)
        if tokens and tokens + line_tokens > budget:
            units.append(_Unit(start, position - 1 if content[position - 1] == "\n" else position, tokens, True))
            start, tokens = position, 0
        if line_tokens > budget:
            for unit in _hard_cut(content, position, position + len(line.rstrip("\n")), budget):
                units.append(_Unit(unit.start, unit.end, unit.tokens, True))
            start, tokens = position + len(line), 0
        else:
            tokens += line_tokens
        position += len(line)
    if tokens:
        units.append(_Unit(start, block.end, tokens, True))
    return units


def _sentences(content: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    cursor = start
    for match in SENTENCE_END.finditer(content, start, end):
        spans.append((cursor, match.end()))
        cursor = match.end()
        while cursor < end and content[cursor].isspace():
            cursor += 1
    if cursor < end:
        spans.append((cursor, end))
    return [(s, e) for s, e in spans if content[s:e].strip()]


def _hard_cut(content: str, start: int, end: int, budget: int) -> list[_Unit]:
    units = []
    tokens = list(TOKEN.finditer(content, start, end))
    for i in range(0, len(tokens), budget):
        group = tokens[i:i + budget]
        units.append(_Unit(group[0].start(), group[-1].end(), len(group)))
    return units


def _pack(units: list[_Unit], options: ChunkOptions) -> list[list[_Unit]]:
    """Greedy packing up to the budget, starting each next group with a small overlap."""
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    tokens = 0
    for unit in units:
        if current and tokens + unit.tokens > options.max_tokens:
            groups.append(current)
            overlap: list[_Unit] = []
            overlap_tokens = 0
            for previous in reversed(current[1:]):
                if previous.partial_code or overlap_tokens + previous.tokens > options.overlap_tokens:
                    break
                if overlap_tokens + previous.tokens + unit.tokens > options.max_tokens:
                    break
                overlap.insert(0, previous)
                overlap_tokens += previous.tokens
            current, tokens = overlap, overlap_tokens
        current.append(unit)
        tokens += unit.tokens
    if current:
        groups.append(current)
    return groups


def _finish(content: str, title: str, pieces: list[tuple[_Section, list[_Unit]]]) -> list[ChunkSpec]:
    spans = [(group[0].start, group[-1].end) for _, group in pieces]
    byte_at = _byte_offsets(content, sorted({o for span in spans for o in span}))
    chunks = []
    for position, ((section, group), (start, end)) in enumerate(zip(pieces, spans)):
        body = content[start:end]
        crumbs = list(section.path)
        if title and (not crumbs or crumbs[0] != title):
            crumbs.insert(0, title)
        breadcrumb = " > ".join(crumbs)
        text = f"{breadcrumb}\n\n{body}" if breadcrumb else body
        chunks.append(ChunkSpec(
            position=position, text=text, body=body, heading_path=section.path,
            anchor=section.anchor, start_byte=byte_at[start], end_byte=byte_at[end],
            token_estimate=estimate_tokens(text),
            partial_code=any(u.partial_code for u in group),
        ))
    return chunks


def _byte_offsets(content: str, char_offsets: list[int]) -> dict[int, int]:
    """UTF-8 byte offset of each (sorted) character offset, in one pass."""
    result = {}
    byte_total = 0
    previous = 0
    for offset in char_offsets:
        byte_total += len(content[previous:offset].encode("utf-8"))
        result[offset] = byte_total
        previous = offset
    return result
