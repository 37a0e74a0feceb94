"""The recall flag sees what is lost in lists of links (issue 63, point 3): link text in the
content counts, so a page that lost its index is flagged and a page kept whole is not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
