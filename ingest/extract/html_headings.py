"""Headings as the site has them: text without permalink marks, and the page's id for each. Pure.

The id is the one the page gives the section (the heading's `id`, its permalink's fragment, an empty
`<a id>` or `<a name>` in or just before it, the id of the wrapper it opens), so citations open the
right place on the real site. A definition term with its own id and a permalink (Sphinx's functions,
classes, options and glossary terms; Texinfo's definitions) is a heading too, a level below the
heading it is under (`titled_definitions`).
"""

from __future__ import annotations

from bs4 import NavigableString, Tag
from bs4.element import PreformattedString

HEADINGS = {f"h{n}": n for n in range(1, 7)}
PERMALINK_CLASSES = {
    "headerlink",
    "anchor",
    "hash-link",
    "anchorjs-link",
    "heading-anchor",
    "anchor-link",
    "permalink",
    "header-anchor",
    "toclink",
}
PERMALINK_MARKS = {"", "¶", "#", "§", "🔗", "link", "permalink", "\u200b"}
SOURCE_MARKS = {"[source]", "source", "[src]"}


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


def prose_permalink(anchor: Tag) -> bool:
    """A `¶` link on a definition or a paragraph (Sphinx's "Link to this definition"), or a
    `[source]` link to the highlighted module: marks, not text."""
    text = anchor.get_text(strip=True)
    href = (anchor.get("href") or "").strip()
    classes = set(anchor.get("class") or ())
    if classes & PERMALINK_CLASSES or (
        href.startswith("#") and text in ("¶", "\u00b6", "§", "#", "🔗")
    ):
        return True
    return text.lower() in SOURCE_MARKS and (
        "_modules/" in href
        or href.startswith("src/")
        or anchor.find(class_="viewcode-link") is not None
    )


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
    """The id the page gives this heading's section (module docstring)."""
    if heading.get("id"):
        return heading["id"].strip()
    for anchor in permalinks(heading):
        fragment = (anchor.get("href") or "").strip()
        if fragment.startswith("#") and len(fragment) > 1:
            return fragment[1:]
        if anchor.get("id"):
            return anchor["id"].strip()
    wrapper = heading.parent
    if (
        isinstance(wrapper, Tag)
        and wrapper.name != "section"
        and "heading" in " ".join(wrapper.get("class") or ())
    ):
        for anchor in wrapper.find_all(
            "a", recursive=False
        ):  # GitHub: <div class="markdown-heading">
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
            if element.strip() and not (
                isinstance(element.parent, Tag)
                and element.parent.name in ("a", "span")
                and not element.parent.get_text(strip=True)
            ):
                return ""
            continue
        if isinstance(element, Tag):
            if (
                element.name in ("a", "span")
                and _target(element)
                and not element.get_text(strip=True)
            ):
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


def titled_definitions(root: Tag) -> None:
    """Each `<dt>` that carries an id and a permalink to it, and each paragraph that opens with
    an `<a id>` and holds a permalink to it (Haddock's declarations, `p.src`), becomes a
    heading (module docstring): a level below the last heading before it, plus one per
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
        identifier = (
            (first.get("id") or "").strip() if first is not None and first.name == "a" else ""
        )
    return bool(identifier) and any(
        (a.get("href") or "").strip() == f"#{identifier}" and prose_permalink(a)
        for a in term.find_all("a")
    )
