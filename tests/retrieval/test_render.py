"""The document view's markdown rendering: nothing stripped, code verbatim, nothing executable."""

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.extract import extract
from retrieval.render import render_markdown

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
FENCE_OPENING = re.compile(
    r"^(?P<prefix>(?:> ?)*[ ]*)(?P<fence>`{3,}|~{3,})(?P<language>[\w+-]*)[ \t]*$"
)


def test_code_quotes_and_headings_survive():
    html = render_markdown(
        "## Build {#build}\n\n> **Note** `cc`\n\n"
        "```c\n#include <stdio.h>\n>>> x\n    indented\n```\n"
    )
    assert "<h2>Build</h2>" in html  # the heading id is dropped as text, not made an attribute
    assert (
        '<code class="language-c">#include &lt;stdio.h&gt;\n&gt;&gt;&gt; x\n    indented\n</code>'
        in html
    )
    assert "<blockquote>" in html and "<strong>Note</strong>" in html and "<code>cc</code>" in html


def test_tables_and_lists_render():
    html = render_markdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n")
    assert "<table>" in html and "<td>1</td>" in html and "<li>one</li>" in html


def test_raw_html_and_script_urls_are_inert():
    html = render_markdown(
        "<script>alert(1)</script>\n\n<img src=x onerror=alert(1)> [a](javascript:alert(1)) "
        "[b](JaVaScRiPt:x) ![c](vbscript:y) [ok](https://example.com/x) [rel](../y) {onclick=z}"
    )
    assert "<script" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript' not in html.lower() and 'src="vbscript' not in html.lower()
    assert 'href="https://example.com/x"' in html and 'href="../y"' in html
    assert "onclick=" not in html.replace("{onclick=z}", "")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="<>\"'`#*[]()!&:/=jsavcript \n{}", max_size=300))
def test_no_tag_or_handler_from_a_document(text):
    html = render_markdown(text)
    lowered = html.lower()
    assert "<script" not in lowered and "<iframe" not in lowered
    assert 'href="javascript' not in lowered and 'src="javascript' not in lowered


def test_python_names_on_a_real_sphinx_page_are_not_turned_bold():
    """Python's runpy reference (Sphinx): `__name__`, `__main__` stand in its text outside code
    spans (signatures, prose), where underscores would make them bold "name" and "main";
    asterisks still mark emphasis."""
    page = REAL / "sphinx/runpy.html"
    content = extract(page.read_bytes(), "text/html", charset="utf-8").content
    outside_code = re.sub(r"`[^`]*`|```.*?```", "", content, flags=re.S)
    names = set(re.findall(r"__[a-z]+__", outside_code))
    assert names, "the page no longer has a name outside code: this test needs another page"
    html = render_markdown(content)
    for name in names:
        assert name in html, name
    assert "<strong>name</strong>" not in html and "<strong>main</strong>" not in html
    assert (
        render_markdown("*em* and **strong**") == "<p><em>em</em> and <strong>strong</strong></p>"
    )


def test_code_fences_inside_list_items_and_quotes_are_code():
    """The extractors indent a list item's blocks under its text (two spaces under `- `, three
    under `1. `, deeper in a nested list) and quote them with `> `; fences there are code, with
    prompts and the indentation under the fence as written."""
    text = (
        "1. Build the list:\n\n"
        "   ```python\n   >>> lists = [[]] * 3\n   >>> lists\n   [[], [], []]\n       "
        "indented\n   ```\n\n"
        "   - then, nested:\n\n     ```\n     >>> x\n     ```\n\n"
        "> quoted:\n>\n> ```c\n> a < b;\n>\n> ```\n"
    )
    html = render_markdown(text)
    assert (
        '<li>\n<p>Build the list:</p>\n<pre><code class="language-python">&gt;&gt;&gt; lists = '
        "[[]] * 3\n"
        "&gt;&gt;&gt; lists\n[[], [], []]\n    indented\n</code></pre>"
    ) in html
    assert "<li>\n<p>then, nested:</p>\n<pre><code>&gt;&gt;&gt; x\n</code></pre>\n</li>" in html
    assert (
        '<blockquote>\n<p>quoted:</p>\n<pre><code class="language-c">a &lt; b;\n\n</code></pre>\n'
        "</blockquote>"
    ) in html
    assert "```" not in html and html.count("<blockquote>") == 1


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of each fence in stored markdown, its lines less the fence's own indent
    and quote markers."""
    blocks, lines, index = [], text.split("\n"), 0
    while index < len(lines):
        opening = FENCE_OPENING.match(lines[index])
        index += 1
        if not opening:
            continue
        prefix, fence, code = opening["prefix"], opening["fence"], []
        while index < len(lines):
            line = lines[index]
            index += 1
            body = line[len(prefix) :] if line.startswith(prefix) else ""
            assert body or not line.strip(" >"), f"a line outside its fence's container: {line!r}"
            if body.strip().startswith(fence) and not body.strip().strip(fence[0]):
                break
            code.append(body)
        blocks.append((opening["language"], "\n".join(code) + "\n"))
    return blocks


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("sphinx/controlflow.html", id="code-in-list-items"),
        pytest.param("sphinx/annotations.html", id="code-in-quotes"),
        pytest.param("asciidoctor/git-init.html", id="code-with-tabs"),
    ],
)
def test_every_fence_of_a_real_page_is_shown_as_code_verbatim(name):
    content = extract((REAL / name).read_bytes(), "text/html", charset="utf-8").content
    expected = _fenced_blocks(content)
    assert expected, "the page has no code fence: this test needs another page"
    soup = BeautifulSoup(render_markdown(content), "html.parser")
    shown = [
        (" ".join(code.get("class", [])).removeprefix("language-"), code.get_text())
        for code in soup.select("pre > code")
    ]
    assert shown == expected
    for pre in soup.find_all("pre"):
        pre.decompose()
    assert "```" not in str(soup)
