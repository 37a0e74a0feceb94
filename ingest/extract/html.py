"""HTML to markdown: a page's main content, written with the site's own section ids. Pure.

The steps: main content (`html_main_content.py`), chrome inside it (`html_chrome.py`), headings with
the page's ids (`html_headings.py`), markdown (`html_writer.py`). Pages are parsed with lxml, which
closes what HTML lets authors leave open (man2html's `<dd>`s and `<p>`s) instead of nesting hundreds
deep; a heading's end tag is first made to match its heading (`close_headings`), as browsers do and
libxml2 does not. Entities are decoded after tags are gone, so `&lt;b&gt;` stays text.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Comment, Tag, XMLParsedAsHTMLWarning

from ingest.errors import EmptyContent
from ingest.extract.html_chrome import drop_chrome
from ingest.extract.html_code import code_lines
from ingest.extract.html_headings import heading_text, inline_text, titled_definitions
from ingest.extract.html_main_content import content_root
from ingest.extract.html_writer import MarkdownRenderer
from ingest.extract.text import normalise_text

DROP_ALWAYS = {
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "iframe",
    "button",
    "input",
    "select",
    "textarea",
    "canvas",
    "object",
    "embed",
    "form",
    "link",
    "meta",
}
TITLE_SEPARATORS = (" — ", " – ", " - ", " | ", " · ", " :: ")


@dataclass(frozen=True)
class HtmlPage:
    title: str
    content: str  # markdown
    links: tuple[str, ...]  # absolute http(s) URLs of the content's links, fragments removed


def html_to_markdown(
    body: bytes, *, charset: str | None = None, url: str = "", fallback_title: str = ""
) -> HtmlPage:
    with (
        warnings.catch_warnings()
    ):  # XHTML pages are HTML to us: lxml's HTML parser reads them well
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(close_headings(body), "lxml", from_encoding=charset)
    if soup.original_encoding is None and isinstance(body, bytes) and not soup.get_text(strip=True):
        raise EmptyContent("The HTML has no readable text.")
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    page_ids = frozenset(_page_ids(soup))
    base = url
    base_tag = soup.find("base", href=True)
    if base_tag:
        base = urljoin(url, base_tag["href"])
    title_tag = soup.find("title")
    page_title = inline_text(title_tag.get_text(" ")) if title_tag else ""
    if title_tag:
        title_tag.decompose()
    head = soup.find("head")
    if head:
        head.decompose()
    for tag in soup.find_all(DROP_ALWAYS):
        tag.decompose()
    flatten_deep_nesting(soup)
    root = content_root(soup)
    titled_definitions(root)
    drop_chrome(root)
    code_lines(root)
    h1 = root.find("h1")
    title = _title(page_title, heading_text(h1) if h1 else "") or fallback_title
    renderer = MarkdownRenderer(base, page_ids)
    content = renderer.render(root)
    return HtmlPage(
        title=title, content=normalise_text(content), links=tuple(dict.fromkeys(renderer.links))
    )


def _scanner(kind: type) -> dict[str, object]:
    text = (lambda value: value.encode()) if kind is bytes else (lambda value: value)
    return {
        "tag": re.compile(
            text(r"<(/?)h([1-6])(?=[\s/>])[^<>]*>|<!--|<(script|style)(?=[\s/>])"), re.I
        ),
        "script": re.compile(text(r"</script"), re.I),
        "style": re.compile(text(r"</style"), re.I),
        "comment_end": text("-->"),
    }


_SCANNERS = {bytes: _scanner(bytes), str: _scanner(str)}


def close_headings(body: bytes | str) -> bytes | str:
    """The markup with each heading's end tag made to match the heading it closes, as a browser
    reads it: HTML's parsing algorithm ends the open heading at any `</h1>`..`</h6>`, where libxml2
    ignores a mismatched one (`<h2>Keyword Index</h1>`) and makes the rest of the page one heading.
    One forward scan, linear in the page; comments, scripts and styles are skipped whole."""
    scan = _SCANNERS[type(body)]
    pieces, start, position, open_level = [], 0, 0, None
    while (match := scan["tag"].search(body, position)) is not None:
        position = match.end()
        raw_text = match.group(3)
        if raw_text:  # a script or style may hold anything up to its end tag
            found = scan[
                raw_text.lower() if isinstance(raw_text, str) else raw_text.decode().lower()
            ].search(body, position)
            position = found.start() if found else len(body)
        elif match.group(2) is None:  # a comment
            found = body.find(scan["comment_end"], position)
            position = found + 3 if found >= 0 else len(body)
        elif not match.group(1):
            open_level = match.group(2)
        elif open_level is not None:
            if match.group(2) != open_level:
                pieces += [body[start : match.start(2)], open_level]
                start = match.end(2)
            open_level = None
    return body[:0].join([*pieces, body[start:]]) if pieces else body


def _page_ids(soup: BeautifulSoup):
    """Every fragment the page answers to: element ids and the names of `<a name>` markers."""
    for tag in soup.find_all(True):
        if tag.get("id"):
            yield tag["id"].strip()
        if tag.name == "a" and tag.get("name"):
            yield tag["name"].strip()


MAX_NESTING = 100  # below this depth an element keeps its text and loses its markup


def flatten_deep_nesting(soup: BeautifulSoup, max_depth: int = MAX_NESTING) -> None:
    """Replace every element at depth `max_depth` that holds further elements by its text, in
    passes linear in the page, so that the recursive steps after it stay far from Python's
    recursion limit on hostile markup (a hundred thousand unclosed `<div>`s); no real page
    nests its content that deep."""
    depth = {id(soup): 0}
    cut = []
    for node in soup.descendants:
        if not isinstance(node, Tag):
            continue
        parent_depth = depth.get(id(node.parent))
        if parent_depth is None:
            continue  # inside a subtree already marked to be cut
        if parent_depth + 1 == max_depth:
            if any(isinstance(child, Tag) for child in node.children):
                cut.append(node)
            continue  # its descendants get no depth: they are cut with it
        depth[id(node)] = parent_depth + 1
    for node in cut:
        node.string = node.get_text()


def _title(page_title: str, h1: str) -> str:
    """The page's `<title>` without the site name that generators append after a separator."""
    if (
        h1
        and page_title.lower().startswith(h1.lower())
        and page_title[len(h1) :].startswith(TITLE_SEPARATORS)
    ):
        return h1
    return page_title or h1
