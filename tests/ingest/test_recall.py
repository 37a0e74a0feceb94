"""Content recall over real sites: every fixture folder of tests/fixtures/real/ is read as a
small site (extract, drop the site's repeated blocks, chunk) and measured as `kb_site_bench`
measures a crawled one. The measure itself is shown to move when content is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.site_bench import ChunkFacts, Fidelity, fidelity, page_facts
from ingest.boilerplate import BoilerplateCounter, block_keys, drop_repeated
from ingest.chunk import chunk_markdown
from ingest.extract import extract
from ingest.recall import content_recall, page_lines
from ingest.stylesheets import hidden_classes

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
SITES = [
    "sphinx",
    "mkdocs-site",
    "mkdocs",
    "docbook",
    "asciidoc",
    "asciidoctor",
    "javadoc",
    "makeinfo",
    "texi2html",
    "man2html",
    "doxygen",
    "nodejs",
]


def site_fidelity(folder: str) -> Fidelity:
    """Extract, de-boilerplate and chunk every page of a fixture folder; measure the result."""
    root = REAL / folder
    pages, extracted, keys = {}, {}, {}
    for path in sorted(root.rglob("*.html")):
        ref = str(path.relative_to(root))
        body = path.read_bytes()
        pages[ref] = page_facts(
            body, lambda href, folder=path.parent: _hidden_by(root, folder, href)
        )
        extracted[ref] = extract(body, "text/html", url=f"http://127.0.0.1/{ref}")
        keys[ref] = block_keys(extracted[ref].content, body)  # as the pipeline counts them
    repeated = BoilerplateCounter(keys).repeated(final=True)
    chunks = []
    for ref, page in extracted.items():
        content, _ = drop_repeated(page.content, repeated)
        chunks += [
            ChunkFacts(ref, c.body, c.heading_path, c.anchor)
            for c in chunk_markdown(content, page.title, web_page=True)
        ]
    return fidelity(pages, chunks)


def _hidden_by(root: Path, folder: Path, href: str) -> frozenset[str]:
    css = (folder / href).resolve()
    return (
        hidden_classes(css.read_text())
        if css.is_relative_to(root) and css.is_file()
        else frozenset()
    )


def test_recall_falls_when_a_section_is_lost():
    html = (
        b"<html><body><nav><a href='/'>Home</a> <a href='/x'>Next page</a></nav><main>"
        b"<h1>Title</h1><p>The first paragraph says one thing about tables.</p>"
        b"<h2>Second</h2><p>The second paragraph says another thing entirely, about indexes.</p>"
        b"</main></body></html>"
    )
    lines = page_lines(html)
    whole = (
        "# Title\n\nThe first paragraph says one thing about tables.\n\n## Second\n\n"
        "The second paragraph says another thing entirely, about indexes."
    )
    assert content_recall(lines, [whole]).share == 1.0  # the navigation is not content
    half = content_recall(lines, ["# Title\n\nThe first paragraph says one thing about tables."])
    assert 0.3 < half.share < 0.6
    assert half.missed[0].startswith("the second paragraph")


def test_a_line_number_gutter_is_not_content_but_a_number_in_text_is():
    listing = (
        b"<div><div class='line'>1 int main() {</div><div class='line'>2</div><div "
        b"class='line'>3   return 0;</div><div class='line'>4 }</div></div><p>42 is the answer</p>"
    )
    assert [line.text for line in page_lines(listing)] == [
        "int main",
        "return 0",
        "42 is the answer",
    ]
    chunks = ["```\nint main() {\n  return 0;\n}\n```", "42 is the answer"]
    assert content_recall(page_lines(listing), chunks).share == 1


def test_what_the_site_hides_is_not_content():
    css = (
        "/* tooltips */ .ttc { position: absolute; display: none; } .tip:hover { display: none } "
        "@media print { .screen { display: none } } .x, .y {display:none !important}"
    )
    assert hidden_classes(css) == {"ttc", "x", "y"}
    html = (
        b"<p>Shown text here.</p><div class='ttc'>A tooltip copied from another page.</div>"
        b"<p hidden>Hidden attribute.</p><p style='display: none'>Inline hidden.</p>"
    )
    assert [line.text for line in page_facts(html, lambda href: frozenset()).content][
        0
    ] == "shown text here"
    seen = page_facts(
        b"<link rel='stylesheet' href='d.css'>" + html, lambda href: hidden_classes(css)
    ).content
    assert [line.text for line in seen] == ["shown text here"]


def test_doxygen_tooltips_would_count_if_the_stylesheet_were_not_read():
    """The measure sees the difference: without the site's stylesheet, the source page's hidden
    hover tooltips (`.ttc`, copies of other pages' declarations) count as lost content."""
    root = REAL / "doxygen"
    body = (root / "midl_8h_source.html").read_bytes()
    page = extract(body, "text/html", url="http://127.0.0.1/midl_8h_source.html")
    chunks = [c.body for c in chunk_markdown(page.content, page.title, web_page=True)]
    read = page_facts(body, lambda href: _hidden_by(root, root, href))
    unread = page_facts(body)
    assert content_recall(read.content, chunks).share >= 0.98
    assert content_recall(unread.content, chunks).share < 0.9


@pytest.mark.parametrize("folder", SITES)
def test_every_page_of_every_fixture_site_keeps_its_content(folder):
    result = site_fidelity(folder)
    assert result.recall_worst >= 0.98, (result.worst_page, result.low_recall_pages)
    # the chrome share is an upper bound: on a three-page site, Javadoc's "Parameters:" and
    # "Returns:" labels are lines "repeated on half the pages"
    assert result.chrome_share < (0.03 if folder == "javadoc" else 0.02)
    assert result.permalink_chunks == 0


@pytest.mark.parametrize("folder", SITES)
def test_anchors_resolve_on_every_fixture_site(folder):
    result = site_fidelity(folder)
    assert result.anchors_resolved_share >= 0.95, (
        result.anchors_checked,
        result.anchors_resolved_share,
    )


def test_a_method_named_with_brackets_is_not_a_permalink():
    pages = {"p": page_facts(b"<h2 id='x'>server[Symbol.asyncDispose]()</h2><p>Closes it.</p>")}
    name = "server[Symbol.asyncDispose]()"
    named = ChunkFacts("p", f"#### {name} {{#x}}\n\nCloses it.", (name,), "x")
    linked = ChunkFacts("p", "See [the guide](http://example.com/guide).", ("Intro",), "")
    assert fidelity(pages, [named]).permalink_chunks == 0
    assert fidelity(pages, [named, linked]).permalink_chunks == 1
