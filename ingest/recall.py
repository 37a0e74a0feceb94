"""Measure content recall: the share of a page's own text that reached its chunks. Pure.

Content lines are the page's visible text split at block boundaries, without what the site repeats
(`chrome`), line-number gutters, hidden elements (`ingest/stylesheets.py`), navigation by markup
(`NAV_WORDS`) or label (`NAV_LABELS`), and the page's own contents list. Lines of links count: an
index or a "related" table is read, and a measure that left them out could not see them lost.

A line counts whole when its words appear in that order in the chunks, else by the share of its
`SHINGLE`-word windows found. Words are lower-cased `\\w+` runs, so markdown syntax neither helps
nor hurts.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import PreformattedString

from ingest.stylesheets import CSS_DISPLAY_NONE

WORD = re.compile(r"\w+")
LINK_SHARE = 0.5
SHINGLE = 6
NAV_WORDS = ("nav", "sidebar", "footer", "breadcrumb", "menu")
NAV_LABELS = (
    "next ",
    "previous ",
    "prev ",
    "up ",
)  # a line of links that opens so is a page's "Next: ..., Up: ..."
LOW_RECALL = 0.9  # a page below this is flagged `low_recall` in the run's report
LOST_BLOCK_WORDS, LOST_BLOCK_SHARE = 10, 0.02  # so is a page that lost a block this large whole
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
INVISIBLE = {
    "script",
    "style",
    "noscript",
    "template",
    "head",
    "title",
    "svg",
    "button",
    "select",
    "textarea",
    "iframe",
    "object",
    "canvas",
}
BLOCKS = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "center",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "html",
    "li",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "br",
}


@dataclass(frozen=True)
class Line:
    text: str  # the words, lower-cased, joined by single spaces
    words: int
    linked: bool  # mostly link text


def page_lines(html: bytes | str) -> tuple[Line, ...]:
    """The visible text lines of a whole page (see the module docstring)."""
    return lines_of(_soup(html))


def page_blocks(html: bytes | str) -> tuple[Line, ...]:
    """The visible text of a whole page block by block, navigation included and a `<br>` read
    as a space, as the extractor writes a paragraph: what `ingest.boilerplate` counts across a
    site's pages."""
    return lines_of(_soup(html), navigation=True, br_breaks=False)


@functools.lru_cache(
    maxsize=1
)  # the page being ingested: read for its boilerplate, then for its recall
def _soup(html: bytes | str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")  # never changed by its readers


def lines_of(
    root: Tag,
    hidden: frozenset[str] = frozenset(),
    *,
    navigation: bool = False,
    br_breaks: bool = True,
) -> tuple[Line, ...]:
    """`hidden`: classes the site's stylesheets hide (`hidden_classes`); elements with the
    `hidden` attribute or an inline `display: none` are not visible either. `navigation`: keep
    what the page marks as navigation, and its lines of links to its own sections; `br_breaks`:
    a `<br>` ends a line."""
    lines: list[Line] = []
    text: list[str] = []
    link_chars = [0]
    headings = (
        frozenset()
        if navigation
        else frozenset(_words(h.get_text()) for h in root.find_all(HEADINGS))
    )
    own_links: list[str] = []  # the text of each link to the page's own fragments on this line
    own_open: list[str] = []  # of the one being read

    def flush():
        joined = "".join(text)
        text.clear()
        linked_chars, link_chars[0] = link_chars[0], 0
        if own_open:
            own_links.append("".join(own_open))
            own_open.clear()
        names = [_words(name) for name in own_links]
        own_links.clear()
        words = WORD.findall(joined.lower())
        if (
            words
            and names
            and sum(map(len, words)) == sum(len(name) - name.count(" ") for name in names)
            and 2 * sum(name in headings for name in names) > len(names)
        ):
            return  # the page's contents: links to its own sections by their headings' names
        if words:
            letters = sum(1 for c in joined if not c.isspace())
            lines.append(
                Line(
                    " ".join(words),
                    len(words),
                    letters > 0 and linked_chars >= LINK_SHARE * letters,
                )
            )

    stack: list[tuple[Tag, object]] = [(root, iter(root.children))]
    in_link = in_own_link = in_pre = 0
    while stack:
        node, children = stack[-1]
        child = next(children, None)  # type: ignore[call-overload]
        if child is None:
            stack.pop()
            if node.name in BLOCKS:
                flush()
            in_link -= node.name == "a"
            if in_own_link and _own_link(node):
                in_own_link -= 1
                if own_open:
                    own_links.append("".join(own_open))
                    own_open.clear()
            in_pre -= node.name == "pre"
            continue
        if isinstance(child, PreformattedString):
            continue
        if isinstance(child, NavigableString):
            value = str(child)
            if in_pre and "\n" in value:
                first, *rest = value.split("\n")
                text.append(first)
                for part in rest:
                    flush()
                    text.append(part)
            else:
                text.append(value)
            if in_link:
                link_chars[0] += sum(1 for c in value if not c.isspace())
            if in_own_link:
                own_open.append(value)
            continue
        if (
            not isinstance(child, Tag)
            or child.name in INVISIBLE
            or _hidden(child, hidden)
            or (not navigation and _navigation(child))
        ):
            continue
        if child.name == "br" and not br_breaks:
            text.append(" ")
            continue
        if child.name in BLOCKS:
            flush()
        elif child.name == "sup":
            text.append(
                " "
            )  # a superscript is read apart from the word before it, as the extractor writes it
        in_link += child.name == "a"
        in_own_link += not navigation and _own_link(child)
        in_pre += child.name == "pre"
        stack.append((child, iter(child.children)))
    flush()
    return _without_line_numbers(lines)


def _without_line_numbers(lines: list[Line]) -> tuple[Line, ...]:
    """A leading number that counts up from one line to the next is a listing's line-number
    gutter (Doxygen's source pages, Pygments' `linenos`): the line's place, not its content,
    and no extraction should index it. A number only one line carries is text."""
    numbers = [
        int(w) if (w := line.text.split(" ", 1)[0]).isdecimal() and len(w) < 7 else None
        for line in lines
    ]
    kept = []
    for i, line in enumerate(lines):
        n = numbers[i]
        counted = n is not None and (
            (i > 0 and numbers[i - 1] == n - 1) or (i + 1 < len(lines) and numbers[i + 1] == n + 1)
        )
        if not counted:
            kept.append(line)
        elif line.words > 1:
            kept.append(Line(line.text.split(" ", 1)[1], line.words - 1, line.linked))
    return tuple(kept)


def _own_link(tag: Tag) -> bool:
    return tag.name == "a" and (tag.get("href") or "").strip().startswith("#")


def _words(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def _hidden(tag: Tag, hidden: frozenset[str]) -> bool:
    if tag.has_attr("hidden") or CSS_DISPLAY_NONE.search((tag.get("style") or "").strip()):
        return True
    return bool(hidden) and not hidden.isdisjoint(tag.get("class") or ())


def _navigation(tag: Tag) -> bool:
    if tag.name in ("nav", "footer") or tag.get("role") in ("navigation", "contentinfo"):
        return True
    names = " ".join([*(tag.get("class") or ()), tag.get("id") or ""]).lower()
    return any(word in names for word in NAV_WORDS)


@dataclass(frozen=True)
class Recall:
    words: int  # content words of the page
    found: float  # of them, found in the chunks
    missed: tuple[str, ...]  # the longest content lines not found, for a report
    lost_run: int = 0  # the words of the longest run of consecutive content lines lost whole

    @property
    def share(self) -> float:
        return round(self.found / self.words, 4) if self.words else 1.0

    @property
    def low(self) -> bool:
        """Flagged: under `LOW_RECALL`, or a block lost whole (a "Related" table, a list) that is
        a real share of the page, `LOST_BLOCK_SHARE` of its words and `LOST_BLOCK_WORDS` at least,
        though the rest of the page came through."""
        return self.share < LOW_RECALL or self.lost_run >= max(
            LOST_BLOCK_WORDS, LOST_BLOCK_SHARE * self.words
        )


def content_recall(
    lines: tuple[Line, ...],
    chunk_texts: list[str],
    chrome: frozenset[str] = frozenset(),
    keep_missed: int = 5,
) -> Recall:
    haystack = " " + " ".join(" ".join(WORD.findall(t.lower())) for t in chunk_texts) + " "
    total, found, missed = 0, 0.0, []
    # words of consecutive lines lost whole between lines that were kept: a table, a list, a
    # section inside the content (the page's banner before it and footer after it are not)
    run = lost_run = 0
    kept_before = False
    for line in lines:
        if line.text in chrome or (line.linked and line.text.startswith(NAV_LABELS)):
            continue
        total += line.words
        if f" {line.text} " in haystack:
            found += line.words
            if (
                line.words > 2 or not run
            ):  # a name or two found elsewhere (a link's text) does not end a run
                lost_run = max(lost_run, run if kept_before else 0)
                run, kept_before = 0, True
            else:
                run += line.words
            continue
        credit = _shingle_share(line.text.split(), haystack)
        found += credit * line.words
        if credit > 0:
            lost_run = max(lost_run, run if kept_before else 0)
            run, kept_before = 0, True
        else:
            run += line.words
        if credit < 1:
            missed.append(line.text)
    missed.sort(key=len, reverse=True)
    return Recall(total, found, tuple(m[:200] for m in missed[:keep_missed]), lost_run)


def _shingle_share(words: list[str], haystack: str) -> float:
    if len(words) <= SHINGLE:
        return 0.0
    windows = range(0, len(words) - SHINGLE + 1, SHINGLE)  # disjoint windows: linear in the line
    hits = sum(1 for i in windows if f" {' '.join(words[i : i + SHINGLE])} " in haystack)
    return hits / len(windows)


LOW_RECALL_NOTE = re.compile(r"\blow_recall (\d+(?:\.\d+)?)")


def low_recall_of(reason: str) -> str:
    """The share a report's reason gives (`low_recall 0.42` is "0.42"; "" without), which the
    document keeps too (as text: a share of 0.00 is still a flag)."""
    match = LOW_RECALL_NOTE.search(reason or "")
    return match.group(1) if match else ""


class SiteLines:
    """The lines a crawl has seen on at least half of its pages so far (and on three at least):
    the site's repeated chrome, as the run learns it, for recall measured while ingesting."""

    def __init__(self):
        self._pages = 0
        self._counts: dict[str, int] = {}

    def observe(self, lines: tuple[Line, ...]) -> frozenset[str]:
        self._pages += 1
        for text in {line.text for line in lines}:
            self._counts[text] = self._counts.get(text, 0) + 1
        threshold = max(3, self._pages / 2)
        return frozenset(
            text for text in {line.text for line in lines} if self._counts[text] >= threshold
        )
