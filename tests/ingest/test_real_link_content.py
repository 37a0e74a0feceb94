"""What a reader reads is kept (issue 63, point 2): link lists, indexes and "related" tables in
the main content, and the title and summary beside a page's one `<article>`."""

from __future__ import annotations

import re
from pathlib import Path

from ingest.extract import extract

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def _content(name: str) -> str:
    return extract(
        (REAL / name).read_bytes(), "text/html", url=f"https://httpd.example/{name}"
    ).content


def test_a_page_that_is_mostly_links_is_kept_as_its_list_of_links():
    """Apache's directive index is a list of 731 links beside a short preamble: all were dropped."""
    content = _content("apache/directives.html")
    items = re.findall(r"^- (\S+)", content, re.M)
    assert len(items) == 731
    assert {"AcceptFilter", "ProxyPass", "xml2EncAlias"} <= set(items)


def test_related_modules_and_directives_tables_are_kept():
    content = _content("apache/caching.html")
    assert (
        content.count("Related Modules") == content.count("Related Directives") == 6
    )  # the six tables of the page
    assert "CacheSocache" in content and "mod_socache_memcache" in content


def test_sphinx_related_navigation_is_still_dropped():
    content = _content("sphinx/runpy.html")
    assert "previous |" not in content and "modules |" not in content


def test_a_lone_article_keeps_the_title_and_summary_beside_it():
    html = (
        b"""<body><nav><a href='/'>Home</a></nav><div class='page'><h1>mod_example</h1>
    <p class='summary'>The example module answers every request with an example.</p>
    <article><h2>Directives</h2><p>"""
        + b"ExampleDirective sets the example. " * 20
        + b"""</p></article>
    <section><h2>See also</h2><ul><li><a href='/a'>mod_other</a></li><li><a href='/b'>mod_more</a></li></ul>
    </section></div><footer>Copyright</footer></body>"""  # noqa: E501
    )
    content = extract(html, "text/html").content
    assert "# mod_example" in content and "answers every request" in content
    assert "mod_other" in content and "ExampleDirective" in content
    assert "Home" not in content and "Copyright" not in content


def test_what_repeats_the_page_itself_is_dropped_and_what_it_repeats_is_kept():
    """Haddock's collapsed synopsis lists every declaration documented below it, and its
    contents list every heading: both repeat the page, so they go; the declarations, headings
    and their anchors stay."""
    content = _content("haddock/Data-List-Split.html")
    assert "Synopsis" not in content
    assert content.count("splitOn :: Eq a => [a] -> [a] -> [[a]]") == 1
    assert not re.search(r"^- Getting started$", content, re.M)
    assert "# Getting started {#g:1}" in content and "## Derived combinators {#g:7}" in content


def test_a_collapsed_list_that_says_more_than_the_page_is_kept():
    html = b"""<main><h1>T</h1><p>Intro text for the page.</p><details><summary>More</summary><ul>
    <li>First hidden fact</li><li>Second hidden fact</li><li>Third hidden fact</li></ul></details></main>"""  # noqa: E501
    content = extract(html, "text/html").content
    assert "Second hidden fact" in content


def test_list_items_left_empty_are_not_written_as_bullets():
    """A menu bar's theme list is buttons only: with the buttons dropped, no empty bullets."""
    html = (
        b"<main><h1>T</h1><p>Body text here.</p><ul><li><button>Light</button></li>"
        b"<li><button>Rust</button></li><li>Kept</li></ul></main>"
    )
    assert extract(html, "text/html").content == "# T\n\nBody text here.\n\n- Kept\n"
