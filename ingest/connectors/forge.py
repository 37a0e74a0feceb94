"""Where a git source's documents and passages are cited on its forge: the `web_url` option's
pattern (`https://github.com/o/r/blob/{commit}/{path}#L{line}`) made into each document's URL
and, when it names {line}, each passage's anchor at the line it starts on."""

from __future__ import annotations

import re
from typing import Callable
from urllib.parse import quote

from ingest.chunk import ChunkSpec
from ingest.errors import LocationRefused
from ingest.markdown_blocks import parse_atx_heading
from kb.validators import is_http_pattern


def check_web_url(pattern: str) -> None:
    """Refuse a `web_url` pattern that is not an http(s) URL with a host: it becomes every
    document's citation link, which readers open (a `javascript:` one would run in their page)."""
    pattern = pattern.strip()
    if pattern and not is_http_pattern(pattern):
        raise LocationRefused(
            f"The option web_url {pattern!r} is no http(s) URL: write the forge's address of a "
            "file, e.g. 'https://github.com/psf/requests/blob/{commit}/{path}#L{line}'.",
            details={"option": "web_url"},
        )


def forge_citation(
    pattern: str, commit: str, path: str, source: bytes, heading_lines: dict[str, int] | None = None
) -> tuple[str, Callable[[ChunkSpec], str] | None]:
    """The document's URL on the forge (the pattern up to its `#`) and, when the pattern's fragment
    names {line}, how a passage's anchor is made: the fragment at the passage's line
    (`passage_line`)."""
    base, _, fragment = pattern.partition("#")
    url = base.replace("{commit}", commit).replace("{path}", quote(path))
    if "{line}" not in fragment:
        return url + (f"#{fragment}" if fragment else ""), None
    lines = source.decode("utf-8", errors="replace").splitlines()
    starts = sorted(set((heading_lines or {}).values()))

    def anchor_of(chunk: ChunkSpec) -> str:
        return fragment.replace(
            "{line}",
            str(passage_line(chunk.body, chunk.anchor, heading_lines or {}, starts, lines)),
        )

    return url, anchor_of


def passage_line(
    passage: str, anchor: str, heading_lines: dict[str, int], starts: list[int], lines: list[str]
) -> int:
    """The line of the source file a passage starts on. Where its reader gave its section's
    heading line (`heading_lines`, the parser's own source position): that line for a passage
    that opens with the heading; for one that starts inside the section, the line its first
    words are on within the section's lines, else the heading's. Without a position (a
    notebook), the first words anywhere in the file (`line_of`)."""
    start = heading_lines.get(anchor)
    if start is None:
        return line_of(passage, lines)
    if parse_atx_heading(passage.lstrip("\n").split("\n", 1)[0]):
        return start
    end = next((line for line in starts if line > start), len(lines) + 1)
    found = line_of(passage, lines[start - 1 : end - 1], default=0)
    return start - 1 + found if found else start


def line_of(passage: str, lines: list[str], default: int = 1) -> int:
    """The line of `lines` a passage starts on, by its words: the first line holding the first
    words of the passage's first line of prose (its heading's if it has no other), compared as
    lowercase letters and digits only, so markup written differently (a link, `code`, a field
    list) still matches; `default` when nothing matches (a table, a notebook's output)."""
    candidates = []
    for raw in passage.splitlines():
        text = re.sub(r"\s*\{#[^}]*\}\s*$", "", raw)
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a markdown link reads as its label
        words = _words(text)
        if len(words) >= 2 or (words and len(words[0]) >= 4):
            candidates.append(words)
    normalised = [" ".join(_words(line)) for line in lines]
    for words in candidates[1:] + candidates[:1]:
        probe = " ".join(words[:4])
        for number, line in enumerate(normalised, start=1):
            if probe in line:
                return number
    return default


def _words(text: str) -> list[str]:
    return re.sub(r"[^\w\s]", "", text.lower()).replace("_", "").split()
