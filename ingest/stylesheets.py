"""What a site's stylesheets hide outright, so that a page's recall counts only what a reader
sees (`ingest/recall.py`). Pure: CSS text in, class names out."""

from __future__ import annotations

import re

CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
CSS_MEDIA = re.compile(r"@[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}")
CSS_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
CSS_DISPLAY_NONE = re.compile(r"(?:^|;)\s*display\s*:\s*none\s*(?:!important\s*)?(?:;|$)", re.I)
CSS_CLASS = re.compile(r"\.[A-Za-z_][\w-]*")


def hidden_classes(css: str) -> frozenset[str]:
    """The classes a stylesheet hides outright: a rule `.name { ... display: none ... }` whose
    selectors are all single classes (Doxygen's hover tooltips, `.ttc`). A rule with a state,
    a descendant or a media condition shows the element somewhere, so it is not read."""
    css = CSS_COMMENT.sub("", css)
    css = CSS_MEDIA.sub("", css)
    hidden = set()
    for selectors, declarations in CSS_RULE.findall(css):
        if not CSS_DISPLAY_NONE.search(declarations):
            continue
        names = [part.strip() for part in selectors.split(",")]
        if names and all(CSS_CLASS.fullmatch(name) for name in names):
            hidden.update(name[1:] for name in names)
    return frozenset(hidden)
