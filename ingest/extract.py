"""Turn fetched bytes into clean markdown or text. Pure: no Django, no I/O.

HTML becomes markdown (BeautifulSoup): page chrome (script, style, nav, header, footer, aside,
forms, comments) is dropped; headings become `#` lines; pre/code become fenced blocks with the
language from `class="language-x"`; lists, tables and links stay readable. Entities are decoded
by the parser only after tags are gone, so `&lt;b&gt;` stays text. Markdown passes through and
plain text stays plain. Encodings are detected, not assumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Comment, NavigableString, Tag
from bs4.element import PreformattedString
from charset_normalizer import from_bytes

from ingest.errors import ContentRejected

HTML_TYPES = ("text/html", "application/xhtml+xml")
MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")
DROP_TAGS = {
    "script", "style", "nav", "header", "footer", "aside", "form", "noscript", "template",
    "svg", "iframe", "button", "input", "select", "textarea", "canvas", "object", "embed",
}
BLOCK_TAGS = {
    "p", "div", "section", "article", "main", "body", "html", "figure", "figcaption", "dl",
    "dd", "dt", "details", "summary", "address", "center",
}
HEADINGS = {f"h{n}": n for n in range(1, 7)}
LANGUAGE_RE = re.compile(r"^(?:language|lang)-([\w+#.-]+)$")


@dataclass(frozen=True)
class Extracted:
    title: str
    content: str
    media_type: str  # text/markdown or text/plain


def extract(body: bytes, media_type: str, *, charset: str | None = None, url: str = "",
            fallback_title: str = "") -> Extracted:
    """Dispatch on media type (sniffing HTML when the type is missing or generic)."""
    media_type = (media_type or "").lower()
    if _looks_binary(body):
        raise ContentRejected(
            "The content looks binary (NUL bytes or no decodable text); only HTML, markdown and "
            "text are ingested.", code="INGEST_BINARY_CONTENT",
        )
    if media_type in HTML_TYPES or (media_type in ("", "application/octet-stream") and _sniff_html(body)):
        return html_to_markdown(body, charset=charset, url=url, fallback_title=fallback_title)
    text = decode_text(body, charset)
    if media_type in MARKDOWN_TYPES:
        return Extracted(title=markdown_title(text) or fallback_title, content=normalise_markdown(text),
                         media_type="text/markdown")
    return Extracted(title=fallback_title, content=normalise_text(text), media_type="text/plain")


def _looks_binary(body: bytes) -> bool:
    sample = body[:8192]
    return b"\x00" in sample and not (sample.startswith((b"\xff\xfe", b"\xfe\xff")))


def _sniff_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head


def decode_text(body: bytes, charset: str | None = None) -> str:
    """Decode with the declared charset when it works, else UTF-8, else detect."""
    for encoding in filter(None, (charset, "utf-8")):
        try:
            return body.decode(encoding).lstrip("\ufeff")
        except (UnicodeDecodeError, LookupError):
            continue
    best = from_bytes(body).best()
    if best is None:
        raise ContentRejected("Could not detect the text encoding.", code="INGEST_BINARY_CONTENT")
    return str(best).lstrip("\ufeff")


def normalise_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n" if text.strip() else ""


def normalise_markdown(text: str) -> str:
    return normalise_text(text)


def markdown_title(text: str) -> str:
    front = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if front:
        found = re.search(r"^title:\s*['\"]?(.+?)['\"]?\s*$", front.group(1), re.M)
        if found:
            return found.group(1).strip()
    heading = re.search(r"^#\s+(.+?)\s*#*\s*$", text, re.M)
    return heading.group(1).strip() if heading else ""


def html_to_markdown(body: bytes, *, charset: str | None = None, url: str = "",
                     fallback_title: str = "") -> Extracted:
    soup = BeautifulSoup(body, "html.parser", from_encoding=charset)
    if soup.original_encoding is None and isinstance(body, bytes) and not soup.get_text(strip=True):
        raise ContentRejected("The HTML has no readable text.", code="INGEST_EMPTY_CONTENT")
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    for tag in soup.find_all(DROP_TAGS):
        tag.decompose()
    title_tag = soup.find("title")
    title = _inline_text(title_tag.get_text(" ")) if title_tag else ""
    if title_tag:
        title_tag.decompose()
    head = soup.find("head")
    if head:
        head.decompose()
    if not title:
        h1 = soup.find("h1")
        title = _inline_text(h1.get_text(" ")) if h1 else ""
    base = url
    base_tag = soup.find("base", href=True)
    if base_tag:
        base = urljoin(url, base_tag["href"])
    content = _Renderer(base).render(soup)
    return Extracted(title=title or fallback_title, content=normalise_text(content),
                     media_type="text/markdown")


def _inline_text(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class _Renderer:
    """Recursive HTML-to-markdown writer producing blocks separated by blank lines."""

    def __init__(self, base_url: str):
        self.base_url = base_url

    def render(self, node) -> str:
        return self.blocks(node).strip() + "\n"

    def blocks(self, node) -> str:
        parts: list[str] = []
        inline: list[str] = []

        def flush():
            text = _inline_text("".join(inline))
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
                text = _inline_text(self.inline(child))
                if text:
                    parts.append("#" * HEADINGS[name] + " " + text)
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
            return f"{fence}{text}{fence}"
        if name == "a":
            text = _inline_text(self.inline(tag))
            href = (tag.get("href") or "").strip()
            if not href or href.lower().startswith(("javascript:", "data:", "vbscript:")):
                return text
            href = urljoin(self.base_url, href) if self.base_url else href
            return f"[{text}]({href})" if text else f"<{href}>"
        if name in ("strong", "b"):
            text = _inline_text(self.inline(tag))
            return f"**{text}**" if text else ""
        if name in ("em", "i"):
            text = _inline_text(self.inline(tag))
            return f"*{text}*" if text else ""
        if name == "img":
            alt = _inline_text(tag.get("alt", ""))
            return f"[image: {alt}]" if alt else ""
        if name in HEADINGS or name in BLOCK_TAGS or name in ("ul", "ol", "table", "pre"):
            return " " + self.blocks(tag) + " "
        return self.inline(tag)

    def code_block(self, pre: Tag) -> str:
        code = pre.find("code")
        language = ""
        for candidate in (code, pre):
            if candidate is None:
                continue
            for cls in candidate.get("class", []):
                match = LANGUAGE_RE.match(cls)
                if match:
                    language = match.group(1)
                    break
            if language:
                break
        text = pre.get_text().strip("\n")
        longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
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
                elif isinstance(child, NavigableString):
                    inline_parts.append(str(child))
                elif isinstance(child, Tag):
                    inline_parts.append(self.inline_tag(child))
            text = _inline_text("".join(inline_parts))
            lines.append("  " * depth + f"{marker} {text}".rstrip())
            lines.extend(nested)
        return "\n".join(lines)

    def table(self, table: Tag) -> str:
        rows = []
        for tr in table.find_all("tr"):
            cells = [_inline_text(self.inline(c)).replace("|", "\\|") for c in tr.find_all(["th", "td"])]
            if cells:
                rows.append(cells)
        if not rows:
            return ""
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(lines)
