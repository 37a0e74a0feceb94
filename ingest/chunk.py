"""Split markdown by its headings, and plain text, into chunks under a token budget. Pure.

A code fence is split only when it alone exceeds the budget (at line boundaries, marked
`partial_code`); overlap never crosses a section. A chunk's body is an exact slice of the document:
`start_byte`/`end_byte` are UTF-8 offsets, end exclusive. Its `text` (the breadcrumb, then the body
with links reduced to their text) is what gets embedded and indexed.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ingest.chunk_units import Unit, estimate_tokens, paragraphs, split_block
from ingest.markdown_blocks import Block, Section, read_blocks, read_sections
from kb.markup import strip_links


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
    pieces: list[tuple[Section, list[Unit]]] = []
    for section in sections:
        units: list[Unit] = []
        for index, block in enumerate(section.blocks):
            budget = options.max_tokens
            if (
                index == 1 and section.blocks[0].kind == "heading"
            ):  # a heading and the start of what it
                budget = max(
                    budget - units[0].tokens, budget // 2
                )  # heads fit one chunk: never a bare heading
            units.extend(split_block(content, block, budget))
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
    pieces: list[tuple[Section, list[Unit]]], max_tokens: int
) -> list[tuple[Section, list[Unit]]]:
    """A section that is only its heading ("1. Introduction" straight before "1.1 Scope") is no
    passage to return: its heading opens the next chunk (the last one's, at the end). A heading
    with an id of its own (a slide, a cited anchor) is left to `_open_onto_subsections`, and
    headings that wait for more than a chunk's tokens become a chunk of their own, so no chunk
    outgrows the limit."""
    merged: list[tuple[Section, list[Unit]]] = []
    waiting: list[Unit] = []
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
    pieces: list[tuple[Section, list[Unit]]], max_tokens: int
) -> list[tuple[Section, list[Unit]]]:
    """A heading with an id and no text of its own, straight before its first subsection
    (DocBook's "Usage", Javadoc's "Method Detail", a release's version heading), is no passage
    to return either: it opens the chunk of that subsection, which keeps the subsection's anchor
    and path, the most specific (the document view still carries the heading's id, and a section
    is read by its id from the document's headings, `retrieval.documents.section_text`). Headings
    that wait in a row chain, each under the one before; one followed by a sibling keeps its
    chunk."""
    merged: list[tuple[Section, list[Unit]]] = []
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


def _tiny(section: Section, units: list[Unit], options: ChunkOptions) -> bool:
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
    units: list[Unit] = []
    for start, end in paragraphs(content):
        units.extend(split_block(content, Block("para", start, end), options.max_tokens))
    section = Section(path=(), anchor="")
    return _finish(content, title, [(section, group) for group in _pack(units, options)], pages)


def _pack(units: list[Unit], options: ChunkOptions) -> list[list[Unit]]:
    """Greedy packing up to the budget, starting each next group with a small overlap."""
    groups: list[list[Unit]] = []
    current: list[Unit] = []
    tokens = 0
    for unit in units:
        if current and tokens + unit.tokens > options.max_tokens:
            groups.append(current)
            overlap: list[Unit] = []
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
    pieces: list[tuple[Section, list[Unit]]],
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
