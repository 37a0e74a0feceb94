"""Content recall over real sites: every fixture folder of tests/fixtures/real/ is read as a
small site (extract, drop the site's repeated blocks, chunk) and measured as `kb_site_bench`
measures a crawled one. The measure itself is shown to move when content is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.boilerplate import BoilerplateCounter, block_keys, drop_repeated
from ingest.chunk import chunk_markdown
from ingest.extract import extract
from ingest.recall import content_recall, page_lines
from ingest.site_bench import ChunkFacts, Fidelity, fidelity, page_facts

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
SITES = ["sphinx", "mkdocs-site", "mkdocs", "docbook", "asciidoc", "asciidoctor", "javadoc", "makeinfo",
         "texi2html", "man2html", "doxygen", "nodejs"]


def site_fidelity(folder: str) -> Fidelity:
    """Extract, de-boilerplate and chunk every page of a fixture folder; measure the result."""
    root = REAL / folder
    pages, extracted = {}, {}
    for path in sorted(root.rglob("*.html")):
        ref = str(path.relative_to(root))
        body = path.read_bytes()
        pages[ref] = page_facts(body)
        extracted[ref] = extract(body, "text/html", url=f"http://127.0.0.1/{ref}")
    repeated = BoilerplateCounter({ref: block_keys(e.content) for ref, e in extracted.items()}).repeated(final=True)
    chunks = []
    for ref, page in extracted.items():
        content, _ = drop_repeated(page.content, repeated)
        chunks += [ChunkFacts(ref, c.body, c.heading_path, c.anchor)
                   for c in chunk_markdown(content, page.title, web_page=True)]
    return fidelity(pages, chunks)


def test_recall_falls_when_a_section_is_lost():
    html = b"<html><body><nav><a href='/'>Home</a> <a href='/x'>Next page</a></nav><main>" \
           b"<h1>Title</h1><p>The first paragraph says one thing about tables.</p>" \
           b"<h2>Second</h2><p>The second paragraph says another thing entirely, about indexes.</p>" \
           b"</main></body></html>"
    lines = page_lines(html)
    whole = "# Title\n\nThe first paragraph says one thing about tables.\n\n## Second\n\n" \
            "The second paragraph says another thing entirely, about indexes."
    assert content_recall(lines, [whole]).share == 1.0  # the navigation is not content
    half = content_recall(lines, ["# Title\n\nThe first paragraph says one thing about tables."])
    assert 0.3 < half.share < 0.6
    assert half.missed[0].startswith("the second paragraph")


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
    assert result.anchors_resolved_share >= 0.95, (result.anchors_checked, result.anchors_resolved_share)
