"""Render stored markdown as safe HTML for the document view. Pure.

CommonMark with GFM tables (markdown-it-py), as the extractors write it, so a fence inside a list
item or a quote stays code. Documents are untrusted: raw HTML is shown as text, only http(s),
mailto, relative and fragment URLs become links, and heading ids are removed as text rather than
made attributes, so a document can neither run script nor set attributes. Underscores never mark
emphasis (`__init__` is a name). Note labels are letters, digits and dashes only, so the ids they
make are safe, and unique on the page.
"""

from __future__ import annotations

import re
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import emphasis

from kb.markup import TEXT, fenced, strip_heading_id

SAFE_SCHEMES = ("http:", "https:", "mailto:")
NOTE_CITATION = re.compile(r"\[\^([A-Za-z0-9-]{1,32})\]")
NOTE_LINE = re.compile(r"\[\^([A-Za-z0-9-]{1,32})\]:[ \t]+")


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


def _note_citation(state, silent: bool) -> bool:
    if state.src[state.pos] != "[" or (match := NOTE_CITATION.match(state.src, state.pos)) is None:
        return False
    if not silent:
        state.push("note_citation", "", 0).meta = {"label": match.group(1)}
    state.pos = match.end()
    return True


def _note_line(state, start_line: int, end_line: int, silent: bool) -> bool:
    """`[^N]: text` on a line of its own: the note, one paragraph."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False  # indented code
    match = NOTE_LINE.match(
        state.src, state.bMarks[start_line] + state.tShift[start_line], state.eMarks[start_line]
    )
    if match is None:
        return False
    if silent:
        return True
    opening = state.push("note_open", "p", 1)
    opening.meta, opening.map = {"label": match.group(1)}, [start_line, start_line + 1]
    inline = state.push("inline", "", 0)
    inline.content, inline.map, inline.children = (
        state.src[match.end() : state.eMarks[start_line]].strip(),
        [start_line, start_line + 1],
        [],
    )
    state.push("note_close", "p", -1)
    state.line = start_line + 1
    return True


def _render_citation(renderer, tokens, idx, options, env) -> str:
    label = tokens[idx].meta["label"]
    return f'<sup class="note-citation"><a href="#fn-{label}" id="fnref-{label}">{label}</a></sup>'


def _render_note_open(renderer, tokens, idx, options, env) -> str:
    label = tokens[idx].meta["label"]
    return (
        f'<p class="note" id="fn-{label}"><a class="note-back" href="#fnref-{label}">{label}</a> '
    )


@cache
def _converter() -> MarkdownIt:
    """One parser for every passage: it holds only its rules (each render keeps its own state),
    and building it costs as much as rendering a passage."""
    md = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False}).enable("table")
    md.validateLink = _safe_url  # a link or image whose target fails stays text
    md.inline.ruler.at("emphasis", _emphasis_without_underscore)
    md.add_render_rule("link_open", _link_open)
    md.inline.ruler.before("link", "note_citation", _note_citation)
    md.block.ruler.before("reference", "note_line", _note_line, {"alt": ["paragraph"]})
    md.add_render_rule("note_citation", _render_citation)
    md.add_render_rule("note_open", _render_note_open)
    md.add_render_rule("note_close", lambda *args: "</p>\n")
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


def without_title(text: str, title: str) -> str:
    """The passage without a first `# heading` that only repeats the document's title, which the
    document view already shows above its passages."""
    first, _, rest = text.lstrip("\n").partition("\n")
    wanted = " ".join(title.split()).casefold()
    if (
        wanted
        and first.startswith("# ")
        and " ".join(strip_heading_id(first[2:]).split()).casefold() == wanted
    ):
        return rest
    return text


def render_markdown(text: str) -> str:
    """Safe HTML for one stored passage of markdown."""
    return _converter().render(_without_heading_ids(text)).rstrip("\n")
