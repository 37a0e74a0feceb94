"""Blocks that repeat across a source's pages are recognised and dropped, in the unit and in a
sitemap ingest of real MkDocs pages into which one site-wide line was rendered."""

from __future__ import annotations

from pathlib import Path

from ingest.boilerplate import BoilerplateCounter, block_keys, blocks, drop_repeated
from ingest.services import start_ingest
from kb.models import Chunk, Source
from tests.webserver import Route

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "mkdocs-site"
PAGES = ["user-guide/configuration.html", "user-guide/cli.html", "user-guide/installation.html",
         "user-guide/deploying-your-docs.html", "getting-started.html"]
FOOTER = "Was this page helpful? Edit this page on GitHub."


def test_counter_needs_three_documents_and_half_of_them():
    counter = BoilerplateCounter()
    footer = block_keys("# A\n\nEdit this page\n")[0]
    counter.observe("a", (footer,))
    counter.observe("b", (footer,))
    assert footer not in counter.repeated()
    counter.observe("c", (footer,))
    assert footer in counter.repeated()
    for ref in "defgh":
        counter.observe(ref, ())
    assert footer not in counter.repeated()  # 3 of 8 pages: not half of the site
    counter.observe("a", (footer,))  # observing a page again replaces, never double counts
    assert footer not in counter.repeated()


def test_headings_code_and_long_blocks_are_never_dropped():
    content = "# Edit this page\n\n```\nEdit this page\n\nx\n```\n\nEdit this page\n\n" + "long " * 100 + "\n"
    keys = frozenset(block_keys(content))
    cleaned, dropped = drop_repeated(content, keys)
    assert dropped == 1 and cleaned.count("Edit this page") == 2 and "long long" in cleaned
    assert blocks("```\na\n\nb\n```\n\nc\n") == ["```\na\n\nb\n```", "c"]


def test_a_site_wide_line_leaves_every_page_of_a_sitemap_source(web, namespace, allow_loopback):
    urls = []
    for name in PAGES:
        html = (SITE / name).read_text("utf-8").replace('<div class="col-md-9" role="main">',
                                                         f'<div class="col-md-9" role="main"><p>{FOOTER}</p>', 1)
        assert FOOTER in html
        web.page("/" + name, html)
        urls.append(web.url("/" + name))
    web.routes["/sitemap.xml"] = Route(
        ('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
         + "".join(f"<url><loc>{u}</loc></url>" for u in urls) + "</urlset>").encode(),
        200, {"Content-Type": "application/xml"})
    source = Source.objects.create(namespace=namespace, name="site", kind="sitemap",
                                   location=web.url("/sitemap.xml"), options={"use_llms_txt": False})
    run = start_ingest(source, sync=True)
    assert run.status == "succeeded"
    texts = list(Chunk.objects.filter(document__source=source).values_list("text", flat=True))
    assert texts and not any("Was this page helpful" in t for t in texts)
    assert any("mkdocs serve" in t for t in texts)  # the pages' own text stays
    second = start_ingest(source, sync=True)  # the footer is still known as boilerplate next time
    assert second.items_changed == 0
