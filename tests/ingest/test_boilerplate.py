"""Blocks that repeat across a source's pages are recognised and dropped, in the unit and in a
sitemap ingest of real MkDocs pages into which one site-wide line was rendered."""

from __future__ import annotations

from pathlib import Path

from ingest.boilerplate import (
    MIN_SAMPLE,
    BoilerplateCounter,
    block_keys,
    blocks,
    drop_repeated,
    settle,
    split_repeated,
)
from ingest.service import start_ingest
from kb.models import Chunk, Source
from tests.webserver import Route

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "mkdocs-site"
PAGES = [
    "user-guide/configuration.html",
    "user-guide/cli.html",
    "user-guide/installation.html",
    "user-guide/deploying-your-docs.html",
    "getting-started.html",
]
FOOTER = "Was this page helpful? Edit this page on GitHub."


def test_counter_needs_three_documents_and_half_of_them():
    counter = BoilerplateCounter()
    footer = block_keys("# A\n\nEdit this page\n")[0]
    counter.observe("a", (footer,))
    counter.observe("b", (footer,))
    assert footer not in counter.repeated(final=True)
    counter.observe("c", (footer,))
    assert footer in counter.repeated(final=True)
    assert footer not in counter.repeated()  # while counting: three pages are no evidence yet
    for ref in "defgh":
        counter.observe(ref, ())
    assert footer not in counter.repeated(final=True)  # 3 of 8 pages: not half of the site
    counter.observe("a", (footer,))  # observing a page again replaces, never double counts
    assert footer not in counter.repeated(final=True)


def test_while_counting_a_block_is_dropped_only_on_a_large_sample():
    counter = BoilerplateCounter()
    footer = block_keys("Edit this page\n")[0]
    for n in range(MIN_SAMPLE - 1):
        counter.observe(str(n), (footer,))
    assert counter.repeated() == frozenset()
    counter.observe("last", (footer,))
    assert footer in counter.repeated()


def test_settle_puts_back_what_is_no_longer_repeated_and_drops_what_now_is():
    page = "# T\n\nInstall note.\n\nBody text.\n\nEdit this page\n"
    note, footer = block_keys("Install note.\n")[0], block_keys("Edit this page\n")[0]
    early, dropped = split_repeated(page, frozenset({note}))
    assert "Install note." not in early and dropped == ((1, "Install note."),)
    settled, now = settle(early, dropped, frozenset({footer}))
    assert settled == "# T\n\nInstall note.\n\nBody text.\n" and now == ((3, "Edit this page"),)


def test_headings_code_and_long_blocks_are_never_dropped():
    content = (
        "# Edit this page\n\n```\nEdit this page\n\nx\n```\n\nEdit this page\n\n"
        + "long " * 100
        + "\n"
    )
    keys = frozenset(block_keys(content))
    cleaned, dropped = drop_repeated(content, keys)
    assert dropped == 1 and cleaned.count("Edit this page") == 2 and "long long" in cleaned
    assert blocks("```\na\n\nb\n```\n\nc\n") == ["```\na\n\nb\n```", "c"]


def test_a_site_wide_line_leaves_every_page_of_a_sitemap_source(web, namespace, allow_loopback):
    urls = []
    for name in PAGES:
        html = (
            (SITE / name)
            .read_text("utf-8")
            .replace(
                '<div class="col-md-9" role="main">',
                f'<div class="col-md-9" role="main"><p>{FOOTER}</p>',
                1,
            )
        )
        assert FOOTER in html
        web.page("/" + name, html)
        urls.append(web.url("/" + name))
    web.routes["/sitemap.xml"] = Route(
        (
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
            + "</urlset>"
        ).encode(),
        200,
        {"Content-Type": "application/xml"},
    )
    source = Source.objects.create(
        namespace=namespace,
        name="site",
        kind="sitemap",
        location=web.url("/sitemap.xml"),
        options={"use_llms_txt": False},
    )
    run = start_ingest(source, sync=True)
    assert run.status == "succeeded"
    texts = list(Chunk.objects.filter(document__source=source).values_list("text", flat=True))
    assert texts and not any("Was this page helpful" in t for t in texts)
    # the footer was found to repeat only at the end: each page was written again without it, and
    # only the passages whose text changed were embedded again (not every passage twice)
    assert run.chunks_written == len(texts)  # what the pages hold, not what was written twice
    reasons = list(
        Chunk.objects.filter(document__source=source).values_list("embed_reason", flat=True)
    )
    again = reasons.count("site boilerplate learned")
    assert 0 < again < len(texts) / 2 and "new" in reasons
    assert run.chunks_embedded < 1.5 * len(texts)
    assert any("mkdocs serve" in t for t in texts)  # the pages' own text stays
    second = start_ingest(source, sync=True)  # the footer is still known as boilerplate next time
    assert second.items_changed == 0


def test_a_paragraph_shared_by_the_first_pages_only_is_kept(web, namespace, allow_loopback):
    """A note on the first three pages of a ten-page sitemap is content: it used to be dropped
    from them for good as soon as the third page was read."""
    note = "Install the extension with pip before you follow these steps."
    urls = []
    for n in range(10):
        extra = f"<p>{note}</p>" if n < 3 else ""
        web.page(
            f"/p{n}.html",
            f"<main><h1>Page {n}</h1>{extra}<p>Own text of page number {n}.</p></main>",
        )
        urls.append(web.url(f"/p{n}.html"))
    web.routes["/sitemap.xml"] = Route(
        (
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
            + "</urlset>"
        ).encode(),
        200,
        {"Content-Type": "application/xml"},
    )
    source = Source.objects.create(
        namespace=namespace,
        name="site",
        kind="sitemap",
        location=web.url("/sitemap.xml"),
        options={"use_llms_txt": False},
    )
    assert start_ingest(source, sync=True).status == "succeeded"
    with_note = Chunk.objects.filter(document__source=source, text__contains=note).count()
    assert with_note == 3
