"""Chrome inside the content's root, dropped: `nav`, `aside` (but footnotes and asides of prose),
`footer`, forms, a `header` that holds no heading (some generators put the page's `<h1>` in a
`<header>` inside the article), and elements whose class names a known piece of chrome
(`CHROME_CLASSES`); also what only repeats the page (a table of contents, a collapsed synopsis)
and a manual's navigation lines. `is_chrome` also tells the main content's search what the page
marks as its frame. Pure.
"""

from __future__ import annotations

from bs4 import NavigableString, Tag

from ingest.extract.html_headings import HEADINGS, PERMALINK_CLASSES, SOURCE_MARKS, prose_permalink

DROP_IN_CONTENT = {"nav", "aside", "footer"}
CHROME_CLASSES = {
    "headerlink",
    "sphinxsidebar",
    "breadcrumb",
    "breadcrumbs",
    "wy-breadcrumbs",
    "md-source-file",
    "md-content__button",
    "edit-this-page",
    "theme-edit-this-page",
    "theme-doc-footer",
    "pagination-nav",
    "md-footer",
    "rst-footer-buttons",
    "linenos",
    "lineno",
    "toc-drawer",
    "cookie-banner",
    "cookie-consent",
    "skip-link",
    "visually-hidden",
    "sr-only",
    "copybutton",
    "prev-next-area",
    "viewcode-link",
    "viewcode-back",
    "nav-panel",
}
CHROME_ID_WORDS = ("nav", "menu", "sidebar", "footer", "breadcrumb", "toc", "header")


def link_dense(tag: Tag) -> bool:
    """Mostly link text: a site's banner with its menu, not a document's title block."""
    total = len(tag.get_text(strip=True))
    linked = sum(len(a.get_text(strip=True)) for a in tag.find_all("a"))
    return total > 0 and linked >= 0.5 * total


ASIDE_PARAGRAPH_WORDS = 12


def _prose_aside(tag: Tag) -> bool:
    """An `<aside>` in the content that holds a paragraph of prose, not links, is the document's
    own (docutils' "topic" and "sidebar" directives: an abstract, a summary); a related-links
    box or a table of contents is mostly links, a label is not a paragraph."""
    return (
        tag.name == "aside"
        and not link_dense(tag)
        and any(len(p.get_text().split()) >= ASIDE_PARAGRAPH_WORDS for p in tag.find_all("p"))
    )


def _footnotes(tag: Tag) -> bool:
    """Footnotes are content, even in an `<aside>` (Sphinx, pandoc, DPUB-ARIA)."""
    if tag.name != "aside":
        return False
    marks = " ".join(
        [*(tag.get("class") or ()), tag.get("role") or "", tag.get("epub:type") or ""]
    ).lower()
    return "footnote" in marks or "endnote" in marks


def is_chrome(tag: Tag) -> bool:
    if tag.name in DROP_IN_CONTENT or tag.name == "header" and not tag.find(HEADINGS):
        return True
    if tag.get("role") == "navigation":
        return True
    classes = set(tag.get("class") or ())
    return bool(classes & CHROME_CLASSES) or any(
        word in (tag.get("id") or "").lower() for word in CHROME_ID_WORDS
    )


def drop_chrome(root: Tag) -> None:
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
            if (
                tag.name == "a"
                and classes & PERMALINK_CLASSES
                and tag.find_parent(HEADINGS) is not None
            ):
                # a heading's permalink is read (for its fragment) and removed with the heading
                continue
            tag.decompose()
    for tag in root.find_all(["div", "table", "p"]):
        if not tag.decomposed and _manual_navigation(tag):
            tag.decompose()
    _drop_page_repeats(root)
    for anchor in root.find_all("a"):
        if (
            not anchor.decomposed
            and prose_permalink(anchor)
            and (
                anchor.find_parent(HEADINGS) is None
                or anchor.get_text(strip=True).lower() in SOURCE_MARKS
            )
        ):
            # a heading's `#` is read for its fragment later; its "Source" link goes now
            anchor.decompose()


SAMPLE_ITEMS = (
    50  # items of a list looked up elsewhere on the page: enough to tell, linear in the page
)
SAMPLE_DETAILS = 3


def _drop_page_repeats(root: Tag) -> None:
    """What repeats the page itself, by what it holds, not by who generated it: a list of links to
    the page's own sections and nothing else (a table of contents: its headings follow), and a
    collapsed `<details>` whose every item is written out again on the page (Haddock's synopsis
    of the declarations documented below it)."""
    page_text = None
    collapsed = [
        d for d in root.find_all("details") if not d.has_attr("open") and d.find("li") is not None
    ]
    for details in collapsed[
        :SAMPLE_DETAILS
    ]:  # a page's synopsis is one: a bound keeps the lookups linear
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
        if (
            not listing.decomposed
            and listing.find_parent(["ul", "ol"]) is None
            and _contents_list(listing)
        ):
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


NAV_LABELS = (
    "next:",
    "previous:",
    "prev:",
    "up:",
    "[ < ]",
    "[ > ]",
    "[ << ]",
    "[<]",
    "[>]",
    "[ contents ]",
    "[ index ]",
)  # a node without Next, Previous or Up: `[Contents][Index]` alone


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
