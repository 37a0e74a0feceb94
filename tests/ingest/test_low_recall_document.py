"""A page under the recall threshold is flagged on its document too, not only in the run's
report."""

from __future__ import annotations

import pytest

from ingest.recall import low_recall_of
from ingest.service import start_ingest
from kb.models import Document, Source
from tests.webserver import WebServer


@pytest.fixture
def web(allow_loopback):
    with WebServer() as server:
        yield server


def test_a_page_that_lost_its_list_of_links_is_flagged_on_its_document(namespace, web):
    index = "".join(f"<li><a href='/d{i}.html'>Directive{i}</a></li>" for i in range(300))
    web.page(
        "/",
        "<body><div><h1>Directive Index</h1><p>Every directive, each linked to its description.</p>"
        f"</div><form><ul>{index}</ul></form><a href='/b.html'>B</a></body>",
    )
    web.page(
        "/b.html", "<main><h1>B</h1><p>A page read whole, with all of its words kept.</p></main>"
    )
    source = Source.objects.create(
        namespace=namespace,
        name="site",
        kind="crawl",
        location=web.url("/"),
        options={"use_llms_txt": False, "respect_robots": False, "max_depth": 1},
    )
    start_ingest(source, sync=True)
    flags = dict(Document.objects.filter(source=source).values_list("ref", "metadata__low_recall"))
    assert float(flags[web.url("/")]) < 0.9, flags
    assert flags[web.url("/b.html")] is None


@pytest.mark.parametrize(
    "reason, share",
    [
        ("new; low_recall 0.42; 3 repeated blocks dropped", "0.42"),
        ("low_recall 0.00", "0.00"),
        ("new", ""),
    ],
)
def test_low_recall_of_reads_the_report_note(reason, share):
    assert low_recall_of(reason) == share
