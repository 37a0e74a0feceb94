"""Join the words a PDF splits. Pure: page texts in, page texts out.

An identifier whose underscores print as rules ("asn1 decode simple der") is joined only where the
document spells it joined (on the same page; anywhere for three parts and more). A line-end hyphen
("func-" / "tion") is joined when the document has the joined word or its halves are not both words
of it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

IDENTIFIER = re.compile(r"(?<![\w/#=.-])_*[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+")
NAME_PARTS = 12  # the most words a split name is looked up as
SPACED_WORDS = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?: [A-Za-z0-9]+)+(?![\w-])")
UNDERSCORE_BREAK = re.compile(r"(?<=[A-Za-z0-9]_)\n(?=[A-Za-z0-9])")
URLISH = re.compile(r"\S*[/?=]\S*")  # a link's words are not a document's identifiers
HYPHEN_BREAK = re.compile(r"(?<![\w-])([A-Za-z]+)-\n([a-z]+)[ \t]*")
WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")


def join_split_words(texts: list[str]) -> list[str]:
    """Pages with the words a PDF splits joined (module docstring)."""
    texts = [UNDERSCORE_BREAK.sub("", text) for text in texts]
    everywhere = _Names.of(
        {name for text in texts for name in _identifiers(text) if name.count("_") >= 2}
    )
    words = Counter(word.lower() for text in texts for word in WORD.findall(text))
    return [_join_hyphenated(_join_identifiers(text, everywhere), words) for text in texts]


@dataclass(frozen=True)
class _Names:
    """Underscored names by their parts ("der", "len"), and the words they start with."""

    by_parts: dict[tuple[str, ...], str]
    firsts: frozenset[str]

    @classmethod
    def of(cls, names: set[str]) -> _Names:
        by_parts = {tuple(name.split("_")): name for name in names}
        return cls(by_parts, frozenset(parts[0] for parts in by_parts))


def _join_identifiers(text: str, everywhere: _Names) -> str:
    """Runs of words spaced as a known name is underscored become the name; each run is scanned
    once, trying the longest name first at a word that starts one, so the cost stays linear."""
    here = _Names.of(_identifiers(text))
    if not here.by_parts and not everywhere.by_parts:
        return text

    def name(parts: tuple[str, ...]) -> str | None:
        return here.by_parts.get(parts) or everywhere.by_parts.get(parts)

    def join(match: re.Match) -> str:
        words, out, at = match.group(0).split(" "), [], 0
        while at < len(words):
            if words[at] not in here.firsts and words[at] not in everywhere.firsts:
                out.append(words[at])
                at += 1
                continue
            sizes = range(min(NAME_PARTS, len(words) - at), 1, -1)
            size = next((n for n in sizes if name(tuple(words[at : at + n]))), 0)
            out.append(name(tuple(words[at : at + size])) if size else words[at])
            at += size or 1
        return " ".join(out)

    return SPACED_WORDS.sub(join, text)


def _identifiers(text: str) -> set[str]:
    """Names with underscores, without leading ones (a signature's `_der_len` names `der_len`)."""
    return {name.lstrip("_") for name in IDENTIFIER.findall(URLISH.sub(" ", text))}


def _join_hyphenated(text: str, words: Counter[str]) -> str:
    def join(match: re.Match) -> str:
        left, right = match.group(1), match.group(2)
        joined, compound = (left + right).lower(), f"{left}-{right}".lower()
        if words[joined] or not (words[compound] or (words[left.lower()] and words[right.lower()])):
            return left + right + "\n"
        return f"{left}-{right}\n"

    return HYPHEN_BREAK.sub(join, text)
