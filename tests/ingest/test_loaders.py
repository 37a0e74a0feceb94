"""Each loader against a real HTTP server on loopback (allowed through the private-host list)."""

import pytest

from ingest.errors import ContentRejected
from ingest.fetch import Fetcher, FetchPolicy
from ingest.loaders import KnownDocument, SourceLoader, SourceSpec
from ingest.ssrf import parse_allow_rules
from tests.webserver import Route

XML = {"Content-Type": "application/xml"}


@pytest.fixture
def fetcher():
    return Fetcher(FetchPolicy(allowed=parse_allow_rules(["127.0.0.0/8:*"])))


def _load(spec, fetcher, **kwargs):
    loader = SourceLoader(spec, fetcher=fetcher, **kwargs)
    return loader, list(loader.items())


def test_url_loader_fetches_one_page(web, fetcher):
    web.page("/page", "<h1>One</h1>")
    loader, items = _load(SourceSpec("url", web.url("/page")), fetcher)
    assert [(i.ref, i.body) for i in items] == [(web.url("/page"), b"<h1>One</h1>")]
    assert loader.complete


def test_sitemap_index_lastmod_and_conditional_refetch(web, fetcher):
    web.routes["/sitemap.xml"] = Route(
        f"""<?xml version="1.0"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>{web.url("/sm-1.xml")}</loc></sitemap></sitemapindex>""".encode(),
        200,
        XML,
    )
    web.routes["/sm-1.xml"] = Route(
        f"""<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>{web.url("/a")}</loc><lastmod>2026-01-01</lastmod></url>
  <url><loc>/b</loc><lastmod>2026-02-01</lastmod></url></urlset>""".encode(),
        200,
        XML,
    )
    web.page("/a", "<p>A</p>")
    web.page("/b", "<p>B</p>", ETag='"b1"')
    _, items = _load(
        SourceSpec("sitemap", web.url("/sitemap.xml"), options={"use_llms_txt": False}), fetcher
    )
    assert [(i.ref, i.lastmod, i.body) for i in items] == [
        (web.url("/a"), "2026-01-01", b"<p>A</p>"),
        (web.url("/b"), "2026-02-01", b"<p>B</p>"),
    ]

    # next time: /a's lastmod is unchanged (no request at all), /b answers 304 to its ETag
    known = {
        web.url("/a"): KnownDocument(web.url("/a"), lastmod="2026-01-01"),
        web.url("/b"): KnownDocument(web.url("/b"), etag='"b1"', lastmod="2025-12-31"),
    }
    _, items = _load(
        SourceSpec("sitemap", web.url("/sitemap.xml"), options={"use_llms_txt": False}),
        fetcher,
        known=known,
    )
    assert [i.not_modified for i in items] == [True, True]
    assert web.hits["/a"] == 1 and web.hits["/b"] == 2


def test_sitemap_with_entity_expansion_is_refused(web, fetcher):
    bomb = b"""<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>
<urlset><url><loc>&lol2;</loc></url></urlset>"""  # noqa: E501
    web.routes["/sitemap.xml"] = Route(bomb, 200, XML)
    with pytest.raises(ContentRejected) as excinfo:
        _load(
            SourceSpec("sitemap", web.url("/sitemap.xml"), options={"use_llms_txt": False}), fetcher
        )
    assert excinfo.value.code == "INGEST_BAD_SITEMAP"


def test_sitemap_and_crawl_prefer_llms_txt(web, fetcher):
    web.routes["/llms.txt"] = Route(
        b"# Site\n\n> About\n\n## Docs\n\n- [Intro](/intro): start here\n- "
        b"[API](https://elsewhere.invalid/api)\n",
        200,
        {"Content-Type": "text/plain"},
    )
    web.page("/intro", "<p>intro</p>")
    _, items = _load(SourceSpec("crawl", web.url("/"), options={"max_pages": 1}), fetcher)
    assert [(i.ref, i.title_hint) for i in items] == [(web.url("/intro"), "Intro")]
    assert web.hits["/"] == 0  # the crawl never started: llms.txt listed the documents
    # turning the option off crawls instead
    web.page("/", "<p>home</p>")
    _, items = _load(
        SourceSpec("crawl", web.url("/"), options={"use_llms_txt": False, "max_pages": 1}), fetcher
    )
    assert [i.ref for i in items] == [web.url("/")]


def test_llms_source_parses_links(web, fetcher):
    web.routes["/llms.txt"] = Route(
        b'# T\n- [One](/one)\n- [Two](two.html "title")\n- [One again](/one#x)\n',
        200,
        {"Content-Type": "text/markdown"},
    )
    web.page("/one", "<p>1</p>")
    web.page("/two.html", "<p>2</p>")
    _, items = _load(SourceSpec("llms", web.url("/llms.txt")), fetcher)
    assert [(i.ref, i.title_hint, i.body) for i in items] == [
        (web.url("/one"), "One", b"<p>1</p>"),
        (web.url("/two.html"), "Two", b"<p>2</p>"),
    ]


def test_crawl_is_breadth_first_bounded_same_origin_and_honours_robots(web, fetcher):
    web.routes["/robots.txt"] = Route(
        b"User-agent: *\nDisallow: /private\n", 200, {"Content-Type": "text/plain"}
    )
    web.page(
        "/",
        '<a href="/l1a">a</a> <a href="/l1b">b</a> <a href="/private/x">p</a> '
        '<a href="https://other.invalid/x">ext</a> <a href="/logo.png">img</a>',
    )
    web.page("/l1a", '<a href="/l2">deeper</a> <a href="/">home</a>')
    web.page("/l1b", "<p>b</p>")
    web.page("/l2", '<a href="/l3">deepest</a>')
    web.page("/l3", "<p>too deep</p>")
    web.page("/private/x", "<p>secret</p>")
    loader, items = _load(
        SourceSpec("crawl", web.url("/"), options={"max_depth": 2, "use_llms_txt": False}), fetcher
    )
    assert [i.ref for i in items] == [
        web.url("/"),
        web.url("/l1a"),
        web.url("/l1b"),
        web.url("/l2"),
    ]
    assert web.hits["/private/x"] == 0 and web.hits["/l3"] == 0
    assert loader.complete

    loader, items = _load(
        SourceSpec("crawl", web.url("/"), options={"max_pages": 2, "use_llms_txt": False}), fetcher
    )
    assert len(items) == 2
    assert not loader.complete  # stopped by the page limit: unvisited pages are not "removed"


def test_crawl_allowed_domains(web, fetcher):
    web.page("/", f'<a href="{web.url("/other", host="localhost")}">other host</a>')
    web.page("/other", "<p>other</p>")
    spec = SourceSpec(
        "crawl",
        web.url("/"),
        options={
            "use_llms_txt": False,
            "respect_robots": False,
            "allowed_domains": [f"localhost:{web.port}"],
        },
    )
    policy = Fetcher(FetchPolicy(allowed=parse_allow_rules(["127.0.0.0/8:*", "[::1]:*"])))
    _, items = _load(spec, policy)
    assert [i.ref for i in items] == [web.url("/"), web.url("/other", host="localhost")]


def test_failed_page_is_an_item_error_not_an_exception(web, fetcher):
    web.page("/", '<a href="/gone">gone</a>')
    loader, items = _load(
        SourceSpec("crawl", web.url("/"), options={"use_llms_txt": False}), fetcher
    )
    assert items[1].error.code == "INGEST_HTTP_STATUS"
    assert not loader.complete


def test_text_and_file_loaders():
    _, items = _load(SourceSpec("text", text="# Hi\n\nthere", name="Inline"), None)
    assert (items[0].ref, items[0].body, items[0].media_type) == (
        "inline",
        b"# Hi\n\nthere",
        "text/markdown",
    )
    _, items = _load(
        SourceSpec("file", files=(("docs/my-notes.md", "sources/1/ab/my-notes.md", ""),)),
        None,
        open_file=lambda key, media_type: (b"# Notes", key),
    )
    assert (items[0].ref, items[0].media_type, items[0].title_hint) == (
        "docs/my-notes.md",
        "text/markdown",
        "my notes",
    )


def test_sitemap_indexes_fan_out_to_a_bounded_number_of_fetches(web, fetcher):
    from ingest.loaders import MAX_SITEMAP_FETCHES

    sitemaps = "".join(
        f"<sitemap><loc>{web.url(f'/s{i}.xml')}</loc></sitemap>"
        for i in range(MAX_SITEMAP_FETCHES + 10)
    )
    web.routes["/index.xml"] = Route(
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{sitemaps}'
        "</sitemapindex>".encode(),
        200,
        {"Content-Type": "application/xml"},
    )
    for i in range(MAX_SITEMAP_FETCHES + 10):
        web.routes[f"/s{i}.xml"] = Route(
            b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>',
            200,
            {"Content-Type": "application/xml"},
        )
    loader = SourceLoader(
        SourceSpec("sitemap", location=web.url("/index.xml"), options={"use_llms_txt": False}),
        fetcher=fetcher,
    )
    with pytest.raises(ContentRejected, match=f"more than {MAX_SITEMAP_FETCHES} sitemaps"):
        list(loader.items())
    assert (
        sum(web.hits[f"/s{i}.xml"] for i in range(MAX_SITEMAP_FETCHES + 10)) < MAX_SITEMAP_FETCHES
    )
