"""A crawl never fails for one bad page, and a page whose chunks lost its text says so."""

from __future__ import annotations

import pytest

from ingest.links import page_links
from ingest.service import start_ingest
from kb.models import Document, IngestItem, Source
from tests.webserver import WebServer

BAD_LINK = (
    "<a "
    'href="http://HOST_NAME_OR_IP_ADDRESS[:PORT_NUMBER]/">http://HOST_NAME_OR_IP_ADDRESS[:PORT_NUMBER]/</a>'
)


@pytest.fixture
def web(allow_loopback):
    with WebServer() as server:
        yield server


def _crawl(namespace, web):
    source = Source.objects.create(
        namespace=namespace,
        name="site",
        kind="crawl",
        location=web.url("/"),
        options={"use_llms_txt": False, "respect_robots": False, "max_depth": 3},
    )
    return source, start_ingest(source, sync=True)


def test_a_link_that_is_no_url_is_not_followed_and_the_crawl_goes_on(namespace, web):
    web.page(
        "/",
        "<main><h1>Home</h1><p>Start here.</p><a href='/a.html'>A</a> <a "
        "href='/b.html'>B</a></main>",
    )
    web.page(
        "/a.html",
        f"<main><h1>Setup</h1><p>Point the client at {BAD_LINK} and restart it.</p>"
        "<a href='/c.html'>C</a></main>",
    )
    web.page("/b.html", "<main><h1>B</h1><p>Second page.</p></main>")
    web.page("/c.html", "<main><h1>C</h1><p>Reached through the page with the odd link.</p></main>")
    source, run = _crawl(namespace, web)
    assert run.status == "succeeded", list(
        run.items.values_list("ref", "error_code", "error_message")
    )
    refs = set(Document.objects.filter(source=source).values_list("ref", flat=True))
    assert {web.url("/a.html"), web.url("/b.html"), web.url("/c.html")} <= refs
    setup = Document.objects.get(source=source, ref=web.url("/a.html"))
    assert (
        "HOST_NAME_OR_IP_ADDRESS" in setup.chunks.first().text
    )  # the words stay, the link is not followed


def test_page_links_skips_what_is_not_a_url():
    links, _ = page_links(f"<p>{BAD_LINK} <a href='/ok'>ok</a></p>".encode(), "http://example.com/")
    assert links == ["http://example.com/ok"]


def test_a_page_whose_text_did_not_reach_its_chunks_is_flagged_low_recall(namespace, web):
    lost = " ".join(f"Sentence {i} of the text the extractor drops." for i in range(40))
    web.page(
        "/",
        "<main><h1>Home</h1><p>Short kept intro.</p><a href='/b.html'>B</a></main>"
        f"<form><p>{lost}</p></form>",
    )
    web.page(
        "/b.html", "<main><h1>B</h1><p>A page read whole, with all of its words kept.</p></main>"
    )
    _, run = _crawl(namespace, web)
    reasons = dict(run.items.filter(status=IngestItem.Status.CHANGED).values_list("ref", "reason"))
    assert "low_recall 0." in reasons[web.url("/")], reasons
    assert "low_recall" not in reasons[web.url("/b.html")]


def test_a_flagged_page_is_stored_whatever_its_report_says(namespace, web):
    """The item's report text ("pipeline upgraded; low_recall 0.05; ...") is not the chunk's embed
    reason: written there whole it overflowed the column and the page failed to store."""
    lost = " ".join(f"Sentence {i} of the text the extractor drops." for i in range(40))
    web.page("/", f"<main><h1>Home</h1><p>Short kept intro.</p></main><form><p>{lost}</p></form>")
    source, _ = _crawl(namespace, web)
    document = Document.objects.get(source=source)
    document.metadata = {**document.metadata, "pipeline": "0"}  # written by an older pipeline,
    document.save(update_fields=["metadata"])
    document.chunks.update(text="as the older pipeline chunked it")  # which chunked it otherwise
    run = start_ingest(source, sync=True)
    item = run.items.get()
    assert (item.status, item.error_code) == ("changed", ""), item.error_message
    assert item.reason.startswith("pipeline upgraded; low_recall 0.")
    assert set(document.chunks.values_list("embed_reason", flat=True)) == {"pipeline upgraded"}


def test_a_page_named_canonical_by_an_earlier_page_is_ingested_once(namespace, web):
    """Javadoc's overview-summary.html says `<link rel=canonical href=index.html>`; the crawl
    reaches index.html itself later: two documents with one ref failed the whole run's write."""
    web.page(
        "/", "<main><h1>Start</h1><p>Start page.</p><a href='/overview.html'>Overview</a></main>"
    )
    web.page(
        "/overview.html",
        "<head><link rel='canonical' href='/index.html'></head>"
        "<main><h1>Overview</h1><p>Redirects.</p><a href='/index.html'>index</a></main>",
    )
    web.page("/index.html", "<main><h1>Index</h1><p>The real index page.</p></main>")
    source, run = _crawl(namespace, web)
    assert run.status == "succeeded", run.error
    assert Document.objects.filter(source=source, ref=web.url("/index.html")).count() == 1
    assert (
        run.items.filter(
            status=IngestItem.Status.SKIPPED, reason__startswith="a duplicate of"
        ).count()
        == 1
    )
