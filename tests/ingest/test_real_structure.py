"""Failures seen on real generators' pages, each pinned: content that must not be dropped,
structure that must not be flattened, anchors the page itself has, footnotes kept, long tables
cut between rows with their header. Fixtures: tests/fixtures/real/README.md."""

from __future__ import annotations

import re
import time
from pathlib import Path

from ingest.chunk import ChunkOptions, chunk_markdown
from ingest.extract import extract

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"


def _content(name: str) -> str:
    return extract((REAL / name).read_bytes(), "text/html", url=f"http://127.0.0.1/{name}").content


def _headings(content: str) -> list[str]:
    return [line for line in content.split("\n") if re.match(r"#{1,6} ", line)]


def test_asciidoc_and_asciidoctor_pages_keep_their_whole_text():
    for name in ("asciidoc/gittutorial.html", "asciidoctor/gittutorial.html"):
        content = _content(name)
        assert len(content) > 15000, (name, content[:200])
        assert "Importing a new project" in content and "Using Git for collaboration" in content
        assert (
            "gittutorial - A tutorial introduction to Git" in content
        )  # the NAME section in #header


def test_docbook_reference_page_keeps_every_section_with_its_id():
    content = _content("docbook/sql-createtable.html")
    for section in ("Synopsis", "Description", "Parameters", "Examples", "Compatibility"):
        assert any(h.startswith(f"## {section}") for h in _headings(content)), section
    assert (
        "## Description {#SQL-CREATETABLE-DESCRIPTION}" in content
    )  # the id of the wrapping div.refsect1
    psql = _content("docbook/app-psql.html")
    assert "--echo-all" in psql and "--single-transaction" in psql  # the command-line options


def test_node_api_page_keeps_every_top_level_section():
    content = _content("nodejs/cli.html")
    assert any(
        h.startswith("### Environment variables {#environment-variables}")
        for h in _headings(content)
    )


def test_javadoc_headings_and_code_inside_layout_lists_are_kept():
    content = _content("javadoc/ArgumentParser.html")
    method_headings = [h for h in _headings(content) if h.startswith("#### ")]
    assert len(method_headings) >= 20, method_headings
    assert "#### addArgument {#addArgument(java.lang.String...)}" in content or any(
        h.startswith("#### addArgument {#") for h in method_headings
    )  # the <a name> before it
    assert content.count("```") >= 40  # every signature a code block


def test_texinfo_examples_in_layout_tables_stay_code_blocks():
    content = _content("texi2html/hello_3.html")
    assert "```" in content
    assert not re.search(r"^\| .*hello", content, re.M)  # no example flattened into a table cell


def test_doxygen_nested_tables_are_not_read_twice_or_widened():
    content = _content("doxygen/group__readers.html")
    widest = max(
        (line.count(" | ") + 1 for line in content.split("\n") if line.startswith("|")), default=0
    )
    assert widest <= 6, widest


def test_man2html_page_keeps_its_structure():
    content = _content("man2html/bash.html")
    assert max(len(line) for line in content.split("\n")) < 5000
    assert len(_headings(content)) >= 10
    assert "## OPTIONS {#lbAF}" in content  # man2html's <a name> before it, inside an unclosed <p>


def test_code_block_in_a_numbered_list_keeps_its_lines():
    html = (
        b"<main><h1>T</h1><ol><li><p>Run:</p><pre>make\nmake install\n    indented</pre></li>"
        b"<li>Then <b>done</b>.</li></ol></main>"
    )
    content = extract(html, "text/html").content
    assert "1. Run:\n\n   ```\n   make\n   make install\n       indented\n   ```" in content
    assert "2. Then **done**." in content


def test_definition_list_and_cell_structure_is_kept():
    html = (
        b"<main><h1>T</h1><dl><dt>--flag</dt><dd><p>First.</p><pre>x = 1\ny = "
        b"2</pre></dd></dl></main>"
    )
    content = extract(html, "text/html").content
    assert "--flag" in content and "```\nx = 1\ny = 2\n```" in content


def test_footnotes_in_aside_are_kept_and_other_asides_dropped():
    html = (
        b"<main><h1>T</h1><p>Claim.<a href='#f1'>1</a></p><aside class='sidebar'>Related "
        b"links</aside><aside class='footnote-list brackets'><aside class='footnote' "
        b"id='f1'><p>The source of the claim.</p></aside></aside></main>"
    )
    content = extract(html, "text/html").content
    assert "The source of the claim." in content and "Related links" not in content


def test_long_table_is_cut_between_rows_and_every_part_repeats_the_header():
    rows = "".join(
        f"<tr><td>name{i}</td><td>value number {i} with some words</td></tr>" for i in range(300)
    )
    html = (
        f"<main><h1>T</h1><table><tr><th>Name</th><th>Value</th></tr>{rows}</table></main>".encode()
    )
    extracted = extract(html, "text/html")
    chunks = chunk_markdown(
        extracted.content, extracted.title, ChunkOptions(max_tokens=400), web_page=True
    )
    assert len(chunks) > 3
    for chunk in chunks:
        assert "| Name | Value |" in chunk.body
        for line in chunk.body.split("\n"):
            assert not line.startswith("|") or line.endswith("|")  # never cut inside a row


def test_ids_on_wrappers_and_a_name_targets_become_anchors():
    html = (
        b"<body><div id='content'><div class='sect1' id='intro'><div "
        b"class='titlepage'><h2>Intro</h2></div>"
        b"<p>Text one is long enough.</p></div><a name='usage'></a><h2>Usage</h2><p>Text two.</p>"
        b"<h3>No id here</h3><p>Text three.</p></div></body>"
    )
    extracted = extract(html, "text/html")
    anchors = {
        c.heading_path[-1]: c.anchor for c in chunk_markdown(extracted.content, "T", web_page=True)
    }
    assert anchors == {
        "Intro": "intro",
        "Usage": "usage",
        "No id here": "usage",
    }  # the enclosing section's
    bare = extract(b"<main><h1>T</h1><h2>Search</h2><p>x</p></main>", "text/html")
    assert [c.anchor for c in chunk_markdown(bare.content, "T", web_page=True)] == [
        ""
    ]  # no ids: the page top, no slug


def test_deeply_nested_markup_is_read_in_linear_time():
    elapsed = {}
    for depth in (10_000, 40_000):
        html = ("<div>" * depth + "deep text" + "</div>" * depth).encode()
        started = time.perf_counter()
        assert "deep text" in extract(html, "text/html").content
        elapsed[depth] = time.perf_counter() - started
    assert (
        elapsed[40_000] < 8 * elapsed[10_000] + 1
    )  # four times the input: about four times the time


def test_permalinks_and_source_links_in_prose_are_removed():
    content = _content("sphinx/sqlite3.html")
    assert "¶" not in content and "[source]" not in content
    assert "sqlite3.connect" in content  # the definition itself stays
    html = (
        b"<main><h1>T</h1><dl><dt id='f'>f(x)<a class='reference internal' "
        b"href='../_modules/m.html#f'>"
        b"<span class='viewcode-link'><span class='pre'>[source]</span></span></a>"
        b"<a class='headerlink' href='#f' title='Link to this definition'>\xc2\xb6</a></dt>"
        b"<dd>Does f.</dd></dl></main>"
    )
    content = extract(html, "text/html").content
    assert (
        "f(x)" in content
        and "Does f." in content
        and "¶" not in content
        and "[source]" not in content
    )


def test_a_described_function_or_method_is_a_section_of_its_own_at_its_id():
    """Sphinx writes each function, class and method as a definition term with an id and a
    permalink: each is a heading below its section (a method below its class), cited at its id."""
    content = _content("sphinx/sqlite3.html")
    headings = _headings(content)
    assert "#### sqlite3.complete_statement(statement) {#sqlite3.complete_statement}" in headings
    assert "#### class sqlite3.Connection {#sqlite3.Connection}" in headings
    assert (
        "##### cursor(factory=Cursor) {#sqlite3.Connection.cursor}" in headings
    )  # one level below its class
    chunks = {c.anchor: c for c in chunk_markdown(content, "sqlite3", web_page=True)}
    blobopen = chunks["sqlite3.Connection.blobopen"]
    assert blobopen.heading_path[-2:] == (
        "class sqlite3.Connection",
        "blobopen(table, column, row, /, *, readonly=False, name='main')",
    )
    assert "Open a `Blob` handle to an existing BLOB." in blobopen.text
    assert (
        "Create or remove a user-defined SQL function"
        in chunks["sqlite3.Connection.create_function"].text
    )
    # a term with an id but no permalink to it (DocBook's parameter list) stays a term in its
    # section
    assert not any("TEMPORARY" in h for h in _headings(_content("docbook/sql-createtable.html")))


def test_texinfo_navigation_lines_are_dropped():
    for name in (
        "makeinfo/Overview.html",
        "makeinfo/Invoking-hello.html",
        "texi2html/hello_2.html",
    ):
        content = _content(name)
        assert "Next:" not in content and "[Contents]" not in content and "[ < ]" not in content, (
            name
        )
    assert "## 1 Overview {#Overview-1}" in _content("makeinfo/Overview.html")


def test_a_site_banner_called_header_is_not_read_as_asciidoc_header():
    html = (
        b"<body><div id='header'><h1><a href='/'>Acme</a></h1><a href='/a'>Products</a> <a "
        b"href='/b'>Pricing</a></div><div id='content'><h2>Setup</h2><p>"
        + b"Install the agent and start it. " * 20
        + b"</p></div><div id='footer'>Copyright</div></body>"
    )
    content = extract(html, "text/html").content
    assert (
        "Install the agent" in content and "Pricing" not in content and "Copyright" not in content
    )


def test_a_line_break_in_a_heading_separates_its_words():
    assert (
        "# Uses of Class net.example.Foo"
        in extract(
            b"<main><h1>Uses of Class<br>net.example.Foo</h1><p>x</p></main>", "text/html"
        ).content
    )


def test_doxygen_source_listing_is_one_code_block_without_line_numbers():
    content = _content("doxygen/midl_8h_source.html")
    blocks = re.findall(r"^```\n(.*?)^```$", content, re.M | re.S)
    assert len(blocks) == 1, content[:300]  # one listing, not a paragraph per line
    lines = blocks[0].split("\n")
    assert lines[0] == "/* $OpenLDAP$ */"
    assert " * Redistribution and use in source and binary forms, with or without" in lines
    assert (
        "#define MDB_IDL_LOGN    16  /* DB_SIZE is 2^16, UM_SIZE is 2^17 */" in lines
    )  # spacing kept
    assert not any(
        re.match(r"\s*\d+\s", line) for line in lines[:20]
    )  # the line-number gutter is not code


def test_doxygen_page_title_and_intro_are_kept_beside_the_contents():
    files = _content("doxygen/files.html")
    assert files.startswith("# File List\n") and "Here is a list of all documented files" in files
    group = _content("doxygen/group__mdb__put.html")
    assert group.startswith(
        "# Write Flags\n\nLMDB API\n"
    )  # the group it is in: a line under the title, not in it


def test_inline_marks_inside_a_word_do_not_split_it():
    content = _content("docbook/catalog-pg-statistic.html")
    assert "for the Nth “slot”" in content and "*`N`*th" not in content


def test_an_aside_of_prose_in_the_content_is_kept():
    content = _content(
        "sphinx/annotations.html"
    )  # docutils' "topic" directive: <aside class="topic">
    assert "This document is designed to encapsulate the best practices" in content
    assert "The document is organized into four sections" in content
