"""Every link between the docs (README.md and docs/) reaches a page that exists and, when it names a
section, a heading of that page (GitHub's anchors: lower case, punctuation dropped, spaces as
hyphens)."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
LINK = re.compile(r"\]\(([^()\s]*?\.md)?(?:#([^()\s]+))?\)")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")
        found.add(slug)
    return found


def links(page: Path):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    for target, anchor in LINK.findall(text):
        if target.startswith(("http:", "https:")) or not (target or anchor):
            continue
        yield (page.parent / target).resolve() if target else page, anchor


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_link_reaches_its_page_and_heading(page):
    broken = [
        f"{target.relative_to(REPO)}#{anchor}"
        for target, anchor in links(page)
        if not target.exists() or (anchor and anchor not in anchors(target))
    ]
    assert broken == []


def test_the_anchor_rule_is_githubs():
    page = REPO / "docs" / "benchmarks.md"
    assert {
        "the-default-without-judged-queries",
        "a-million-chunks",
        "document-runtimes",
    } <= anchors(page)
    assert "search-quality" in anchors(page) and "Search quality" not in anchors(page)
