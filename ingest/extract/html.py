"""HTML to markdown: the page's main content, with the site's own section ids. Pure.

1. **Main content.** The first of `<article>` (when the page has exactly one), `[role=main]`,
   `<main>`, or a documentation generator's content container (Sphinx `div.body`, MkDocs
   Material `.md-content`, Docusaurus `.theme-doc-markdown`, Read the Docs `.rst-content`,
   GitHub `.markdown-body`, ...) is the root; without any, the root is found by text density:
   from `<body>`, step into the child that holds most of the non-link text while it holds at
   least `DENSITY_SHARE` of it. Everything outside the root is chrome and never read.
2. **Chrome inside the root** goes too: `nav`, `aside`, `footer`, forms, a `header` that holds
   no heading (some generators put the page's `<h1>` in a `<header>` inside the article), and
   elements whose class names a known piece of chrome (`CHROME_CLASSES`).
3. **Headings as the site has them.** Permalink marks (`a.headerlink`, `a.anchor`,
   `a.hash-link`, links whose text is `¶`, `#`, `§` or an icon) are removed from heading text,
   and their `#fragment` is remembered. A heading is written `## Text {#id}` with the id the page
   itself gives the section: the heading's `id`, its permalink's fragment, the enclosing
   `<section>`'s id, or the id of an empty marker just before it. The chunker turns that into
   the chunk's anchor, so citations open the right place on the real site.
4. **Links as data.** The text keeps a link's words, never its URL; the outgoing URLs are
   returned in `Extracted.links` (the crawl follows them; the document keeps them).
5. Code blocks keep their language from `class="language-x"`, `lang-x`, Sphinx's
   `div.highlight-x`, GitHub's `highlight-source-x` or `data-lang`.

Entities are decoded by the parser only after tags are gone, so `&lt;b&gt;` stays text.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

from bs4 import BeautifulSoup, Comment, NavigableString, Tag
from bs4.element import PreformattedString

from ingest.errors import EmptyContent
from ingest.extract.text import normalise_text

DROP_ALWAYS = {
    "script", "style", "noscript", "template", "svg", "iframe", "button", "input", "select",
    "textarea", "canvas", "object", "embed", "form", "link", "meta",
}
DROP_IN_CONTENT = {"nav", "aside", "footer"}
BLOCK_TAGS = {
    "p", "div", "section", "article", "main", "body", "html", "figure", "figcaption", "dl",
    "dd", "dt", "details", "summary", "address", "center", "header",
}
HEADINGS = {f"h{n}": n for n in range(1, 7)}
NOT_LINKS = ("javascript:", "data:", "vbscript:", "mailto:")  # hrefs that are not pages to link to
# documentation generators' content containers, most specific first
CONTENT_CLASSES = (
    "md-content", "theme-doc-markdown", "rst-content", "markdown-body", "body", "document",
    "content", "post-content", "entry-content", "article-content",
)
CHROME_CLASSES = {
    "headerlink", "sphinxsidebar", "related", "breadcrumb", "breadcrumbs", "wy-breadcrumbs",
    "md-source-file", "md-content__button", "edit-this-page", "theme-edit-this-page",
    "theme-doc-footer", "pagination-nav", "md-footer", "rst-footer-buttons", "linenos",
    "lineno", "toc-drawer", "cookie-banner", "cookie-consent", "skip-link",
    "visually-hidden", "sr-only", "copybutton", "prev-next-area",
}
PERMALINK_CLASSES = {"headerlink", "anchor", "hash-link", "anchorjs-link", "heading-anchor",
                     "anchor-link", "permalink", "header-anchor", "toclink"}
PERMALINK_MARKS = {"", "¶", "#", "§", "🔗", "link", "permalink", "\u200b", "\u00b6"}
TITLE_SEPARATORS = (" — ", " – ", " - ", " | ", " · ", " :: ")
DENSITY_SHARE = 0.6
DENSITY_CONTAINERS = {"div", "section", "article", "main", "table", "tbody", "tr", "td", "center", "body", "html"}
LANGUAGE_PREFIXES = ("language-", "lang-", "highlight-source-", "highlight-")
PLAIN_LANGUAGES = {"none", "text", "default-text", "plain", "nohighlight"}


@dataclass(frozen=True)
class HtmlPage:
    title: str
    content: str  # markdown
    links: tuple[str, ...]  # absolute http(s) URLs of the content's links, fragments removed


def html_to_markdown(body: bytes, *, charset: str | None = None, url: str = "",
                     fallback_title: str = "") -> HtmlPage:
    soup = BeautifulSoup(body, "html.parser", from_encoding=charset)
    if soup.original_encoding is None and isinstance(body, bytes) and not soup.get_text(strip=True):
        raise EmptyContent("The HTML has no readable text.")
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
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
    _drop_chrome(root)
    h1 = root.find("h1")
    title = _title(page_title, _heading_text(h1) if h1 else "") or fallback_title
    renderer = _Renderer(base)
    content = renderer.render(root)
    return HtmlPage(title=title, content=normalise_text(content), links=tuple(dict.fromkeys(renderer.links)))


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


def inline_text(text: str) -> str:
    return " ".join(text.split())


def content_root(soup: BeautifulSoup) -> Tag:
    """The element that holds the page's main content (see the module docstring, point 1)."""
    articles = soup.find_all("article")
    if len(articles) == 1 and _text_length(articles[0]) > 0:
        return articles[0]
    for candidate in (soup.find(attrs={"role": "main"}), soup.find("main")):
        if candidate is not None and _text_length(candidate) > 0:
            return candidate
    for name in CONTENT_CLASSES:
        found = soup.find(class_=name)
        if isinstance(found, Tag) and found.name not in ("body", "html") and _text_length(found) > 0:
            return found
    return _densest(soup.find("body") or soup)


def _text_length(tag: Tag) -> int:
    return len(tag.get_text(strip=True))


def _densest(body: Tag) -> Tag:
    """Step from `body` into the child holding most of the non-link text while that child holds
    at least DENSITY_SHARE of it. One post-order pass computes every element's length."""
    lengths: dict[int, int] = {}

    def measure(node: Tag) -> int:
        total = 0
        for child in node.children:
            if isinstance(child, PreformattedString):
                continue
            if isinstance(child, NavigableString):
                total += len(child.strip()) if node.name != "a" else 0
            elif isinstance(child, Tag):
                total += measure(child)
        lengths[id(node)] = total
        return total

    measure(body)
    node = body
    while True:
        children = [c for c in node.children if isinstance(c, Tag) and c.name in DENSITY_CONTAINERS]
        if not children:
            return node
        best = max(children, key=lambda c: lengths.get(id(c), 0))
        if lengths.get(id(best), 0) < DENSITY_SHARE * max(1, lengths.get(id(node), 0)):
            return node
        node = best


def _drop_chrome(root: Tag) -> None:
    for tag in root.find_all(DROP_IN_CONTENT):
        tag.decompose()
    for header in root.find_all("header"):
        if not header.find(HEADINGS):
            header.decompose()
    for tag in root.find_all(class_=lambda c: c is not None):
        if tag.decomposed:
            continue
        classes = set(tag.get("class") or ())
        if classes & CHROME_CLASSES and tag.name not in HEADINGS:
            if tag.name == "a" and classes & PERMALINK_CLASSES:
                continue  # permalinks are read (for their fragment) and removed with the heading
            tag.decompose()


def _title(page_title: str, h1: str) -> str:
    """The page's `<title>` without the site name that generators append after a separator."""
    if h1 and page_title.lower().startswith(h1.lower()) and page_title[len(h1):].startswith(TITLE_SEPARATORS):
        return h1
    return page_title or h1


def _permalinks(heading: Tag) -> list[Tag]:
    found = []
    for anchor in heading.find_all("a"):
        classes = set(anchor.get("class") or ())
        text = anchor.get_text(strip=True)
        href = (anchor.get("href") or "").strip()
        if classes & PERMALINK_CLASSES or (href.startswith("#") and text in PERMALINK_MARKS):
            found.append(anchor)
        elif anchor.get("aria-hidden") == "true" and text in PERMALINK_MARKS:
            found.append(anchor)
    return found


def _heading_text(heading: Tag) -> str:
    parts = []
    permalinks = {id(a) for a in _permalinks(heading)}
    for node in heading.descendants:
        if isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            if not any(id(parent) in permalinks for parent in node.parents if parent is not heading):
                parts.append(str(node))
    return inline_text("".join(parts))


def heading_id(heading: Tag) -> str:
    """The id the page gives this heading's section (module docstring, point 3)."""
    if heading.get("id"):
        return heading["id"].strip()
    for anchor in _permalinks(heading):
        fragment = (anchor.get("href") or "").strip()
        if fragment.startswith("#") and len(fragment) > 1:
            return fragment[1:]
        if anchor.get("id"):
            return anchor["id"].strip()
    wrapper = heading.parent
    if isinstance(wrapper, Tag) and wrapper.name != "section" and "heading" in " ".join(wrapper.get("class") or ()):
        for anchor in wrapper.find_all("a", recursive=False):  # GitHub: <div class="markdown-heading">
            fragment = (anchor.get("href") or "").strip()
            if fragment.startswith("#") and len(fragment) > 1:
                return fragment[1:]
    parent = heading.parent
    if isinstance(parent, Tag) and parent.name == "section" and parent.get("id"):
        if parent.find(HEADINGS) is heading:
            return parent["id"].strip()
    previous = heading.find_previous_sibling()
    if isinstance(previous, Tag) and previous.name in ("a", "span") and previous.get("id") \
            and not previous.get_text(strip=True):
        return previous["id"].strip()
    return ""


def code_language(pre: Tag) -> str:
    """The language a generator wrote on the block, on `<code>`, `<pre>` or a wrapping div."""
    candidates = [pre.find("code"), pre]
    candidates += [parent for _, parent in zip(range(3), pre.parents)]
    for candidate in candidates:
        if not isinstance(candidate, Tag):
            continue
        if candidate.get("data-lang"):
            return _language_name(candidate["data-lang"])
        for cls in candidate.get("class") or ():
            for prefix in LANGUAGE_PREFIXES:
                if cls.startswith(prefix) and len(cls) > len(prefix):
                    return _language_name(cls[len(prefix):])
        classes = candidate.get("class") or ()
        if "sourceCode" in classes and len(classes) > 1:  # pandoc
            return _language_name([c for c in classes if c != "sourceCode"][0])
    return ""


def _language_name(name: str) -> str:
    name = name.strip().lower()
    if name in PLAIN_LANGUAGES:
        return ""
    if name in ("default", "python3", "py"):
        return "python"  # Sphinx's "default" highlighter is Python 3
    return "".join(c for c in name if c.isalnum() or c in "+#.-_")


class _Renderer:
    """Recursive HTML-to-markdown writer producing blocks separated by blank lines."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.links: list[str] = []

    def render(self, node) -> str:
        return self.blocks(node).strip() + "\n"

    def blocks(self, node) -> str:
        parts: list[str] = []
        inline: list[str] = []

        def flush():
            text = inline_text("".join(inline))
            if text:
                parts.append(text)
            inline.clear()

        for child in node.children:
            if isinstance(child, PreformattedString):
                continue  # doctype, CDATA, processing instructions: not page text
            if isinstance(child, NavigableString):
                inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name
            if name in HEADINGS:
                flush()
                parts.append(self.heading(child))
            elif name == "pre":
                flush()
                parts.append(self.code_block(child))
            elif name in ("ul", "ol"):
                flush()
                parts.append(self.list_block(child, 0))
            elif name == "table":
                flush()
                parts.append(self.table(child))
            elif name == "blockquote":
                flush()
                quoted = self.blocks(child).strip()
                parts.append("\n".join("> " + line if line else ">" for line in quoted.splitlines()))
            elif name == "hr":
                flush()
                parts.append("---")
            elif name in BLOCK_TAGS or name in ("li",):
                flush()
                inner = self.blocks(child).strip()
                if inner:
                    parts.append(inner)
            else:
                inline.append(self.inline_tag(child))
        flush()
        return "\n\n".join(p for p in parts if p.strip())

    def heading(self, tag: Tag) -> str:
        text = _heading_text(tag)
        if not text:
            return ""
        identifier = heading_id(tag)
        suffix = f" {{#{identifier}}}" if identifier and not any(c.isspace() or c in "{}" for c in identifier) else ""
        return "#" * HEADINGS[tag.name] + " " + text + suffix

    def inline(self, node) -> str:
        out = []
        for child in node.children:
            if isinstance(child, PreformattedString):
                continue
            if isinstance(child, NavigableString):
                out.append(str(child))
            elif isinstance(child, Tag):
                out.append(self.inline_tag(child))
        return "".join(out)

    def inline_tag(self, tag: Tag) -> str:
        name = tag.name
        if name == "br":
            return "\n"
        if name == "code":
            text = tag.get_text()
            fence = "``" if "`" in text else "`"
            return f"{fence}{text}{fence}" if text.strip() else text
        if name == "a":
            self._remember_link(tag.get("href") or "")
            return self.inline(tag)
        if name in ("strong", "b"):
            text = inline_text(self.inline(tag))
            return f"**{text}**" if text else ""
        if name in ("em", "i"):
            text = inline_text(self.inline(tag))
            return f"*{text}*" if text else ""
        if name == "img":
            alt = inline_text(tag.get("alt", ""))
            return f"[image: {alt}]" if alt else ""
        if name in HEADINGS or name in BLOCK_TAGS or name in ("ul", "ol", "table", "pre"):
            return " " + self.blocks(tag) + " "
        return self.inline(tag)

    def _remember_link(self, href: str) -> None:
        href = href.strip()
        if not href or href.startswith("#") or href.lower().startswith(NOT_LINKS):
            return
        target = urldefrag(urljoin(self.base_url, href) if self.base_url else href)[0]
        if urlsplit(target).scheme in ("http", "https"):
            self.links.append(target)

    def code_block(self, pre: Tag) -> str:
        language = code_language(pre)
        text = pre.get_text().strip("\n")
        longest = _longest_backtick_run(text)
        fence = "`" * max(3, longest + 1)
        return f"{fence}{language}\n{text}\n{fence}"

    def list_block(self, node: Tag, depth: int) -> str:
        lines = []
        ordered = node.name == "ol"
        for index, item in enumerate(node.find_all("li", recursive=False), start=1):
            marker = f"{index}." if ordered else "-"
            nested = []
            inline_parts = []
            for child in item.children:
                if isinstance(child, Tag) and child.name in ("ul", "ol"):
                    nested.append(self.list_block(child, depth + 1))
                elif isinstance(child, Tag) and child.name == "pre":
                    nested.append(self.code_block(child))
                elif isinstance(child, PreformattedString):
                    continue
                elif isinstance(child, NavigableString):
                    inline_parts.append(str(child))
                elif isinstance(child, Tag):
                    inline_parts.append(self.inline_tag(child))
            text = inline_text("".join(inline_parts))
            lines.append("  " * depth + f"{marker} {text}".rstrip())
            lines.extend(nested)
        return "\n".join(lines)

    def table(self, table: Tag) -> str:
        rows = []
        for tr in table.find_all("tr"):
            cells = [inline_text(self.inline(c)).replace("|", "\\|") for c in tr.find_all(["th", "td"])]
            if cells:
                rows.append(cells)
        return markdown_table(rows)


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a markdown table, the first row as its header."""
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest
