"""Numbered lists stay lists, and footnotes and endnotes stay with their text, in every format
the document view shows: HTML, DOCX and ODT (issues #57 point 5 and #63 item 4)."""

from __future__ import annotations

from pathlib import Path

from ingest.extract import extract
from kb.render import render_markdown

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"


def _html(body: str) -> str:
    return extract(f"<html><body><main><h1>T</h1>{body}</main></body></html>".encode(), "text/html").content


def test_html_ordered_list_nested_under_an_item_stays_nested_and_keeps_its_start():
    content = _html("<ol><li>one</li><li>two<ol><li>inner</li></ol></li><li>three</li></ol>"
                    "<p>then</p><ol start='4'><li>four</li></ol>")
    assert "2. two\n   1. inner\n3. three" in content  # three spaces: CommonMark's indent under "2. "
    html = render_markdown(content)
    assert "<li>two\n<ol>\n<li>inner</li>\n</ol>\n</li>" in html
    assert '<ol start="4">\n<li>four</li>' in html


def test_real_html_list_numbered_from_zero_keeps_its_numbers():
    page = REAL / "makeinfo" / "GNU-Free-Documentation-License.html"  # <ol start="0">: sections 0 to 11
    content = extract(page.read_bytes(), "text/html", url="https://www.gnu.org/software/hello/manual/").content
    assert "\n0. PREAMBLE\n" in content and "\n11. RELICENSING\n" in content
