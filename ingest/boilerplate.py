"""Find and drop the blocks that repeat across one source's pages. Pure.

A paragraph-level block in at least `MIN_DOCUMENTS` documents and `MIN_SHARE` of the source's is
boilerplate; headings, code and blocks over `MAX_CHARS` never are. Repeats are also counted over
each page's whole HTML (`recall.page_blocks`), so a menu the extractor kept on only a third of the
pages still counts as repeated.

Block keys are computed before anything is dropped, so a dropped block stays in the counts. During a
run nothing is dropped before the source has `MIN_SAMPLE` documents; the run ends by settling every
page on the whole source (`repeated(final=True)`). Dropped blocks are kept (`Dropped`), so a block
that stops repeating is put back.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from ingest.recall import page_blocks

MIN_DOCUMENTS = 3
MIN_SHARE = 0.5
MIN_SAMPLE = 50  # documents seen before a block is dropped while the run is still counting
MAX_CHARS = 400
KEY_CHARS = 16
MAX_LINE_CHARS = 200  # a page's lines counted: chrome's are short, and the keys are stored per page
LINE = "l"  # a line's key starts so; a block's is hex digits alone
# `repeated()` holds SHARED + a block's key when extraction kept that block on MIN_DOCUMENTS pages
SHARED = "~"
WORD = re.compile(r"\w+")
LINK_TARGET = re.compile(r"\]\([^()\s]*\)")


def _key(block: str) -> str:
    normal = " ".join(block.lower().split())
    return hashlib.blake2b(normal.encode("utf-8"), digest_size=KEY_CHARS // 2).hexdigest()


def _candidate(block: str) -> bool:
    stripped = block.lstrip()
    return (
        bool(stripped)
        and len(block) <= MAX_CHARS
        and not stripped.startswith(("#", "```", "~~~", "|"))
    )


def blocks(content: str) -> list[str]:
    """The markdown's blocks, as separated by blank lines outside code fences."""
    out: list[str] = []
    current: list[str] = []
    fence = ""
    for line in content.split("\n"):
        stripped = line.lstrip()
        if fence:
            current.append(line)
            if stripped.startswith(fence) and not stripped.strip(fence[0]).strip():
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]
            current.append(line)
            continue
        if not line.strip():
            if current:
                out.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        out.append("\n".join(current))
    return out


def _line_key(words: str) -> str:
    return LINE + hashlib.blake2b(words.encode("utf-8"), digest_size=KEY_CHARS // 2).hexdigest()


def _line_keys(block: str) -> list[str]:
    """A markdown block's lines as keys of their words (markers, emphasis and link targets left
    out), comparable with the keys of a page's visible lines; empty for a line without words."""
    keys = []
    for line in block.split("\n"):
        words = " ".join(WORD.findall(LINK_TARGET.sub("]", line).lower()))
        keys.append(_line_key(words) if words else "")
    return keys


def block_keys(content: str, page: bytes | str | None = None) -> tuple[str, ...]:
    """Keys of the blocks that could be boilerplate and of their lines, once each; given the
    page's HTML, with the keys of its short visible lines too (see the module docstring)."""
    candidates = [b for b in blocks(content) if _candidate(b)]
    keys = [_key(b) for b in candidates] + [k for b in candidates for k in _line_keys(b) if k]
    if page:
        keys += [
            _line_key(line.text)
            for line in page_blocks(page)
            if line.text and len(line.text) <= MAX_LINE_CHARS
        ]
    return tuple(dict.fromkeys(keys))


def _repeated(block: str, repeated: frozenset[str]) -> bool:
    """A candidate block that repeats across the source: as a whole, or line by line."""
    if not _candidate(block):
        return False
    key = _key(block)
    if key in repeated:
        return True
    lines = [line for line in _line_keys(block) if line]
    return SHARED + key in repeated and bool(lines) and all(line in repeated for line in lines)


class BoilerplateCounter:
    """Block keys per document of one source; which keys are boilerplate now."""

    def __init__(self, documents: dict[str, tuple[str, ...]] | None = None):
        self._documents: dict[str, frozenset[str]] = {}
        self._counts: Counter[str] = Counter()
        for ref, keys in (documents or {}).items():
            self.observe(ref, keys)

    def observe(self, ref: str, keys: tuple[str, ...]) -> None:
        previous = self._documents.get(ref)
        if previous is not None:
            self._counts.subtract(previous)
        current = frozenset(keys)
        self._documents[ref] = current
        self._counts.update(current)

    def repeated(self, final: bool = False) -> frozenset[str]:
        """The boilerplate keys: on the whole source once `final`, else only from a sample of
        at least MIN_SAMPLE documents (before that, nothing is dropped yet)."""
        if not final and len(self._documents) < MIN_SAMPLE:
            return frozenset()
        threshold = max(MIN_DOCUMENTS, MIN_SHARE * len(self._documents))
        return frozenset(
            key for key, count in self._counts.items() if count >= threshold
        ) | frozenset(
            SHARED + key
            for key, count in self._counts.items()
            if count >= MIN_DOCUMENTS and not key.startswith(LINE)
        )


Dropped = tuple[tuple[int, str], ...]  # (index among the page's blocks, block text)


def drop_repeated(content: str, repeated: frozenset[str]) -> tuple[str, int]:
    """The content without its boilerplate blocks, and how many were dropped."""
    content, dropped = split_repeated(content, repeated)
    return content, len(dropped)


def split_repeated(content: str, repeated: frozenset[str]) -> tuple[str, Dropped]:
    """The content without its boilerplate blocks, and those blocks with their places."""
    if not repeated:
        return content, ()
    kept, dropped = [], []
    for index, block in enumerate(blocks(content)):
        if _repeated(block, repeated):
            dropped.append((index, block))
        else:
            kept.append(block)
    if not dropped:
        return content, ()
    return ("\n\n".join(kept) + "\n") if kept else "", tuple(dropped)


def settle(content: str, dropped: Dropped, repeated: frozenset[str]) -> tuple[str, Dropped]:
    """The page on the final counts: the whole page is rebuilt (every dropped block back in its
    place) and split again, so blocks no longer boilerplate come back and blocks now known to
    repeat go."""
    whole = blocks(content)
    for index, block in sorted(dropped):
        whole.insert(min(index, len(whole)), block)
    return split_repeated("\n\n".join(whole) + "\n" if whole else "", repeated)
