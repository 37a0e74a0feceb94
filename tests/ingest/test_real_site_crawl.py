"""A real documentation site (MkDocs' own manual, from Debian's mkdocs-doc) crawled over
loopback through the whole pipeline: scope patterns, anchors that exist on the page, no
repeated boilerplate, and a re-crawl that costs one 304 per page."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from bs4 import BeautifulSoup
from django.db.models import Count

from ingest.boilerplate import blocks
from ingest.service import start_ingest
from kb.models import Chunk, Document, IngestItem, Source
from tests.webserver import StaticSite

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "mkdocs-site"


@pytest.fixture
def site(allow_loopback):
    with StaticSite(str(SITE)) as server:
        yield server


def _failed(run):
    return list(run.items.filter(status="failed").values_list("ref", "error_code", "error_message"))


def _crawl(namespace, site, **options):
    source = Source.objects.create(
        namespace=namespace,
        name="mkdocs",
        kind="crawl",
        location=site.url("/index.html"),
        options={"use_llms_txt": False, "max_depth": 3, "respect_robots": False, **options},
    )
    return source, start_ingest(source, sync=True)


def test_crawl_takes_the_pages_in_scope_with_resolvable_anchors(namespace, site):
    # `*/`: http.server answers a folder URL with its file listing, which is no page of the site
    source, run = _crawl(namespace, site, exclude=["/dev-guide/*", "/404.html", "*/"])
    # this build of the manual links some pages without their `.html` (`/user-guide/cli`) that
    # the package does not have: real broken links, reported per page, never a failed run
    assert run.status == "partial"
    assert all(
        code == "INGEST_HTTP_STATUS" and "404" in message for _, code, message in _failed(run)
    )
    refs = set(Document.objects.filter(source=source).values_list("ref", flat=True))
    assert site.url("/user-guide/configuration.html") in refs
    assert not any("/dev-guide/" in ref for ref in refs)
    skipped = list(run.items.filter(status=IngestItem.Status.SKIPPED).values_list("ref", "reason"))
    assert any(reason == "excluded by '/dev-guide/*'" for _, reason in skipped)
    assert all(reason.startswith("excluded by") for _, reason in skipped)

    checked = resolved = 0
    for document in Document.objects.filter(source=source):
        ids = {
            t["id"]
            for t in BeautifulSoup(
                (SITE / urlsplit(document.ref).path.lstrip("/")).read_bytes(), "html.parser"
            ).find_all(id=True)
        }
        for chunk in Chunk.objects.filter(document=document).exclude(heading_path=[]):
            checked += 1
            resolved += chunk.anchor in ids or not chunk.anchor
            prose = "\n".join(b for b in blocks(chunk.text) if not b.lstrip().startswith("```"))
            assert "](http" not in re.sub(
                r"`[^`]*`", "", prose
            )  # code may show markdown, prose never
            assert not any(
                "](" in crumb or "¶" in crumb or "{#" in crumb for crumb in chunk.heading_path
            )
    assert checked > 50 and resolved >= 0.95 * checked

    # each page's line in the report says how many chunks it holds, after the blocks that repeat
    # across the site were learned and its page written again without them
    stored = dict(
        Document.objects.filter(source=source).annotate(n=Count("chunks")).values_list("ref", "n")
    )
    assert (
        dict(run.items.filter(status=IngestItem.Status.CHANGED).values_list("ref", "chunks"))
        == stored
    )
    assert sum(stored.values()) == run.chunks_written

    texts = Chunk.objects.filter(document__source=source).values_list("document__ref", "text")
    # the theme's search dialog and "Built with MkDocs" footer never reach a chunk
    assert [
        ref
        for ref, t in texts
        if "Built with" in t or "From here you can search these documents" in t
    ] == []


def test_recrawl_of_an_unchanged_site_costs_one_304_per_page(namespace, site):
    source, first = _crawl(namespace, site, include=["/user-guide/*.html", "/index.html"])
    assert first.status == "succeeded", _failed(first)
    pages = Document.objects.filter(source=source).count()
    assert pages >= 10
    site.statuses.clear()
    second = start_ingest(source, sync=True)
    assert second.status == "succeeded"
    assert (second.items_changed, second.items_unchanged) == (0, pages)
    assert site.statuses[304] == pages and site.statuses[200] == 0
    assert (
        second.items.filter(status=IngestItem.Status.SKIPPED).count()
        == first.items.filter(status=IngestItem.Status.SKIPPED).count()
        > 0
    )  # out-of-scope links are listed, never fetched
