"""Stored markdown as safe HTML for the document view. Pure.

Documents are untrusted: raw HTML in them is escaped (Python-Markdown's HTML block and inline
HTML handlers are removed), link and image targets other than http(s), mailto, relative and
fragment URLs are dropped, and heading ids (`{#id}`) are removed as text rather than turned
into attributes, so a document can neither run script nor set attributes. Code fences come out
verbatim, inside `<pre><code class="language-X">`. Underscores never mark emphasis: a web
page's text is stored as written, where `date.__str__()` or `__init__` is a name, not bold, and
the extractors write emphasis with asterisks.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element

import markdown
from markdown.treeprocessors import Treeprocessor

from kb.markup import TEXT, fenced, strip_heading_id

SAFE_SCHEMES = ("http:", "https:", "mailto:")


class _SafeLinks(Treeprocessor):
    def run(self, root: Element) -> None:
        for element in root.iter():
            for attribute in ("href", "src"):
                value = element.get(attribute)
                if value is not None and not _safe_url(value):
                    del element.attrib[attribute]
            if element.tag == "a" and element.get("href", "").startswith(("http:", "https:")):
                element.set("rel", "nofollow noopener")


def _safe_url(url: str) -> bool:
    compact = "".join(url.split()).lower()
    if ":" not in compact.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]:
        return True  # relative, absolute path or fragment
    return compact.startswith(SAFE_SCHEMES)


def _converter() -> markdown.Markdown:
    md = markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists"], output_format="html")
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    md.delimiters.remove("_")  # `__str__` is a name (Python-Markdown 3.11's delimiter registry)
    md.treeprocessors.register(_SafeLinks(md), "safe_links", 0)
    return md


def _without_heading_ids(text: str) -> str:
    """`## Title {#id}` -> `## Title`, outside code fences; every other line unchanged."""
    out = []
    for line, kind in fenced(text.split("\n")):
        stripped = line.lstrip()
        if kind == TEXT and stripped.startswith("#") and stripped.rstrip().endswith("}"):
            line = strip_heading_id(line)
        out.append(line)
    return "\n".join(out)


def render_markdown(text: str) -> str:
    """Safe HTML for one stored passage of markdown."""
    md = _converter()
    return md.convert(_without_heading_ids(text))
