"""The recall flag sees what is lost in lists of links (issue 63, point 3): link text in the
content counts, so a page that lost its index is flagged and a page kept whole is not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from ingest.chunk import chunk_markdown
from ingest.extract import extract
from ingest.recall import LOW_RECALL, content_recall, page_lines

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def _chunks(content: str, title: str) -> list[str]:
    return [c.body for c in chunk_markdown(content, title, web_page=True)]


def test_a_page_that_lost_its_list_of_links_is_flagged():
    """The directive index as it was extracted before: its 731 links gone, the preamble kept."""
    body = (REAL / "apache/directives.html").read_bytes()
    page = extract(body, "text/html")
    lost = re.sub(r"^- .*\n?", "", page.content, flags=re.M)
    assert content_recall(page_lines(body), _chunks(lost, page.title)).share < LOW_RECALL


@pytest.mark.parametrize("name", ["apache/directives.html", "apache/caching.html", "sqlite/docs.html",
                                  "sqlite/fts3.html", "makeinfo/Sample-output.html"])
def test_pages_kept_whole_are_not_flagged(name):
    body = (REAL / name).read_bytes()
    page = extract(body, "text/html")
    assert content_recall(page_lines(body), _chunks(page.content, page.title)).share >= LOW_RECALL


@pytest.mark.parametrize("name", ["apache/handler.html", "apache/filter.html"])
def test_a_page_that_lost_a_related_table_is_flagged_though_most_of_it_came_through(name):
    """The first "Related Modules / Related Directives" table taken out before extraction: the
    rest of the page is kept (recall over 0.9), but the table was 3 to 5 % of its words."""
    body = (REAL / name).read_bytes()
    soup = BeautifulSoup(body, "html.parser")
    soup.find("table", class_="related").decompose()
    page = extract(str(soup).encode(), "text/html")
    recall = content_recall(page_lines(body), _chunks(page.content, page.title))
    assert recall.share >= LOW_RECALL and recall.low, (recall.share, recall.lost_run, recall.words)
    whole = extract(body, "text/html")
    assert not content_recall(page_lines(body), _chunks(whole.content, whole.title)).low


@pytest.mark.parametrize("name", ["apache/directives.html", "apache/caching.html", "sqlite/docs.html",
                                  "sqlite/fts3.html", "makeinfo/Sample-output.html", "haddock/Data-List-Split.html",
                                  "nodejs/os.html", "sphinx/sqlite3.html"])
def test_pages_kept_whole_raise_no_flag(name):
    body = (REAL / name).read_bytes()
    page = extract(body, "text/html")
    assert not content_recall(page_lines(body), _chunks(page.content, page.title)).low
