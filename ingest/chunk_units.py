"""The units chunks are packed from (ingest/chunk.py): a span of the document and its estimated
tokens. A block over the budget is cut at sentence ends (a table or a code fence at line ends),
and a span still over it by a hard cut every `budget` tokens. Pure.

Every scan here is linear in the input: sentence ends are found with plain string operations,
never with backtracking patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.markdown_blocks import Block
from kb.languages import CJK_CHARS

# Han, kana and Hangul characters (each about a token), then words of other letters and digits: a
# word
# stops where such a character starts, so "Windows版のインストール" is a word and eight characters
TOKEN = re.compile(rf"[{CJK_CHARS}]|[^\W{CJK_CHARS}]+|[^\w\s]")
SENTENCE_MARKS = ".!?"
CJK_SENTENCE_MARKS = "。！？"
CLOSERS = "\"')]"


def estimate_tokens(text: str) -> int:
    """Words, punctuation marks and CJK characters: close to a WordPiece count, never zero."""
    return max(1, len(TOKEN.findall(text)))


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    tokens: int
    partial_code: bool = False


def paragraphs(content: str) -> list[tuple[int, int]]:
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


def split_block(content: str, block: Block, budget: int) -> list[Unit]:
    text = content[block.start : block.end]
    tokens = estimate_tokens(text)
    if tokens <= budget:
        return [Unit(block.start, block.end, tokens)]
    if block.kind == "code":
        return _split_lines(content, block, budget)
    if text.startswith("|"):  # a table: cut between rows, never inside one
        return [Unit(u.start, u.end, u.tokens) for u in _split_lines(content, block, budget)]
    units = []
    for start, end in _sentences(content, block.start, block.end):
        piece_tokens = estimate_tokens(content[start:end])
        if piece_tokens <= budget:
            units.append(Unit(start, end, piece_tokens))
        else:
            units.extend(_hard_cut(content, start, end, budget))
    return units


def _split_lines(content: str, block: Block, budget: int) -> list[Unit]:
    """An oversized fence: consecutive lines up to the budget (a single huge line is cut)."""
    units: list[Unit] = []
    start = block.start
    tokens = 0
    position = block.start
    for line in content[block.start : block.end].splitlines(keepends=True):
        line_tokens = estimate_tokens(line)
        if tokens and tokens + line_tokens > budget:
            units.append(
                Unit(
                    start, position - 1 if content[position - 1] == "\n" else position, tokens, True
                )
            )
            start, tokens = position, 0
        if line_tokens > budget:
            for unit in _hard_cut(content, position, position + len(line.rstrip("\n")), budget):
                units.append(Unit(unit.start, unit.end, unit.tokens, True))
            start, tokens = position + len(line), 0
        else:
            tokens += line_tokens
        position += len(line)
    if tokens:
        units.append(Unit(start, block.end, tokens, True))
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


def _hard_cut(content: str, start: int, end: int, budget: int) -> list[Unit]:
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
            units.append(Unit(first, last, count))
            first, count = None, 0
    if count:
        units.append(Unit(first, last, count))
    return units
