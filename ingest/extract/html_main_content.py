"""Find the element holding a page's main content: all outside it is chrome, never read. Pure.

A named container (`<article>`, `[role=main]`, `<main>`, `CONTENT_IDS`, `CONTENT_CLASSES`) is the
root only if it holds `CONTAINER_SHARE` of the page's non-link text, the page's marked frame not
counted: AsciiDoc puts class `content` on every listing block, and on a short page the footer must
not outweigh `role=main`. Otherwise the root is found by text density from `<body>`, stopping beside
a heading so a DocBook reference page's sections stay together.
"""

from __future__ import annotations

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import PreformattedString

from ingest.extract.html_chrome import is_chrome, link_dense
from ingest.extract.html_headings import HEADINGS
from ingest.extract.html_tables import is_layout_table, own_rows

# documentation generators' content containers, most specific first
CONTENT_CLASSES = (
    "md-content",
    "theme-doc-markdown",
    "rst-content",
    "markdown-body",
    "body",
    "document",
    "content",
    "post-content",
    "entry-content",
    "article-content",
)
DENSITY_SHARE = 0.6
SIBLING_SHARE = 0.1  # siblings holding this much of the densest child's text are content too
SIBLING_MIN_CHARS = 200
CONTAINER_SHARE = (
    0.3  # a named container holds at least this share of the page's non-link text outside its frame
)
CONTENT_IDS = (
    "apicontent",
    "main-content",
    "maincontent",
    "doc-content",
    "page-content",
    "main",
    "content",
)
DENSITY_CONTAINERS = {
    "div",
    "section",
    "article",
    "main",
    "table",
    "tbody",
    "tr",
    "td",
    "center",
    "body",
    "html",
}


def content_root(soup: BeautifulSoup) -> Tag:
    """The element that holds the page's main content (see the module docstring)."""
    body = soup.find("body") or soup
    lengths = _text_lengths(body)
    whole = lengths.get(id(body), 0)
    frame: list[
        list[Tag]
    ] = []  # found once, and only for a candidate that falls short of the whole page

    def holds_content(tag) -> bool:
        if not isinstance(tag, Tag):
            return False
        own = lengths.get(id(tag), 0)
        if own >= CONTAINER_SHARE * max(1, whole):
            return True
        if not frame:
            frame.append(_outer_chrome(body))
        around = set(map(id, tag.parents))  # chrome that encloses the candidate is not beside it
        beside = sum(
            lengths.get(id(c), 0)
            for c in frame[0]
            if id(c) not in around and not any(p is tag for p in c.parents)
        )
        return own >= CONTAINER_SHARE * max(1, whole - beside)

    articles = soup.find_all("article")
    if len(articles) == 1 and holds_content(articles[0]) and not _titled_beside(articles[0]):
        return articles[0]
    for candidate in (soup.find(attrs={"role": "main"}), soup.find("main")):
        if holds_content(candidate):
            return candidate
    known = _generator_root(soup)
    if known is not None:
        return known
    for name in CONTENT_IDS:
        found = soup.find(id=name)
        if holds_content(found) and found.name not in ("body", "html"):
            return found
    for name in CONTENT_CLASSES:
        found = max(soup.find_all(class_=name), key=lambda t: lengths.get(id(t), 0), default=None)
        if holds_content(found) and found.name not in ("body", "html"):
            return found
    return _densest(body, lengths)


def _outer_chrome(body: Tag) -> list[Tag]:
    """The outermost elements the page marks as its frame (`is_chrome`, or a footer by its
    ARIA role or class), in one walk that does not enter them."""
    found, stack = [], [body]
    while stack:
        node = stack.pop()
        for child in node.children:
            if not isinstance(child, Tag):
                continue
            if is_chrome(child) or _footer(child):
                found.append(child)
            else:
                stack.append(child)
    return found


def _footer(tag: Tag) -> bool:
    return tag.get("role") == "contentinfo" or "footer" in (tag.get("class") or ())


def _generator_root(soup: BeautifulSoup) -> Tag | None:
    """Structures of generators whose page is split in several content areas: AsciiDoc and
    Asciidoctor put the title and a manual page's NAME section in `#header`, the rest in
    `#content`, beside `#footer`; the root is their parent with the footer and TOC left out."""
    content, header = soup.find(id="content"), soup.find(id="header")
    if (
        isinstance(content, Tag)
        and isinstance(header, Tag)
        and content.parent is header.parent
        and content.parent is not None
        and header.find("h1") is not None
        and not link_dense(header)
    ):
        parent = content.parent
        for chrome_id in ("footer", "toc", "footnotes-nav"):
            tag = parent.find(id=chrome_id)
            if isinstance(tag, Tag) and tag.name != "body" and not tag.find(class_="footnote"):
                tag.decompose()
        return parent
    return _doxygen_root(soup)


def _doxygen_root(soup: BeautifulSoup) -> Tag | None:
    """Doxygen puts the page's title in `div.header` (as `div.headertitle > div.title`, no
    heading element) and the rest in the `div.contents` after it: the root holds both, the
    title as the page's heading, the groups the page belongs to (`div.ingroups`, inside the
    title) as a line under it, and the header's links to the page's own parts left out."""
    contents = soup.find("div", class_="contents")
    header = (
        contents.find_previous_sibling("div", class_="header")
        if isinstance(contents, Tag)
        else None
    )
    if not isinstance(header, Tag) or header.find(class_="headertitle") is None:
        return None
    title = header.find(class_="title")
    if isinstance(title, Tag) and title.find(HEADINGS) is None:
        title.name = "h1"
        for line in reversed(
            title.find_all("div")
        ):  # the groups the page belongs to: a line under the title
            line.name = "p"
            title.insert_after(line.extract())
    for part in header.find_all("div"):
        if (
            not part.decomposed
            and part is not title
            and part not in title.parents
            and link_dense(part)
        ):
            part.decompose()
    root = soup.new_tag("div")
    header.insert_before(root)
    root.append(header.extract())
    root.append(contents.extract())
    return root


def _text_lengths(body: Tag) -> dict[int, int]:
    """Every element's non-link text length, in one iterative post-order pass (no recursion:
    pages nest deeper than Python's stack allows)."""
    lengths: dict[int, int] = {}
    stack: list[tuple[Tag, object]] = [(body, iter(body.children))]
    totals = [0]
    while stack:
        node, children = stack[-1]
        child = next(children, None)  # type: ignore[call-overload]
        if child is None:
            stack.pop()
            total = totals.pop()
            lengths[id(node)] = total
            if totals:
                totals[-1] += total
            continue
        if isinstance(child, PreformattedString):
            continue
        if isinstance(child, NavigableString):
            if node.name != "a":
                totals[-1] += len(child.strip())
        elif isinstance(child, Tag):
            stack.append((child, iter(child.children)))
            totals.append(0)
    return lengths


def _densest(body: Tag, lengths: dict[int, int]) -> Tag:
    """Step from `body` into the child holding most of the non-link text while that child holds
    at least DENSITY_SHARE of it and no sibling holds content comparable to it (at least
    SIBLING_SHARE of the best child's text): sections of one page stay together."""
    node = body
    while True:
        children = [c for c in node.children if isinstance(c, Tag) and c.name in DENSITY_CONTAINERS]
        if not children:
            return node
        best = max(children, key=lambda c: lengths.get(id(c), 0))
        best_length = lengths.get(id(best), 0)
        if best_length < DENSITY_SHARE * max(1, lengths.get(id(node), 0)):
            return node
        siblings = sum(
            _reader_length(c, lengths)
            for c in node.children
            if isinstance(c, Tag) and c is not best and not is_chrome(c)
        )
        if siblings >= SIBLING_SHARE * best_length or _heading_outside(node, best):
            return node
        if best.name == "table" and _data_table(best):
            return node  # a table of data is content to render whole, never a page's frame
        node = best


def _reader_length(tag: Tag, lengths: dict[int, int]) -> int:
    """What a sibling gives a reader: its prose, or a list of links (an index, a directive list)
    at least SIBLING_MIN_CHARS long; a short line of links (a breadcrumb, a language bar) is not."""
    own = lengths.get(id(tag), 0)
    if own >= SIBLING_MIN_CHARS:
        return own
    if (
        tag.name in DENSITY_CONTAINERS | {"ul", "ol", "dl"}
        and tag.find(["li", "dd", "td"]) is not None
    ):
        whole = len(tag.get_text(strip=True))
        return whole if whole >= SIBLING_MIN_CHARS else 0
    return 0


def _titled_beside(article: Tag) -> bool:
    """The page's title (a heading) stands outside its one `<article>`, in what encloses it and
    is not chrome: the title, summary and see-also beside it are the page's too."""
    for parent in article.parents:
        if not isinstance(parent, Tag) or parent.name in ("html", "[document]"):
            return False
        for heading in parent.find_all(HEADINGS):
            if article not in heading.parents and not any(
                is_chrome(p) for p in heading.parents if p is not parent and parent in p.parents
            ):
                return True
        if parent.name == "body":
            return False
    return False


def _data_table(table: Tag) -> bool:
    rows = own_rows(table)
    return len(rows) > 1 and not is_layout_table(rows)


def _heading_outside(node: Tag, best: Tag) -> bool:
    """A heading among the node's own children (not in the densest child) titles what follows:
    stepping past it would drop the section's title and the content beside it."""
    return any(
        isinstance(child, Tag)
        and child is not best
        and (
            child.name in HEADINGS
            or (
                child.name in DENSITY_CONTAINERS
                and not is_chrome(child)
                and child.find(HEADINGS) is not None
            )
        )
        for child in node.children
    )
