"""The document view's markdown rendering: nothing stripped, code verbatim, nothing executable."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kb.render import render_markdown


def test_code_quotes_and_headings_survive():
    html = render_markdown("## Build {#build}\n\n> **Note** `cc`\n\n"
                           "```c\n#include <stdio.h>\n>>> x\n    indented\n```\n")
    assert "<h2>Build</h2>" in html  # the heading id is dropped as text, not made an attribute
    assert '<code class="language-c">#include &lt;stdio.h&gt;\n&gt;&gt;&gt; x\n    indented\n</code>' in html
    assert "<blockquote>" in html and "<strong>Note</strong>" in html and "<code>cc</code>" in html


def test_tables_and_lists_render():
    html = render_markdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n")
    assert "<table>" in html and "<td>1</td>" in html and "<li>one</li>" in html


def test_raw_html_and_script_urls_are_inert():
    html = render_markdown('<script>alert(1)</script>\n\n<img src=x onerror=alert(1)> [a](javascript:alert(1)) '
                           '[b](JaVaScRiPt:x) ![c](vbscript:y) [ok](https://example.com/x) [rel](../y) {onclick=z}')
    assert "<script" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript' not in html.lower() and 'src="vbscript' not in html.lower()
    assert 'href="https://example.com/x"' in html and 'href="../y"' in html
    assert "onclick=" not in html.replace("{onclick=z}", "")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet='<>"\'`#*[]()!&:/=jsavcript \n{}', max_size=300))
def test_no_tag_or_handler_from_a_document(text):
    html = render_markdown(text)
    lowered = html.lower()
    assert "<script" not in lowered and "<iframe" not in lowered
    assert 'href="javascript' not in lowered and 'src="javascript' not in lowered


def test_python_names_on_a_real_sphinx_page_are_not_turned_bold():
    """Python's runpy reference (Sphinx): `__name__`, `__main__` stand in its text outside code
    spans (signatures, prose), where underscores would make them bold "name" and "main";
    asterisks still mark emphasis."""
    import re
    from pathlib import Path

    from ingest.extract import extract

    page = Path(__file__).resolve().parents[1] / "fixtures/real/sphinx/runpy.html"
    content = extract(page.read_bytes(), "text/html", charset="utf-8").content
    outside_code = re.sub(r"`[^`]*`|```.*?```", "", content, flags=re.S)
    names = set(re.findall(r"__[a-z]+__", outside_code))
    assert names, "the page no longer has a name outside code: this test needs another page"
    html = render_markdown(content)
    for name in names:
        assert name in html, name
    assert "<strong>name</strong>" not in html and "<strong>main</strong>" not in html
    assert render_markdown("*em* and **strong**") == "<p><em>em</em> and <strong>strong</strong></p>"
