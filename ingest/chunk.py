"""Heading-aware markdown chunking and plain-text chunking. Pure: strings in, dataclasses out.

Markdown is read into blocks and a section tree (`ingest/markdown_blocks.py`); each section's
blocks are packed up to a token budget. A code fence is never split, unless one fence alone
exceeds the budget: then it is split at line boundaries and its chunks are marked
`partial_code`. Overlap is taken only from the same section. Each chunk's body is an exact slice
of the document (`start_byte`/`end_byte` are UTF-8 offsets, end exclusive); its `text` is the
heading breadcrumb followed by that body with links reduced to their text, which is what gets
embedded and indexed. Breadcrumbs are plain text. Documents with pages (PDF pages, slides,
sheets) give each chunk the range of pages its body spans.

Every scan here is linear in the input: sentence ends are found with plain string operations,
never with backtracking patterns.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from ingest.markdown_blocks import Block, Section, read_blocks, read_sections
from kb.languages import CJK_CHARS
from kb.markup import strip_links

# Han, kana and Hangul characters (each about a token), then words of other letters and digits: a word
# stops where such a character starts, so "Windows版のインストール" is a word and eight characters
TOKEN = re.compile(rf"[{CJK_CHARS}]|[^\W{CJK_CHARS}]+|[^\w\s]")
SENTENCE_MARKS = ".!?"
CJK_SENTENCE_MARKS = "。！？"
CLOSERS = "\"')]"


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
    page_start: int | None = None  # pages, slides or sheets the body spans (documents only)
    page_end: int | None = None


@dataclass(frozen=True)
class ChunkOptions:
    max_tokens: int = 400
    overlap_tokens: int = 30
    min_section_tokens: int = 4  # smaller sections join the passage before them


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    tokens: int
    partial_code: bool = False


def chunk_markdown(
    content: str,
    title: str = "",
    options: ChunkOptions = ChunkOptions(),
    pages: tuple[tuple[int, int], ...] = (),
    web_page: bool = False,
) -> list[ChunkSpec]:
    """`web_page`: the content is a web page's, whose level-1 heading without an id is the page
    itself, so its section gets no anchor (the citation opens the page) instead of a slug; on a
    page whose headings carry ids, one without is cited at its enclosing section's anchor."""
    sections = read_sections(content, read_blocks(content), web_page)
    pieces: list[tuple[Section, list[_Unit]]] = []
    for section in sections:
        units: list[_Unit] = []
        for index, block in enumerate(section.blocks):
            budget = options.max_tokens
            if (
                index == 1 and section.blocks[0].kind == "heading"
            ):  # a heading and the start of what it
                budget = max(
                    budget - units[0].tokens, budget // 2
                )  # heads fit one chunk: never a bare heading
            units.extend(_split_block(content, block, budget))
        if (
            pieces
            and _tiny(section, units, options)
            and sum(u.tokens for u in pieces[-1][1]) + sum(u.tokens for u in units)
            <= options.max_tokens
        ):
            pieces[-1] = (
                pieces[-1][0],
                pieces[-1][1] + units,
            )  # a heading with (almost) nothing under it
            continue
        for group in _pack(units, options):
            pieces.append((section, group))
    pieces = _open_onto_subsections(
        _merge_bare_headings(pieces, options.max_tokens), options.max_tokens
    )
    return _finish(content, title, pieces, pages)


def _merge_bare_headings(
    pieces: list[tuple[Section, list[_Unit]]], max_tokens: int
) -> list[tuple[Section, list[_Unit]]]:
    """A section that is only its heading ("1. Introduction" straight before "1.1 Scope") is no
    passage to return: its heading opens the next chunk (the last one's, at the end). A heading
    with an id of its own (a slide, a cited anchor) is left to `_open_onto_subsections`, and
    headings that wait for more than a chunk's tokens become a chunk of their own, so no chunk
    outgrows the limit."""
    merged: list[tuple[Section, list[_Unit]]] = []
    waiting: list[_Unit] = []
    waiting_section = None
    for section, group in pieces:
        tokens = sum(u.tokens for u in waiting) + sum(u.tokens for u in group)
        if waiting and tokens > max_tokens:
            merged.append((waiting_section, waiting))
            waiting = []
        if _bare_heading(section):
            waiting_section = waiting_section if waiting else section
            waiting.extend(group)
            continue
        merged.append((section, waiting + group))
        waiting = []
    if waiting:
        if merged and sum(u.tokens for u in merged[-1][1] + waiting) <= max_tokens:
            section, group = merged[-1]
            merged[-1] = (section, group + waiting)
        else:
            merged.append((waiting_section, waiting))
    return merged


def _open_onto_subsections(
    pieces: list[tuple[Section, list[_Unit]]], max_tokens: int
) -> list[tuple[Section, list[_Unit]]]:
    """A heading with an id and no text of its own, straight before its first subsection
    (DocBook's "Usage", Javadoc's "Method Detail", a release's version heading), is no passage
    to return either: it opens the chunk of that subsection, which keeps the subsection's anchor
    and path, the most specific (the document view still carries the heading's id, and a section
    is read by its id from the document's headings, `retrieval.documents.section_text`). Headings
    that wait in a row chain, each under the one before; one followed by a sibling keeps its chunk."""
    merged: list[tuple[Section, list[_Unit]]] = []
    opening = False  # whether merged[-1] is still anchored headings only
    for section, group in pieces:
        if (
            opening
            and _under(section, merged[-1][0])
            and sum(u.tokens for u in merged[-1][1]) + sum(u.tokens for u in group) <= max_tokens
        ):
            merged[-1] = (section, merged[-1][1] + group)
            opening = _anchored_heading_alone(section)
            continue
        merged.append((section, group))
        opening = _anchored_heading_alone(section)
    return merged


def _heading_alone(section: Section) -> bool:
    return len(section.blocks) == 1 and section.blocks[0].kind == "heading"


def _anchored_heading_alone(section: Section) -> bool:
    return _heading_alone(section) and bool(section.blocks[0].heading_id)


def _under(section: Section, parent: Section) -> bool:
    return len(section.path) > len(parent.path) and section.path[: len(parent.path)] == parent.path


def _bare_heading(section: Section) -> bool:
    return _heading_alone(section) and not section.blocks[0].heading_id


def _tiny(section: Section, units: list[_Unit], options: ChunkOptions) -> bool:
    """A section too small to be a passage of its own, fewer tokens than `min_section_tokens`
    under its heading: it joins the passage before it (100 KB of `# a\n\nb` is not 20,000 chunks).
    A heading with an id of its own (`{#slide-7}`, an HTML id) keeps its section: it is cited."""
    if any(block.kind == "heading" and block.heading_id for block in section.blocks):
        return False
    if _bare_heading(section):
        return False  # a bare heading opens the next passage instead (`_merge_bare_headings`)
    return sum(u.tokens for u in units) < options.min_section_tokens


def chunk_text(
    content: str,
    title: str = "",
    options: ChunkOptions = ChunkOptions(),
    pages: tuple[tuple[int, int], ...] = (),
) -> list[ChunkSpec]:
    """Plain text: paragraphs, then sentences, then a hard cut; overlap between chunks."""
    units: list[_Unit] = []
    for start, end in _paragraphs(content):
        units.extend(_split_block(content, Block("para", start, end), options.max_tokens))
    section = Section(path=(), anchor="")
    return _finish(content, title, [(section, group) for group in _pack(units, options)], pages)


def _paragraphs(content: str) -> list[tuple[int, int]]:
    """Spans of text separated by blank lines, trimmed of surrounding white space."""
    spans = []
    start = None
    offset = 0
    for line in content.splitlines(keepends=True):
        if line.strip():
            if start is None:
                start = offset + (len(line) - len(line.lstrip()))
            end = offset + len(line.rstrip())
        elif start is not None:
            spans.append((start, end))
            start = None
        offset += len(line)
    if start is not None:
        spans.append((start, end))
    return spans


def _split_block(content: str, block: Block, budget: int) -> list[_Unit]:
    text = content[block.start : block.end]
    tokens = estimate_tokens(text)
    if tokens <= budget:
        return [_Unit(block.start, block.end, tokens)]
    if block.kind == "code":
        return _split_lines(content, block, budget)
    if text.startswith("|"):  # a table: cut between rows, never inside one
        return [_Unit(u.start, u.end, u.tokens) for u in _split_lines(content, block, budget)]
    units = []
    for start, end in _sentences(content, block.start, block.end):
        piece_tokens = estimate_tokens(content[start:end])
        if piece_tokens <= budget:
            units.append(_Unit(start, end, piece_tokens))
        else:
            units.extend(_hard_cut(content, start, end, budget))
    return units


def _split_lines(content: str, block: Block, budget: int) -> list[_Unit]:
    """An oversized fence: consecutive lines up to the budget (a single huge line is cut)."""
    units: list[_Unit] = []
    start = block.start
    tokens = 0
    position = block.start
    for line in content[block.start : block.end].splitlines(keepends=True):
        line_tokens = estimate_tokens(line)
        if tokens and tokens + line_tokens > budget:
            units.append(
                _Unit(
                    start, position - 1 if content[position - 1] == "\n" else position, tokens, True
                )
            )
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


def _sentence_ends(content: str, start: int, end: int):
    """Offsets just past each sentence end: a run of .!? (and closing quotes or brackets)
    followed by white space, or a run of CJK full stops. One pass, no backtracking."""
    i = start
    while i < end:
        char = content[i]
        if char in CJK_SENTENCE_MARKS:
            while i < end and content[i] in CJK_SENTENCE_MARKS:
                i += 1
            yield i
            continue
        if char in SENTENCE_MARKS:
            while i < end and content[i] in SENTENCE_MARKS:
                i += 1
            while i < end and content[i] in CLOSERS:
                i += 1
            if i < len(content) and content[i].isspace():
                yield i
            continue
        i += 1


def _sentences(content: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    cursor = start
    for stop in _sentence_ends(content, start, end):
        spans.append((cursor, stop))
        cursor = stop
        while cursor < end and content[cursor].isspace():
            cursor += 1
    if cursor < end:
        spans.append((cursor, end))
    return [(s, e) for s, e in spans if content[s:e].strip()]


def _hard_cut(content: str, start: int, end: int, budget: int) -> list[_Unit]:
    """Runs of `budget` tokens, streamed: a huge unbroken span never holds all its tokens."""
    units = []
    first = last = None
    count = 0
    for token in TOKEN.finditer(content, start, end):
        if first is None:
            first = token.start()
        last = token.end()
        count += 1
        if count == budget:
            units.append(_Unit(first, last, count))
            first, count = None, 0
    if count:
        units.append(_Unit(first, last, count))
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
                if (
                    previous.partial_code
                    or overlap_tokens + previous.tokens > options.overlap_tokens
                ):
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


def _finish(
    content: str,
    title: str,
    pieces: list[tuple[Section, list[_Unit]]],
    pages: tuple[tuple[int, int], ...] = (),
) -> list[ChunkSpec]:
    spans = [(group[0].start, group[-1].end) for _, group in pieces]
    byte_at = _byte_offsets(content, sorted({o for span in spans for o in span}))
    page_offsets = [offset for offset, _ in pages]
    chunks = []
    for position, ((section, group), (start, end)) in enumerate(zip(pieces, spans, strict=True)):
        body = content[start:end]
        crumbs = list(section.path)
        if title and (not crumbs or crumbs[0] != title):
            crumbs.insert(0, title)
        breadcrumb = " > ".join(crumbs)
        indexed = strip_links(body)
        text = f"{breadcrumb}\n\n{indexed}" if breadcrumb else indexed
        page_start = page_end = None
        if pages:
            page_start = pages[max(0, bisect_right(page_offsets, start) - 1)][1]
            page_end = pages[max(0, bisect_right(page_offsets, max(start, end - 1)) - 1)][1]
        chunks.append(
            ChunkSpec(
                position=position,
                text=text,
                body=body,
                heading_path=section.path,
                anchor=section.anchor,
                start_byte=byte_at[start],
                end_byte=byte_at[end],
                token_estimate=estimate_tokens(text),
                partial_code=any(u.partial_code for u in group),
                page_start=page_start,
                page_end=page_end,
            )
        )
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
