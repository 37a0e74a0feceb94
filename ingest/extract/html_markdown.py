"""The main content of a page, as markdown: headings with the site's own ids, code blocks with
their language, tables, lists and links as data (see `ingest/extract/html.py`, points 3-5). Pure."""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin, urlsplit

from bs4 import NavigableString, Tag
from bs4.element import PreformattedString

NOT_LINKS = ("javascript:", "data:", "vbscript:", "mailto:")  # hrefs that are not pages to link to
# documentation generators' content containers, most specific first
HEADINGS = {f"h{n}": n for n in range(1, 7)}
BLOCK_TAGS = {
    "p", "div", "section", "article", "main", "body", "html", "figure", "figcaption", "dl",
    "dd", "dt", "details", "summary", "address", "center", "header",
}
PERMALINK_CLASSES = {"headerlink", "anchor", "hash-link", "anchorjs-link", "heading-anchor",
                     "anchor-link", "permalink", "header-anchor", "toclink"}
PERMALINK_MARKS = {"", "¶", "#", "§", "🔗", "link", "permalink", "\u200b"}
ITEM_BLOCKS = {"p", "pre", "ul", "ol", "table", "dl", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6",
               "div", "section", "figure", "details"}
LANGUAGE_PREFIXES = ("language-", "lang-", "highlight-source-", "highlight-")
PLAIN_LANGUAGES = {"none", "text", "default-text", "plain", "nohighlight"}


def inline_text(text: str) -> str:
    return " ".join(text.split())


def permalinks(heading: Tag) -> list[Tag]:
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


def heading_text(heading: Tag) -> str:
    parts = []
    marks = {id(a) for a in permalinks(heading)}
    for node in heading.descendants:
        if isinstance(node, Tag) and node.name == "br":
            parts.append(" ")  # Javadoc: <h2>Uses of Class<br>net.example.Foo</h2>
        elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            if not any(id(parent) in marks for parent in node.parents if parent is not heading):
                parts.append(str(node))
    return inline_text("".join(parts))


def heading_id(heading: Tag) -> str:
    """The id the page gives this heading's section (module docstring, point 3)."""
    if heading.get("id"):
        return heading["id"].strip()
    for anchor in permalinks(heading):
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
    for marker in heading.find_all(["a", "span"]):  # DocBook: <h2><a id="x"></a>Title</h2>
        if not marker.get_text(strip=True) and _target(marker):
            return _target(marker)
    return _enclosing_id(heading)


ANCESTOR_LEVELS = 8  # how far up a wrapper's id or a preceding <a name> is looked for


def _target(tag: Tag) -> str:
    value = tag.get("id") or (tag.get("name") if tag.name == "a" else "") or ""
    return value.strip()


def _enclosing_id(heading: Tag) -> str:
    """The id of the element the heading opens: going up while the heading is the first
    heading and the first text of each wrapper, a wrapper's own id (a DocBook `div.refsect1`, a
    `<section>`), or an empty marker just before it (`<a name>` of texi2html, man2html, Javadoc)."""
    node = heading
    for _ in range(ANCESTOR_LEVELS):
        marker = _marker_before(node)
        if marker:
            return marker
        parent = node.parent
        if not isinstance(parent, Tag) or parent.name in ("body", "html", "[document]"):
            return ""
        if parent.find(HEADINGS) is not heading or _text_before(parent, heading):
            return ""
        if parent.get("id") and parent.name not in ("main", "article"):
            return parent["id"].strip()
        node = parent
    return ""


def _marker_before(node: Tag) -> str:
    """An empty `<a name>`/`<a id>`/`<span id>` right before the node, with nothing but
    whitespace between (it may close an unclosed paragraph, as man2html's do)."""
    for steps, element in enumerate(node.previous_elements):
        if steps > 12:
            return ""
        if isinstance(element, NavigableString):
            if element.strip() and not (isinstance(element.parent, Tag) and element.parent.name in ("a", "span")
                                        and not element.parent.get_text(strip=True)):
                return ""
            continue
        if isinstance(element, Tag):
            if element.name in ("a", "span") and _target(element) and not element.get_text(strip=True):
                return _target(element)
            if element.name in ("a", "span") and not element.get_text(strip=True):
                continue
            if element.get_text(strip=True) or element.name in HEADINGS:
                return ""
    return ""


def _text_before(parent: Tag, heading: Tag) -> bool:
    for text in parent.find_all(string=True):
        if heading in text.parents:
            return False
        if text.strip() and not isinstance(text, PreformattedString):
            return True
    return False


def code_language(pre: Tag) -> str:
    """The language a generator wrote on the block, on `<code>`, `<pre>` or a wrapping div."""
    candidates = [pre.find("code"), pre]
    candidates += [parent for _, parent in zip(range(3), pre.parents, strict=False)]
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


INLINE_MARKS = {"code", "strong", "b", "em", "i"}
STRUCTURE = {"h1", "h2", "h3", "h4", "h5", "h6", "pre", "ul", "ol", "table", "blockquote", "hr"}
MAX_HEADING_CHARS = 300  # a longer "heading" is an unclosed one that swallowed what follows: written as text


BREAK = "\x00br\x00"  # a line break a literal layout keeps, through inline_text's joining of spaces
LITERAL_CLASSES = ("literallayout", "line-block", "address")


def _keeps_line_breaks(tag) -> bool:
    """Markup that sets its text line by line: a class naming a literal layout, `<address>`, or
    an inline `white-space: pre`/`pre-line`/`pre-wrap` style."""
    if not isinstance(tag, Tag):
        return False
    if tag.name == "address" or any(c in LITERAL_CLASSES for c in tag.get("class") or ()):
        return True
    return "white-space:pre" in (tag.get("style") or "").replace(" ", "").lower()


def _inside_word(tag: Tag) -> bool:
    """An inline element glued to a letter or digit on either side is part of a word: written
    as markdown (`` *`N`*th ``) it would read as two words, to search and to a reader alike."""
    before, after = tag.previous_sibling, tag.next_sibling
    before = before.get_text() if isinstance(before, Tag) else str(before or "")
    after = after.get_text() if isinstance(after, Tag) else str(after or "")
    return bool(before and _WORD_END.search(before)) or bool(after and _WORD_START.match(after))


_WORD_END = re.compile(r"\w$")
_WORD_START = re.compile(r"\w")


class MarkdownRenderer:
    """Recursive HTML-to-markdown writer producing blocks separated by blank lines."""

    def __init__(self, base_url: str, page_ids: frozenset[str] | None = None):
        self.base_url = base_url
        self.links: list[str] = []
        self.page_ids = page_ids  # the ids and names the page has; None: every id is taken as it is

    def render(self, node) -> str:
        return self.blocks(node).replace(BREAK, " ").strip() + "\n"  # a break outside a layout's own block

    def blocks(self, node) -> str:
        parts: list[str] = []
        inline: list[str] = []

        def flush():
            text = inline_text("".join(inline))
            if text:
                parts.append(text)
            inline.clear()

        pending = [iter(node.children)]
        while pending:
            child = next(pending[-1], None)
            if child is None:
                pending.pop()
                continue
            if isinstance(child, PreformattedString):
                continue  # doctype, CDATA, processing instructions: not page text
            if isinstance(child, NavigableString):
                inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name
            if name not in BLOCK_TAGS and name not in STRUCTURE and child.find(STRUCTURE | BLOCK_TAGS) is not None:
                # an inline or unknown element around blocks (`<language-id>` left unclosed in a page's
                # text wraps the rest of it, as a browser reads it): its blocks stay blocks
                if name == "a":
                    self._remember_link(child.get("href") or "")
                pending.append(iter(child.children))
                continue
            if name in HEADINGS:
                flush()
                parts.append(self.heading(child))
            elif name == "pre":
                flush()
                parts.append(self.code_block(child))
            elif name in ("ul", "ol"):
                flush()
                parts.append(self.list_block(child))
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
            elif _keeps_line_breaks(child) and child.find(STRUCTURE) is None:
                flush()
                parts.append(self.broken_lines(child))
            elif name in BLOCK_TAGS or name in ("li",):
                flush()
                inner = self.blocks(child).strip()
                if inner:
                    parts.append(inner)
            else:
                inline.append(self.inline_tag(child))
        flush()
        return "\n\n".join(p for p in parts if p.strip())

    def broken_lines(self, tag: Tag) -> str:
        """A literal layout (an address, a poem, a synopsis set line by line with `<br>`): each
        line kept, joined by CommonMark's hard break, not run into one line."""
        text = self.blocks(tag).replace(BREAK, "\n")
        lines = [inline_text(line) for line in text.split("\n")]
        return "\\\n".join(line for line in lines if line)

    def heading(self, tag: Tag) -> str:
        text = heading_text(tag).replace("*", "\\*")  # a signature's `*args` is no emphasis
        if not text:
            return ""
        if len(text) > MAX_HEADING_CHARS:  # no title runs this long: what the element holds is text, kept as such
            return self.blocks(tag).strip()
        identifier = heading_id(tag)
        if self.page_ids is not None and identifier not in self.page_ids:
            identifier = ""  # a fragment the page lacks would open the page's top, not the section
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
            return BREAK if _keeps_line_breaks(tag.parent) or any(
                _keeps_line_breaks(p) for p in tag.parents) else "\n"
        if name == "sup":
            text = self.inline(tag)
            before = tag.previous_sibling
            before = before.get_text() if isinstance(before, Tag) else str(before or "")
            # `HEX_DIGIT<sup>1..6</sup>` is not the word HEX_DIGIT1: the mark keeps the two apart
            return f"^{text.strip()}" if text.strip() and _WORD_END.search(before) else text
        if name in INLINE_MARKS and _inside_word(tag):
            return tag.get_text()  # `<code>N</code>th`: marks would split the word "Nth" in two
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
        try:
            target = urldefrag(urljoin(self.base_url, href) if self.base_url else href)[0]
            if urlsplit(target).scheme in ("http", "https"):
                self.links.append(target)
        except ValueError:  # `http://HOST[:PORT]/` is prose that looks like a link, not a link
            return

    def code_block(self, pre: Tag) -> str:
        language = code_language(pre)
        text = pre.get_text().strip("\n")
        longest = _longest_backtick_run(text)
        fence = "`" * max(3, longest + 1)
        return f"{fence}{language}\n{text}\n{fence}"

    def list_block(self, node: Tag, indent: str = "") -> str:
        """A list, nested lists indented under their item's text (two spaces under `- `, three
        under `1. `, as CommonMark needs to nest them); an ordered list keeps its `start`; an
        item holding blocks (paragraphs, code, tables, definition lists) keeps them, indented
        under its marker, instead of being run into one line; a list whose items hold headings
        is layout (Javadoc's `blockList`) and its blocks are written as they are."""
        lines = []
        ordered = node.name == "ol"
        start = node.get("start", "1")
        first_number = int(start) if ordered and isinstance(start, str) and start.isdigit() else 1
        for index, item in enumerate(node.find_all("li", recursive=False), start=first_number):
            marker = f"{index}." if ordered else "-"
            if item.find(HEADINGS) is not None:
                lines.append(self.blocks(item).strip())
                continue
            if any(isinstance(c, Tag) and c.name not in ("ul", "ol") and
                   (c.name in ITEM_BLOCKS or c.find(ITEM_BLOCKS - {"ul", "ol"}) is not None) for c in item.children):
                pad = indent + " " * (len(marker) + 1)
                first, *rest = (self.blocks(item).strip() or "").split("\n")
                lines.append(f"{indent}{marker} {first}".rstrip())
                lines.extend(pad + line if line.strip() else "" for line in rest)
                continue
            nested, inline_parts = [], []
            for child in item.children:
                if isinstance(child, Tag) and child.name in ("ul", "ol"):
                    nested.append(self.list_block(child, indent + " " * (len(marker) + 1)))
                elif isinstance(child, PreformattedString):
                    continue
                elif isinstance(child, NavigableString):
                    inline_parts.append(str(child))
                elif isinstance(child, Tag):
                    inline_parts.append(self.inline_tag(child))
            text = inline_text("".join(inline_parts))
            if text or any(part.strip() for part in nested):  # an item left empty (its buttons dropped) is no item
                lines.append(f"{indent}{marker} {text}".rstrip())
            lines.extend(nested)
        return "\n".join(lines)

    def table(self, table: Tag) -> str:
        """A data table as markdown tables of at most TABLE_BLOCK_TOKENS, each repeating the
        header row; a layout table (a cell holding headings, code, lists or another table, or a
        single column) as the content of its cells, in reading order. Only the table's own rows
        and cells are read: a nested table is its cell's content, not more columns."""
        rows = own_rows(table)
        caption = table.find("caption")
        own_caption = caption is not None and caption.find_parent("table") is table
        title = inline_text(self.inline(caption)) if own_caption else ""
        if is_layout_table(rows):
            parts = [title] if title else []
            for row in rows:
                for cell in row:
                    inner = self.blocks(cell).strip()
                    if inner:
                        parts.append(inner)
            return "\n\n".join(parts)
        cells = spanned_grid([[(inline_text(self.inline(c)).replace("|", "\\|"), c) for c in row] for row in rows])
        cells = [row for row in cells if any(row)]
        blocks = [title] if title else []
        blocks += table_blocks_by_size(cells)
        return "\n\n".join(blocks)


MAX_SPAN = 50  # a colspan or rowspan beyond this is a typo or an attack, not a layout


def _span(cell: Tag, name: str) -> int:
    value = str(cell.get(name) or "1").strip()
    return max(1, min(MAX_SPAN, int(value))) if value.isdigit() else 1


def spanned_grid(rows: list[list[tuple[str, Tag]]]) -> list[list[str]]:
    """The table's cell texts on a grid, as a browser lays them out: a cell spanning columns takes
    them all (its text in the first, the rest empty), so the header cells after it stay above their
    columns; a cell spanning rows is repeated in the rows below, where its text belongs."""
    grid: list[list[str]] = []
    below: dict[int, tuple[str, int]] = {}  # column -> (text, rows still spanned)
    for row in rows:
        out: list[str] = []
        spanned_to = max(below) + 1 if below else 0  # columns cells from the rows above reach
        index = 0
        while index < len(row) or len(out) < spanned_to:
            column = len(out)
            if column in below:
                text, left = below.pop(column)
                out.append(text)
                if left > 1:
                    below[column] = (text, left - 1)
                continue
            if index == len(row):
                out.append("")
                continue
            text, cell = row[index]
            index += 1
            width, height = _span(cell, "colspan"), _span(cell, "rowspan")
            for offset in range(width):
                if height > 1:
                    below[column + offset] = (text, height - 1)
                out.append(text if offset == 0 else "")
        grid.append(out)
    return grid


def own_rows(table: Tag) -> list[list[Tag]]:
    rows = []
    for part in [table, *table.find_all(["thead", "tbody", "tfoot"], recursive=False)]:
        for tr in part.find_all("tr", recursive=False):
            cells = tr.find_all(["th", "td"], recursive=False)
            if cells:
                rows.append(cells)
    return rows


LAYOUT_MARKS = ["h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "ul", "ol", "dl", "blockquote"]


def is_layout_table(rows: list[list[Tag]]) -> bool:
    if not rows:
        return True
    if max(len(row) for row in rows) == 1:
        return True
    return any(cell.find(LAYOUT_MARKS) is not None for row in rows for cell in row)


TABLE_BLOCK_TOKENS = 250  # a table block stays well inside one chunk; each repeats the header


def table_blocks_by_size(rows: list[list[str]]) -> list[str]:
    """A table as markdown tables of about TABLE_BLOCK_TOKENS each, cut between rows, each
    repeating the header row, so a chunk of a long table still says what its columns are."""
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    if not body:
        return [markdown_table([header])]
    header_size = _size(header)
    blocks, current, size = [], [], header_size
    for row in body:
        row_size = _size(row)
        if current and size + row_size > TABLE_BLOCK_TOKENS:
            blocks.append(markdown_table([header] + current))
            current, size = [], header_size
        current.append(row)
        size += row_size
    blocks.append(markdown_table([header] + current))
    return blocks


def _size(row: list[str]) -> int:
    return sum(len(cell.split()) + 2 for cell in row)


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
