"""A short page keeps to its main region (issue #63): on five pages of Python's docs (the index
of letters, a letter of the index, the search page, a section index and a one-module package)
the `role=main` region holds less text than the site's footer beside it, so the whole body was
read and its "Navigation" bars (a heading and a list of links, an empty bullet among them) and
the footer were stored. `kb_site_bench` found 11 such pages on the whole site (chrome 0.02 % to
0.03 %). The frame the page marks (navigation, sidebar, footer) no longer outweighs the region;
the links that are the page's content (the index, the section's contents) stay."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluation.site_bench import ChunkFacts, fidelity, page_facts
from ingest.boilerplate import BoilerplateCounter, block_keys, split_repeated
from ingest.chunk import chunk_markdown
from ingest.extract import extract

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "sphinx-short"
PAGES = [
    "genindex.html",
    "genindex-Y.html",
    "search.html",
    "faq/index.html",
    "library/concurrent.html",
]
FRAME = ("Navigation", "3.11.2 Documentation", "modules |", "Copyright", "Please donate")


def _content(name: str) -> str:
    return extract(
        (SITE / name).read_bytes(), "text/html", url=f"https://docs.python.org/3.11/{name}"
    ).content


@pytest.mark.parametrize("name", PAGES)
def test_the_sites_frame_is_not_stored(name):
    content = _content(name)
    assert not [mark for mark in FRAME if mark in content], content[:400]
    assert not re.search(r"^-\s*$", content, re.M)  # the bar's empty bullet


def test_the_links_that_are_the_pages_content_stay():
    letters = _content("genindex.html")
    assert letters.startswith("# Index {#index}\n") and "Index pages by letter" in letters
    assert (
        "**Symbols** | **_** | **A** | **B**" in letters and "**Full index on one page**" in letters
    )
    entries = _content("genindex-Y.html")
    assert "- year (datetime.date attribute)\n  - (datetime.datetime attribute)" in entries
    assert (
        len(re.findall(r"^ *- ", entries, re.M)) == 19
    )  # every entry of the letter (its 19 `<li>`), nested too
    faq = _content("faq/index.html")
    assert len(re.findall(r"^- .* FAQ$", faq, re.M)) == 8  # the section's contents: its eight FAQs
    assert "- `concurrent.futures` – Launching parallel tasks" in _content(
        "library/concurrent.html"
    )
    assert "Searching for multiple words only shows matches" in _content("search.html")


def test_the_five_pages_measured_as_a_site_keep_their_content_and_no_chrome():
    """As `kb_site_bench` measures them: the lines these pages repeat are the frame."""
    bodies = {name: (SITE / name).read_bytes() for name in PAGES}
    extracted = {
        name: extract(body, "text/html", url=f"https://docs.python.org/3.11/{name}")
        for name, body in bodies.items()
    }
    repeated = BoilerplateCounter(
        {name: block_keys(e.content, bodies[name]) for name, e in extracted.items()}
    ).repeated(final=True)
    chunks = [
        ChunkFacts(name, c.body, c.heading_path, c.anchor)
        for name, e in extracted.items()
        for c in chunk_markdown(split_repeated(e.content, repeated)[0], e.title, web_page=True)
    ]
    result = fidelity({name: page_facts(body) for name, body in bodies.items()}, chunks)
    assert result.chrome_share == 0, result.chrome_share
    assert result.recall_worst == 1.0, (result.worst_page, result.low_recall_pages)
