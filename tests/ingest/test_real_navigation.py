"""Generators' navigation must not reach the stored text: mdBook's menu bar (its book title as an
<h1>, a theme list of five buttons) and makeinfo's `[Contents][Index]` line above every node.
Each raw page is checked to hold the navigation, so the guard cannot pass on a page without it.
Fixtures: tests/fixtures/real/README.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingest.extract import extract

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"

MDBOOK = "mdbook/appendix-04-useful-development-tools.html"
MAKEINFO = "makeinfo/Retrieving-random-numbers.html"


def _raw(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def _content(name: str) -> str:
    return extract((REAL / name).read_bytes(), "text/html", url=f"http://127.0.0.1/{name}").content


def _prose_lines(content: str) -> list[str]:
    """The lines outside fenced code, where a lone `*` may be a C comment's."""
    lines, in_code = [], False
    for line in content.split("\n"):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code:
            lines.append(line)
    return lines


def _headings(content: str) -> list[str]:
    return [line for line in _prose_lines(content) if re.match(r"#{1,6} ", line)]


def _empty_list_items(content: str) -> list[str]:
    return [line for line in _prose_lines(content) if re.fullmatch(r"\s*([-*+]|\d+[.)])\s*", line)]


def _navigation_lines(content: str) -> list[str]:
    return [line for line in content.split("\n") if "[Contents]" in line or "[Index]" in line]


def test_raw_pages_hold_the_navigation_the_guard_is_about():
    mdbook = _raw(MDBOOK)
    assert '<h1 class="menu-title">The Rust Programming Language</h1>' in mdbook
    assert len(re.findall(r'<li role="none"><button role="menuitem" class="theme"', mdbook)) == 5
    assert re.search(
        r'\[<a [^>]*rel="contents">Contents</a>\]\[<a [^>]*rel="index">Index</a>\]', _raw(MAKEINFO)
    )


@pytest.mark.parametrize("name", [MDBOOK, MAKEINFO], ids=["mdbook", "makeinfo"])
def test_navigation_is_not_stored(name):
    content = _content(name)
    assert not [
        h for h in _headings(content) if "The Rust Programming Language" in h or "{#menu-bar}" in h
    ]
    assert not _empty_list_items(content)
    assert not _navigation_lines(content)


def test_mdbook_page_keeps_its_text_and_headings():
    content = _content(MDBOOK)
    assert [h.split(" {#")[0] for h in _headings(content)] == [
        "## Appendix D - Useful Development Tools",
        "### Automatic Formatting with rustfmt",
        "### Fix Your Code with rustfix",
        "### More Lints with Clippy",
        "### IDE Integration Using rust-analyzer",
    ]
    assert (
        "The `rustfmt` tool reformats your code according to the community code style." in content
    )
    assert "$ cargo clippy" in content


def test_makeinfo_page_keeps_its_text_and_headings():
    content = _content(MAKEINFO)
    headings = _headings(content)
    assert headings[0] == "### 10.2 Retrieving random numbers {#Retrieving-random-numbers-1}"
    assert sum("Function:" in h and "gcry_" in h for h in headings) == 4
    assert "This is commonly called a nonce" in re.sub(r"\s+", " ", content)


BASH_NODE = "makeinfo-bash/bashref-internationalized-scripts.html"


def test_a_node_header_holding_only_contents_and_index_is_not_stored():
    """makeinfo writes a node without Next, Previous or Up as `[Contents][Index]` alone (the Bash
    reference's "Creating Internationalized Scripts"): navigation all the same, however it opens."""
    assert re.search(
        r'<div class="header">\s*<p>\s*&nbsp; \[<a [^>]*rel="contents">Contents</a>\]\[<a [^>]*'
        r'rel="index">Index</a>\]</p>',
        _raw(BASH_NODE),
    )
    content = _content(BASH_NODE)
    assert not _navigation_lines(content)
    assert "Creating Internationalized Scripts" in content and "you create a gettext" in content
