"""Write the main content as markdown: headings, lists, tables, code, quotes, kept lines. Pure.

A heading is written `## Text {#id}` only with an id the page has (a citation must open where it
says). Links as data: the text keeps a link's words, never its URL; URLs go to `Extracted.links`. An
inline or unknown element around blocks is read through, so its headings, code and lists stay
blocks.
"""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin, urlsplit

from bs4 import NavigableString, Tag
from bs4.element import PreformattedString

from ingest.extract.html_code import code_block
from ingest.extract.html_headings import HEADINGS, heading_id, heading_text, inline_text
from ingest.extract.html_tables import is_layout_table, own_rows, spanned_grid, table_blocks_by_size

NOT_LINKS = ("javascript:", "data:", "vbscript:", "mailto:")  # hrefs that are not pages to link to
BLOCK_TAGS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "body",
    "html",
    "figure",
    "figcaption",
    "dl",
    "dd",
    "dt",
    "details",
    "summary",
    "address",
    "center",
    "header",
}
ITEM_BLOCKS = {
    "p",
    "pre",
    "ul",
    "ol",
    "table",
    "dl",
    "blockquote",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "div",
    "section",
    "figure",
    "details",
}
INLINE_MARKS = {"code", "strong", "b", "em", "i"}
STRUCTURE = {"h1", "h2", "h3", "h4", "h5", "h6", "pre", "ul", "ol", "table", "blockquote", "hr"}
MAX_HEADING_CHARS = (
    300  # a longer "heading" is an unclosed one that swallowed what follows: written as text
)
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
        return (
            self.blocks(node).replace(BREAK, " ").strip() + "\n"
        )  # a break outside a layout's own block

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
            if (
                name not in BLOCK_TAGS
                and name not in STRUCTURE
                and child.find(STRUCTURE | BLOCK_TAGS) is not None
            ):
                # an inline or unknown element around blocks (`<language-id>` left unclosed in a
                # page's
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
                parts.append(code_block(child))
            elif name in ("ul", "ol"):
                flush()
                parts.append(self.list_block(child))
            elif name == "table":
                flush()
                parts.append(self.table(child))
            elif name == "blockquote":
                flush()
                quoted = self.blocks(child).strip()
                parts.append(
                    "\n".join("> " + line if line else ">" for line in quoted.splitlines())
                )
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
        if (
            len(text) > MAX_HEADING_CHARS
        ):  # no title runs this long: what the element holds is text, kept as such
            return self.blocks(tag).strip()
        identifier = heading_id(tag)
        if self.page_ids is not None and identifier not in self.page_ids:
            identifier = ""  # a fragment the page lacks would open the page's top, not the section
        suffix = (
            f" {{#{identifier}}}"
            if identifier and not any(c.isspace() or c in "{}" for c in identifier)
            else ""
        )
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
            return (
                BREAK
                if _keeps_line_breaks(tag.parent) or any(_keeps_line_breaks(p) for p in tag.parents)
                else "\n"
            )
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
            if any(
                isinstance(c, Tag)
                and c.name not in ("ul", "ol")
                and (c.name in ITEM_BLOCKS or c.find(ITEM_BLOCKS - {"ul", "ol"}) is not None)
                for c in item.children
            ):
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
            if text or any(
                part.strip() for part in nested
            ):  # an item left empty (its buttons dropped) is no item
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
        cells = spanned_grid(
            [[(inline_text(self.inline(c)).replace("|", "\\|"), c) for c in row] for row in rows]
        )
        cells = [row for row in cells if any(row)]
        blocks = [title] if title else []
        blocks += table_blocks_by_size(cells)
        return "\n\n".join(blocks)
