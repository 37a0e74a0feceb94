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


@pytest.mark.parametrize(
    "name",
    [
        "apache/directives.html",
        "apache/caching.html",
        "sqlite/docs.html",
        "sqlite/fts3.html",
        "makeinfo/Sample-output.html",
    ],
)
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


@pytest.mark.parametrize(
    "name",
    [
        "apache/directives.html",
        "apache/caching.html",
        "sqlite/docs.html",
        "sqlite/fts3.html",
        "makeinfo/Sample-output.html",
        "haddock/Data-List-Split.html",
        "nodejs/os.html",
        "sphinx/sqlite3.html",
    ],
)
def test_pages_kept_whole_raise_no_flag(name):
    body = (REAL / name).read_bytes()
    page = extract(body, "text/html")
    assert not content_recall(page_lines(body), _chunks(page.content, page.title)).low


def test_a_line_of_links_to_the_pages_own_headings_is_its_contents_not_content():
    """Doxygen's "Modules | Macros | Enumerator | Variables" above a group page links to the
    page's own sections by their headings' names (one of them dangling): the headings count,
    their contents line does not. A line with words of its own, or links to another page, counts."""
    page = b"""<h1>Write Flags</h1><div><a href="#groups">Modules</a> | <a href="#define-members">Macros</a> |
    <a href="#enumval-members">Enumerator</a></div><p>See <a href="#define-members">Macros</a> below.</p>
    <p><a href="other.html#groups">Modules</a></p><h2><a name="groups"></a>Modules</h2><p>Copy Flags</p>
    <h2><a name="define-members"></a>Macros</h2><p>MDB_NOOVERWRITE 0x10</p>"""  # noqa: E501
    assert [line.text for line in page_lines(page)] == [
        "write flags",
        "see macros below",
        "modules",
        "modules",
        "copy flags",
        "macros",
        "mdb_nooverwrite 0x10",
    ]


def test_a_one_page_manuals_index_links_to_the_page_and_is_content():
    """The entries of the Bash reference's builtin index link to anchors of the same page (it is
    one page), by names that are not headings: they are content, and losing them is seen."""
    body = (REAL / "makeinfo-index/bashref-builtin-index.html").read_bytes()
    texts = [line.text for line in page_lines(body)]
    assert {"alias", "bash builtins", "bg", "job control builtins"} <= set(texts)
    page = extract(body, "text/html")
    assert content_recall(page_lines(body), _chunks(page.content, page.title)).share == 1.0
    soup = BeautifulSoup(body, "html.parser")
    soup.find("table", class_="index-bt").decompose()
    lost = extract(str(soup).encode(), "text/html")
    recall = content_recall(page_lines(body), _chunks(lost.content, lost.title))
    assert recall.share < LOW_RECALL and recall.low, recall.share


def test_an_index_of_links_to_other_pages_lost_is_flagged():
    """Python's index for the letter Y, its 19 entries links to other pages, extracted without
    them."""
    body = (REAL / "sphinx-short/genindex-Y.html").read_bytes()
    page = extract(body, "text/html")
    assert not content_recall(page_lines(body), _chunks(page.content, page.title)).low
    lost = re.sub(r"^ *- .*\n?", "", page.content, flags=re.M)
    assert content_recall(page_lines(body), _chunks(lost, page.title)).share < LOW_RECALL


@pytest.mark.parametrize("name", ["doxygen/group__mdb__put.html", "doxygen/group__idls.html"])
def test_a_doxygen_group_page_is_kept_whole_with_the_group_it_belongs_to(name):
    """The group it belongs to ("LMDB API", "LMDB Internals", inside the title block) is a line
    under the title; its contents line is not counted; nothing else is lost."""
    body = (REAL / name).read_bytes()
    page = extract(body, "text/html")
    assert re.match(r"# [\w ]+\n\nLMDB (API|Internals)\n\n## ", page.content), page.content[:80]
    assert content_recall(page_lines(body), _chunks(page.content, page.title)).share == 1.0
