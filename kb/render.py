"""Stored markdown as safe HTML for the document view. Pure.

The markdown is read as CommonMark with GFM tables (markdown-it-py), because that is how the
extractors write it: a list item's later blocks are indented under its text (two spaces under
`- `, three under `1. `), and a quote's blocks carry `> `, so a code fence inside a list item or
a quote is code, with its lines as stored.

Documents are untrusted: raw HTML in them is shown as text, link and image targets other than
http(s), mailto, relative and fragment URLs are not made links, and heading ids (`{#id}`) are
removed as text rather than turned into attributes, so a document can neither run script nor
set attributes. Code fences come out verbatim, inside `<pre><code class="language-X">`.
Underscores never mark emphasis: a web page's text is stored as written, where `date.__str__()`
or `__init__` is a name, not bold, and the extractors write emphasis with asterisks.
"""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import emphasis

from kb.markup import TEXT, fenced, strip_heading_id

SAFE_SCHEMES = ("http:", "https:", "mailto:")


def _safe_url(url: str) -> bool:
    compact = "".join(url.split()).lower()
    if ":" not in compact.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]:
        return True  # relative, absolute path or fragment
    return compact.startswith(SAFE_SCHEMES)


def _emphasis_without_underscore(state, silent: bool) -> bool:
    """CommonMark's emphasis rule for `*` only; an `_` stays a character of the text."""
    if state.src[state.pos] == "_":
        return False
    return emphasis.tokenize(state, silent)


def _link_open(renderer, tokens, idx, options, env) -> str:
    token = tokens[idx]
    if str(token.attrGet("href") or "").lower().startswith(("http:", "https:")):
        token.attrSet("rel", "nofollow noopener")
    return renderer.renderToken(tokens, idx, options, env)


@cache
def _converter() -> MarkdownIt:
    """One parser for every passage: it holds only its rules (each render keeps its own state),
    and building it costs as much as rendering a passage."""
    md = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False}).enable("table")
    md.validateLink = _safe_url  # a link or image whose target fails stays text
    md.inline.ruler.at("emphasis", _emphasis_without_underscore)
    md.add_render_rule("link_open", _link_open)
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
    return _converter().render(_without_heading_ids(text)).rstrip("\n")
