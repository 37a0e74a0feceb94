"""Malformed real pages read as a browser reads them (issue 63, point 1): a mismatched heading end
tag ends its heading, an unknown element around the rest of a page keeps its blocks, headings
stay bounded and every anchor the extraction writes exists on the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from ingest.chunk import chunk_markdown
from ingest.extract import extract
from ingest.extract.html import close_headings

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
ANCHOR = re.compile(r"\{#([^}]+)\}\s*$")


def _extract(name: str):
    return extract((REAL / name).read_bytes(), "text/html", url=f"https://sqlite.example/{name}")


def _page_ids(name: str) -> set[str]:
    soup = BeautifulSoup((REAL / name).read_bytes(), "lxml")
    return {t["id"] for t in soup.find_all(id=True)} | {
        a["name"] for a in soup.find_all("a", attrs={"name": True})
    }


def test_a_mismatched_heading_end_tag_ends_the_heading():
    """SQLite's docs.html opens `<h2 align="center">Documentation</h1>`: libxml2 alone ignores the
    end tag and made the rest of the page one heading of 14,513 characters."""
    content = _extract("sqlite/docs.html").content
    headings = [line for line in content.splitlines() if line.startswith("#")]
    assert "## Documentation" in headings
    assert max(len(h) for h in headings) < 100, headings
    assert max(len(line) for line in content.splitlines()) < 1000


def test_an_unknown_element_around_the_rest_of_a_page_keeps_its_blocks():
    """fts3.html has `<language-id>` unescaped in its text: the element wraps the rest of the page
    (in a browser too, which still draws its headings and code as blocks)."""
    content = _extract("sqlite/fts3.html").content
    headings = [line for line in content.splitlines() if line.startswith("#")]
    assert len(headings) == 44
    assert any(h.startswith("## 6.") for h in headings) and any(
        h.startswith("# Appendix A") for h in headings
    )
    assert content.count("\n```") >= 2 * 60  # each code block fenced on its own lines
    assert max(len(line) for line in content.splitlines()) < 2000


@pytest.mark.parametrize("name", ["sqlite/docs.html", "sqlite/fts3.html"])
def test_every_anchor_written_and_cited_exists_on_the_page(name):
    extracted = _extract(name)
    ids = _page_ids(name)
    written = {m.group(1) for line in extracted.content.splitlines() if (m := ANCHOR.search(line))}
    assert written <= ids
    cited = {
        c.anchor for c in chunk_markdown(extracted.content, extracted.title, web_page=True)
    } - {""}
    assert cited <= ids
    assert cited or name.endswith(
        "docs.html"
    )  # docs.html gives its sections no ids: cited at its top


def test_a_permalink_to_a_fragment_the_page_lacks_gives_no_anchor():
    html = (
        b"<main><h1>T</h1><h2>Usage<a class='headerlink' href='#usage-x'>#</a></h2><p>Text.</p>"
        b"<h2 id='real'>Real</h2><p>More.</p></main>"
    )
    content = extract(html, "text/html").content
    assert "## Usage\n" in content + "\n" and "## Real {#real}" in content


def test_a_heading_that_runs_on_is_written_as_text():
    html = b"<main><h1>T</h1><h2>" + b"word " * 100 + b"</h2><p>After.</p></main>"
    content = extract(html, "text/html").content
    assert not any(line.startswith("## word") for line in content.splitlines())
    assert "word word" in content and "After." in content


@pytest.mark.parametrize("body", [b"<h2>A</h1><p>b</p>", "<h2>A</h1><p>b</p>"])
def test_close_headings_reads_bytes_and_text(body):
    assert close_headings(body) == body.replace(
        b"</h1>" if isinstance(body, bytes) else "</h1>",
        b"</h2>" if isinstance(body, bytes) else "</h2>",
    )


def test_close_headings_leaves_comments_and_scripts_alone():
    body = b"<!-- <h2>x</h1> --><script>'<h2></h1>'</script><h3>y</h3>"
    assert close_headings(body) == body


def test_header_cells_that_span_columns_keep_the_cells_after_them_above_their_columns():
    html = (
        b"<main><h1>T</h1><p>Intro.</p><table><tr><th rowspan='2'>Name</th><th "
        b"colspan='2'>Size</th>"
        b"<th>Note</th></tr><tr><th>min</th><th>max</th><th>unit</th></tr>"
        b"<tr><td>a</td><td>1</td><td>2</td><td>kB</td></tr></table></main>"
    )
    rows = [
        line for line in extract(html, "text/html").content.splitlines() if line.startswith("|")
    ]
    assert rows[0] == "| Name | Size |  | Note |"
    assert rows[2] == "| Name | min | max | unit |"
    assert rows[3] == "| a | 1 | 2 | kB |"


def test_a_literal_layout_keeps_its_lines():
    html = (
        b"<main><h1>T</h1><p>Intro.</p><div class='literallayout'><p>Alice Example<br>12 Main "
        b"Street<br>Springfield<br></p></div><p>One<br>two.</p></main>"
    )
    content = extract(html, "text/html").content
    assert "Alice Example\\\n12 Main Street\\\nSpringfield\n" in content
    assert "One two." in content  # a paragraph's break is still a space


def test_a_superscript_is_not_glued_to_the_word_before_it():
    content = extract(
        b"<main><h1>T</h1><p>A HEX_DIGIT<sup>1..6</sup> run, x<sup>2</sup>.</p></main>", "text/html"
    ).content
    assert "HEX_DIGIT^1..6 run, x^2." in content
