"""HTML to markdown: the page's main content, with the site's own section ids. Pure.

1. **Main content.** The first of `<article>` (when the page has exactly one), `[role=main]`,
   `<main>`, a generator's known structure (AsciiDoc and Asciidoctor: the parent of `#header`
   and `#content`, without `#footer` and `#toc`), a container by id (`CONTENT_IDS`: Node's
   `#apicontent`, `#main-content`, ..., `#content`) or by class (`CONTENT_CLASSES`: Sphinx
   `div.body`, MkDocs Material `.md-content`, Docusaurus `.theme-doc-markdown`, Read the Docs
   `.rst-content`, GitHub `.markdown-body`, ...) is the root, if it holds at least
   `CONTAINER_SHARE` of the page's non-link text (AsciiDoc puts class `content` on every listing
   block: the first one is no container), not counting the text of what the page marks as its
   frame beside it (navigation, sidebars, footers): on a short page the site's footer must not
   outweigh the page's own `role=main`, or the whole body, menu bars and all, is read. Without
   any, the root is found by text density: from `<body>`, step into the child that holds most of
   the non-link text while it holds at least `DENSITY_SHARE` of it, no sibling holds content
   comparable to it (`SIBLING_SHARE`) and no heading stands beside it; so the sections of a
   DocBook reference page stay together.
   Everything outside the root is chrome and never read. Pages are parsed with lxml, which
   closes what HTML lets authors leave open (man2html's `<dd>`s and `<p>`s) instead of nesting
   every following element hundreds deep; a heading's end tag is first made to match the heading
   it ends (`close_headings`: browsers end the open heading at any `</hN>`, libxml2 ignores a
   mismatched one). An inline or unknown element around blocks (`<language-id>` unescaped in a
   page's text) is read through: its headings, code and lists stay blocks.
2. **Chrome inside the root** goes too: `nav`, `aside` (but footnotes and asides of prose),
   `footer`, forms, a `header` that holds no heading (some generators put the page's `<h1>` in a
   `<header>` inside the article), and elements whose class names a known piece of chrome (`CHROME_CLASSES`).
3. **Headings as the site has them.** Permalink marks (`a.headerlink`, `a.anchor`,
   `a.hash-link`, links whose text is `¶`, `#`, `§` or an icon) are removed from heading text,
   and their `#fragment` is remembered; outside headings (a `¶` on a definition, Sphinx's
   `[source]`) they are removed. A heading is written `## Text {#id}` with the id the page
   itself gives the section: the heading's `id`, its permalink's fragment, an empty `<a id>` or
   `<a name>` inside it or just before it (texi2html, man2html, Javadoc), or the id of the
   wrapper it opens (a `<section>`, DocBook's `div.refsect1`). The chunker turns that into
   the chunk's anchor, so citations open the right place on the real site. A definition term
   with an id of its own and a permalink to it (Sphinx's described functions, classes, options
   and glossary terms; Texinfo's definitions) is a heading too, one level below the heading
   it is under and one more per definition it is described in: each described object is a
   section, cited at its own id (`titled_definitions`). An id the page does not have is
   never written (a citation must open where it says), and a "heading" longer than
   `MAX_HEADING_CHARS` is written as the text it holds.
4. **Links as data.** The text keeps a link's words, never its URL; the outgoing URLs are
   returned in `Extracted.links` (the crawl follows them; the document keeps them).
5. Code blocks keep their language from `class="language-x"`, `lang-x`, Sphinx's
   `div.highlight-x`, GitHub's `highlight-source-x` or `data-lang`.

Entities are decoded by the parser only after tags are gone, so `&lt;b&gt;` stays text. This
module finds the content (points 1 and 2); `html_markdown.py` writes it (points 3 to 5).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Comment, NavigableString, Tag, XMLParsedAsHTMLWarning
from bs4.element import PreformattedString

from ingest.errors import EmptyContent
from ingest.extract.html_markdown import (
    HEADINGS,
    PERMALINK_CLASSES,
    MarkdownRenderer,
    heading_text,
    inline_text,
    is_layout_table,
    own_rows,
)
from ingest.extract.text import normalise_text

DROP_ALWAYS = {
    "script", "style", "noscript", "template", "svg", "iframe", "button", "input", "select",
    "textarea", "canvas", "object", "embed", "form", "link", "meta",
}
DROP_IN_CONTENT = {"nav", "aside", "footer"}
CONTENT_CLASSES = (
    "md-content", "theme-doc-markdown", "rst-content", "markdown-body", "body", "document",
    "content", "post-content", "entry-content", "article-content",
)
CHROME_CLASSES = {
    "headerlink", "sphinxsidebar", "breadcrumb", "breadcrumbs", "wy-breadcrumbs",
    "md-source-file", "md-content__button", "edit-this-page", "theme-edit-this-page",
    "theme-doc-footer", "pagination-nav", "md-footer", "rst-footer-buttons", "linenos",
    "lineno", "toc-drawer", "cookie-banner", "cookie-consent", "skip-link",
    "visually-hidden", "sr-only", "copybutton", "prev-next-area", "viewcode-link", "viewcode-back",
    "nav-panel",
}
TITLE_SEPARATORS = (" — ", " – ", " - ", " | ", " · ", " :: ")
DENSITY_SHARE = 0.6
SIBLING_SHARE = 0.1  # siblings holding this much of the densest child's text are content too
SIBLING_MIN_CHARS = 200
CONTAINER_SHARE = 0.3  # a named container holds at least this share of the page's non-link text outside its frame
CONTENT_IDS = ("apicontent", "main-content", "maincontent", "doc-content", "page-content", "main", "content")
CHROME_ID_WORDS = ("nav", "menu", "sidebar", "footer", "breadcrumb", "toc", "header")
DENSITY_CONTAINERS = {"div", "section", "article", "main", "table", "tbody", "tr", "td", "center", "body", "html"}


@dataclass(frozen=True)
class HtmlPage:
    title: str
    content: str  # markdown
    links: tuple[str, ...]  # absolute http(s) URLs of the content's links, fragments removed


def html_to_markdown(body: bytes, *, charset: str | None = None, url: str = "",
                     fallback_title: str = "") -> HtmlPage:
    with warnings.catch_warnings():  # XHTML pages are HTML to us: lxml's HTML parser reads them well
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
    _drop_chrome(root)
    code_lines(root)
    h1 = root.find("h1")
    title = _title(page_title, heading_text(h1) if h1 else "") or fallback_title
    renderer = MarkdownRenderer(base, page_ids)
    content = renderer.render(root)
    return HtmlPage(title=title, content=normalise_text(content), links=tuple(dict.fromkeys(renderer.links)))


def _scanner(kind: type) -> dict[str, object]:
    text = (lambda value: value.encode()) if kind is bytes else (lambda value: value)
    return {
        "tag": re.compile(text(r"<(/?)h([1-6])(?=[\s/>])[^<>]*>|<!--|<(script|style)(?=[\s/>])"), re.I),
        "script": re.compile(text(r"</script"), re.I), "style": re.compile(text(r"</style"), re.I),
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
            found = scan[raw_text.lower() if isinstance(raw_text, str) else raw_text.decode().lower()].search(
                body, position)
            position = found.start() if found else len(body)
        elif match.group(2) is None:  # a comment
            found = body.find(scan["comment_end"], position)
            position = found + 3 if found >= 0 else len(body)
        elif not match.group(1):
            open_level = match.group(2)
        elif open_level is not None:
            if match.group(2) != open_level:
                pieces += [body[start:match.start(2)], open_level]
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


def content_root(soup: BeautifulSoup) -> Tag:
    """The element that holds the page's main content (see the module docstring, point 1)."""
    body = soup.find("body") or soup
    lengths = _text_lengths(body)
    whole = lengths.get(id(body), 0)
    frame: list[list[Tag]] = []  # found once, and only for a candidate that falls short of the whole page

    def holds_content(tag) -> bool:
        if not isinstance(tag, Tag):
            return False
        own = lengths.get(id(tag), 0)
        if own >= CONTAINER_SHARE * max(1, whole):
            return True
        if not frame:
            frame.append(_outer_chrome(body))
        around = set(map(id, tag.parents))  # chrome that encloses the candidate is not beside it
        beside = sum(lengths.get(id(c), 0) for c in frame[0]
                     if id(c) not in around and not any(p is tag for p in c.parents))
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
    """The outermost elements the page marks as its frame (`_is_chrome`, or a footer by its
    ARIA role or class), in one walk that does not enter them."""
    found, stack = [], [body]
    while stack:
        node = stack.pop()
        for child in node.children:
            if not isinstance(child, Tag):
                continue
            if _is_chrome(child) or _footer(child):
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
    if isinstance(content, Tag) and isinstance(header, Tag) and content.parent is header.parent \
            and content.parent is not None and header.find("h1") is not None and not _link_dense(header):
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
    header = contents.find_previous_sibling("div", class_="header") if isinstance(contents, Tag) else None
    if not isinstance(header, Tag) or header.find(class_="headertitle") is None:
        return None
    title = header.find(class_="title")
    if isinstance(title, Tag) and title.find(HEADINGS) is None:
        title.name = "h1"
        for line in reversed(title.find_all("div")):  # the groups the page belongs to: a line under the title
            line.name = "p"
            title.insert_after(line.extract())
    for part in header.find_all("div"):
        if not part.decomposed and part is not title and part not in title.parents and _link_dense(part):
            part.decompose()
    root = soup.new_tag("div")
    header.insert_before(root)
    root.append(header.extract())
    root.append(contents.extract())
    return root


def titled_definitions(root: Tag) -> None:
    """Each `<dt>` that carries an id and a permalink to it, and each paragraph that opens with
    an `<a id>` and holds a permalink to it (Haddock's declarations, `p.src`), becomes a
    heading (module docstring, point 3): a level below the last heading before it, plus one per
    enclosing `<dd>` (a method described inside its class)."""
    level = 1
    for tag in root.find_all(["h1", "h2", "h3", "h4", "h5", "h6", "dt", "p"]):
        if tag.name in HEADINGS:
            level = HEADINGS[tag.name]
        elif _self_linked(tag):
            depth = sum(1 for parent in tag.parents if parent.name == "dd")
            tag.name = f"h{min(6, level + 1 + depth)}"


def _self_linked(term: Tag) -> bool:
    identifier = (term.get("id") or "").strip()
    if not identifier and term.name == "p":
        first = next((child for child in term.children if isinstance(child, Tag)), None)
        identifier = (first.get("id") or "").strip() if first is not None and first.name == "a" else ""
    return bool(identifier) and any(
        (a.get("href") or "").strip() == f"#{identifier}" and _prose_permalink(a) for a in term.find_all("a"))


def code_lines(root: Tag) -> None:
    """Doxygen draws code as a `div.fragment` of one `div.line` per line (the line numbers
    already dropped as chrome): a code block, one line each, not a paragraph per line."""
    for fragment in root.find_all("div", class_="fragment"):
        lines = [c for c in fragment.children if isinstance(c, Tag)]
        if not lines or any(c.name != "div" or "line" not in (c.get("class") or ()) for c in lines):
            continue
        text = "\n".join(line.get_text().removeprefix("\xa0").rstrip() for line in lines)
        fragment.clear()
        fragment.name = "pre"
        fragment.append(text)


def _link_dense(tag: Tag) -> bool:
    """Mostly link text: a site's banner with its menu, not a document's title block."""
    total = len(tag.get_text(strip=True))
    linked = sum(len(a.get_text(strip=True)) for a in tag.find_all("a"))
    return total > 0 and linked >= 0.5 * total


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
        siblings = sum(_reader_length(c, lengths) for c in node.children if isinstance(c, Tag) and c is not best
                       and not _is_chrome(c))
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
    if tag.name in DENSITY_CONTAINERS | {"ul", "ol", "dl"} and tag.find(["li", "dd", "td"]) is not None:
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
            if article not in heading.parents and not any(_is_chrome(p) for p in heading.parents if p is not parent
                                                          and parent in p.parents):
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
    return any(isinstance(child, Tag) and child is not best and (child.name in HEADINGS or (
        child.name in DENSITY_CONTAINERS and not _is_chrome(child) and child.find(HEADINGS) is not None))
        for child in node.children)


ASIDE_PARAGRAPH_WORDS = 12


def _prose_aside(tag: Tag) -> bool:
    """An `<aside>` in the content that holds a paragraph of prose, not links, is the document's
    own (docutils' "topic" and "sidebar" directives: an abstract, a summary); a related-links
    box or a table of contents is mostly links, a label is not a paragraph."""
    return tag.name == "aside" and not _link_dense(tag) and any(
        len(p.get_text().split()) >= ASIDE_PARAGRAPH_WORDS for p in tag.find_all("p"))


def _footnotes(tag: Tag) -> bool:
    """Footnotes are content, even in an `<aside>` (Sphinx, pandoc, DPUB-ARIA)."""
    if tag.name != "aside":
        return False
    marks = " ".join([*(tag.get("class") or ()), tag.get("role") or "", tag.get("epub:type") or ""]).lower()
    return "footnote" in marks or "endnote" in marks


def _is_chrome(tag: Tag) -> bool:
    if tag.name in DROP_IN_CONTENT or tag.name == "header" and not tag.find(HEADINGS):
        return True
    if tag.get("role") == "navigation":
        return True
    classes = set(tag.get("class") or ())
    return bool(classes & CHROME_CLASSES) or any(word in (tag.get("id") or "").lower() for word in CHROME_ID_WORDS)


def _drop_chrome(root: Tag) -> None:
    for tag in root.find_all(DROP_IN_CONTENT):
        if not tag.decomposed and not _footnotes(tag) and not _prose_aside(tag):
            tag.decompose()
    for tag in root.find_all(attrs={"role": "navigation"}):
        if not tag.decomposed and tag.find(HEADINGS) is None:
            tag.decompose()  # what the page itself marks as navigation (Sphinx's "related" bars)
    for header in root.find_all("header"):
        if not header.find(HEADINGS):
            header.decompose()
    for tag in root.find_all(class_=lambda c: c is not None):
        if tag.decomposed:
            continue
        classes = set(tag.get("class") or ())
        if classes & CHROME_CLASSES and tag.name not in HEADINGS:
            if tag.name == "a" and classes & PERMALINK_CLASSES and tag.find_parent(HEADINGS) is not None:
                continue  # a heading's permalink is read (for its fragment) and removed with the heading
            tag.decompose()
    for tag in root.find_all(["div", "table", "p"]):
        if not tag.decomposed and _manual_navigation(tag):
            tag.decompose()
    _drop_page_repeats(root)
    for anchor in root.find_all("a"):
        if not anchor.decomposed and _prose_permalink(anchor) and (
                anchor.find_parent(HEADINGS) is None or anchor.get_text(strip=True).lower() in SOURCE_MARKS):
            anchor.decompose()  # a heading's `#` is read for its fragment later; its "Source" link goes now


SAMPLE_ITEMS = 50  # items of a list looked up elsewhere on the page: enough to tell, linear in the page
SAMPLE_DETAILS = 3


def _drop_page_repeats(root: Tag) -> None:
    """What repeats the page itself, by what it holds, not by who generated it: a list of links to
    the page's own sections and nothing else (a table of contents: its headings follow), and a
    collapsed `<details>` whose every item is written out again on the page (Haddock's synopsis
    of the declarations documented below it)."""
    page_text = None
    collapsed = [d for d in root.find_all("details") if not d.has_attr("open") and d.find("li") is not None]
    for details in collapsed[:SAMPLE_DETAILS]:  # a page's synopsis is one: a bound keeps the lookups linear
        if details.decomposed:
            continue
        items = [" ".join(li.get_text(" ").split()) for li in details.find_all("li")[:SAMPLE_ITEMS]]
        if len(items) < 3 or not all(items):
            continue
        if page_text is None:
            page_text = " ".join(root.get_text(" ").split())
        if all(page_text.count(item) >= 2 for item in items):
            details.decompose()
    for listing in root.find_all(["ul", "ol"]):
        if not listing.decomposed and listing.find_parent(["ul", "ol"]) is None and _contents_list(listing):
            listing.decompose()


def _contents_list(listing: Tag) -> bool:
    items = listing.find_all("li")
    if len(items) < 3:
        return False
    for item in items:
        links = item.find_all("a", recursive=False)
        own_text = "".join(str(c) for c in item.children if isinstance(c, NavigableString)).strip()
        if len(links) != 1 or own_text or not (links[0].get("href") or "").startswith("#"):
            return False
    return True


NAV_LABELS = ("next:", "previous:", "prev:", "up:", "[ < ]", "[ > ]", "[ << ]", "[<]", "[>]",
              "[ contents ]", "[ index ]")  # a node without Next, Previous or Up: `[Contents][Index]` alone
SOURCE_MARKS = {"[source]", "source", "[src]"}


def _manual_navigation(tag: Tag) -> bool:
    """Texinfo's "Next: ..., Previous: ..., Up: ... [Contents][Index]" line (makeinfo) and its
    "[ < ] [ > ] [ Up ]" button bar (texi2html): text that opens with a navigation label and
    is mostly links."""
    if tag.find(HEADINGS) is not None or tag.find("pre") is not None:
        return False
    text = " ".join(tag.get_text(" ").split())
    if not text or len(text) > 300 or not text.lower().startswith(NAV_LABELS):
        return False
    linked = sum(len(a.get_text(strip=True)) for a in tag.find_all("a"))
    letters = sum(1 for c in text if not c.isspace())
    return linked >= 0.4 * letters or text.startswith("[")


def _prose_permalink(anchor: Tag) -> bool:
    """A `¶` link on a definition or a paragraph (Sphinx's "Link to this definition"), or a
    `[source]` link to the highlighted module: marks, not text."""
    text = anchor.get_text(strip=True)
    href = (anchor.get("href") or "").strip()
    classes = set(anchor.get("class") or ())
    if classes & PERMALINK_CLASSES or (href.startswith("#") and text in ("¶", "\u00b6", "§", "#", "🔗")):
        return True
    return text.lower() in SOURCE_MARKS and (
        "_modules/" in href or href.startswith("src/") or anchor.find(class_="viewcode-link") is not None)


def _title(page_title: str, h1: str) -> str:
    """The page's `<title>` without the site name that generators append after a separator."""
    if h1 and page_title.lower().startswith(h1.lower()) and page_title[len(h1):].startswith(TITLE_SEPARATORS):
        return h1
    return page_title or h1


