"""Haddock's declarations are sections of their own, cited at the ids the page gives them
(issue #63): `<p class="src"><a id="v:splitOn">splitOn</a> :: ... <a href="#v:splitOn">#</a>`
is a heading under its section, as Sphinx's described objects are, without its "Source" link.
The page is Debian's libghc-split-doc (tests/fixtures/real/README.md)."""

from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup

from ingest.chunk import chunk_markdown
from ingest.extract import extract

PAGE = (
    Path(__file__).resolve().parent.parent
    / "fixtures"
    / "real"
    / "haddock"
    / "Data-List-Split.html"
)


def _page():
    body = PAGE.read_bytes()
    extracted = extract(
        body, "text/html", url="https://hackage.haskell.org/package/split/docs/Data-List-Split.html"
    )
    return body, extracted, chunk_markdown(extracted.content, extracted.title, web_page=True)


def test_each_declaration_is_a_heading_under_its_section():
    _, extracted, _ = _page()
    assert "# Convenience functions {#g:2}\n\nThese functions implement" in extracted.content
    declaration = (
        "\n## splitOn :: Eq a => [a] -> [a] -> [[a]] {#v:splitOn}\n\nSplit on the given sublist."
    )
    assert declaration in extracted.content
    assert (
        "\n### oneOf :: Eq a => [a] -> Splitter a {#v:oneOf}\n" in extracted.content
    )  # under "## Basic strategies"
    headings = [line for line in extracted.content.split("\n") if line.startswith("#")]
    assert len(headings) == 36 and not any("Source" in heading for heading in headings)


def test_every_chunk_anchor_is_an_id_of_the_page():
    body, _, chunks = _page()
    ids = {tag["id"] for tag in BeautifulSoup(body, "html.parser").find_all(id=True)}
    anchors = [chunk.anchor for chunk in chunks if chunk.anchor]
    assert "v:splitOn" in anchors and "v:endsWithOneOf" in anchors
    assert set(anchors) <= ids
    splits = [chunk for chunk in chunks if chunk.anchor == "v:splitOn"]
    assert splits[0].heading_path == (
        "Convenience functions",
        "splitOn :: Eq a => [a] -> [a] -> [[a]]",
    )
