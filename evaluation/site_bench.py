"""Measure how faithfully a crawled site came out, over the original pages and the chunks. Pure.

Content recall comes first: it is what a reader loses (`ingest/recall.py`). Chrome share counts the
chunk words on lines the *original pages* repeat on half the site, so the extractor cannot grade
itself; shared body text counts too, so it is an upper bound. Permalink marks are `¶`, `[source]` or
link syntax left in breadcrumbs or prose (not `name[key]()`); anchors resolve when the original page
has the id.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from bs4 import BeautifulSoup

from ingest.recall import LOW_RECALL, Line, content_recall, lines_of
from ingest.stylesheets import hidden_classes

SITE_WIDE_SHARE = 0.5
INLINE_CODE = re.compile(r"`[^`\n]*`")
PROSE_MARK = re.compile(
    r"¶[ \t]*$|\[source\]", re.M
)  # a mark that ends a line; prose *about* ¶ is text
LINK = re.compile(
    r"\[[^\]\n]*\]\([^()\s]+\)"
)  # `[text](url)`; `server[Symbol.asyncDispose]()` is a name


@dataclass(frozen=True)
class PageFacts:
    ids: frozenset[str]
    lines: frozenset[str]  # normalised visible text lines of the whole original page
    content: tuple[Line, ...] = ()  # its block-level lines, for recall


@dataclass(frozen=True)
class ChunkFacts:
    page: str
    body: str
    heading_path: tuple[str, ...]
    anchor: str


@dataclass(frozen=True)
class Fidelity:
    pages: int
    chunks: int
    chrome_share: float
    permalink_chunks: int
    anchors_checked: int
    anchors_resolved_share: float
    recall_mean: float = 1.0
    recall_worst: float = 1.0
    worst_page: str = ""
    low_recall_pages: tuple[tuple[str, float], ...] = ()


def page_facts(html: bytes, hidden_by: Callable[[str], frozenset[str]] | None = None) -> PageFacts:
    """`hidden_by(href)`: the classes the stylesheet at `href` (as the page links it) hides,
    so that recall counts only what a reader sees (`ingest.stylesheets.hidden_classes`)."""
    soup = BeautifulSoup(html, "html.parser")
    hidden: frozenset[str] = frozenset()
    if hidden_by is not None:
        for link in soup.find_all("link", href=True):
            if "stylesheet" in [r.lower() for r in link.get("rel") or ()]:
                hidden |= hidden_by(link["href"])
        for style in soup.find_all("style"):
            hidden |= hidden_classes(style.get_text())
    for tag in soup.find_all(["script", "style", "noscript", "template"]):
        tag.decompose()
    ids = frozenset(tag["id"] for tag in soup.find_all(id=True))
    ids |= frozenset(tag["name"] for tag in soup.find_all("a", attrs={"name": True}))
    content = lines_of(soup, hidden)
    lines = frozenset(_normal(line) for line in soup.get_text("\n").split("\n") if _normal(line))
    return PageFacts(ids, lines, content)


def _normal(line: str) -> str:
    return " ".join(line.split()).lower()


def site_wide_lines(pages: dict[str, PageFacts]) -> frozenset[str]:
    counts = Counter(line for facts in pages.values() for line in facts.lines)
    threshold = max(2, SITE_WIDE_SHARE * len(pages))
    return frozenset(line for line, count in counts.items() if count >= threshold)


def site_wide_content_lines(pages: dict[str, PageFacts]) -> frozenset[str]:
    counts = Counter(
        text for facts in pages.values() for text in {line.text for line in facts.content}
    )
    threshold = max(2, SITE_WIDE_SHARE * len(pages))
    return frozenset(text for text, count in counts.items() if count >= threshold)


def recall_by_page(pages: dict[str, PageFacts], chunks: list[ChunkFacts]) -> dict[str, float]:
    chrome = site_wide_content_lines(pages)
    texts: dict[str, list[str]] = {}
    for chunk in chunks:
        texts.setdefault(chunk.page, []).append(chunk.body)
    return {
        ref: content_recall(facts.content, texts.get(ref, []), chrome).share
        for ref, facts in pages.items()
    }


def _prose(body: str) -> str:
    kept, fence = [], False
    for line in body.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        if not fence:
            kept.append(INLINE_CODE.sub("", line))
    return "\n".join(kept)


def fidelity(pages: dict[str, PageFacts], chunks: list[ChunkFacts]) -> Fidelity:
    chrome = site_wide_lines(pages)
    words = chrome_words = permalinks = checked = resolved = 0
    for chunk in chunks:
        for line in chunk.body.split("\n"):
            count = len(line.split())
            words += count
            if _normal(line.lstrip("#-*> ")) in chrome:
                chrome_words += count
        crumbs = " ".join(chunk.heading_path)
        prose = _prose(chunk.body)
        if "¶" in crumbs or LINK.search(crumbs) or LINK.search(prose) or PROSE_MARK.search(prose):
            permalinks += 1
        if chunk.heading_path:
            checked += 1
            facts = pages.get(chunk.page)
            resolved += not chunk.anchor or (facts is not None and chunk.anchor in facts.ids)
    recall = recall_by_page(pages, chunks)
    worst = min(recall, key=recall.get) if recall else ""
    return Fidelity(
        recall_mean=round(sum(recall.values()) / len(recall), 4) if recall else 1.0,
        recall_worst=recall.get(worst, 1.0),
        worst_page=worst,
        low_recall_pages=tuple(
            sorted(
                ((ref, share) for ref, share in recall.items() if share < LOW_RECALL),
                key=lambda pair: pair[1],
            )
        ),
        pages=len(pages),
        chunks=len(chunks),
        chrome_share=round(chrome_words / words, 4) if words else 0.0,
        permalink_chunks=permalinks,
        anchors_checked=checked,
        anchors_resolved_share=round(resolved / checked, 4) if checked else 1.0,
    )
