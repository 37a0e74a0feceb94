"""Chunking: sections, anchors, fences, budgets, overlap and exact UTF-8 byte offsets."""

import pytest

from ingest.chunk import ChunkOptions, chunk_markdown, chunk_text, estimate_tokens
from ingest.markdown_blocks import slugify_heading


def _assert_offsets(content, chunks):
    raw = content.encode("utf-8")
    for chunk in chunks:
        assert raw[chunk.start_byte : chunk.end_byte].decode("utf-8") == chunk.body
        assert chunk.text.endswith(chunk.body)


DOC = """# Guide

Welcome to the guide.

## Install

Install it with pip.

```python
import kb
kb.setup()
```

## Install

Again, for pnpm.

### Details & caveats!

Small print.
"""


def test_sections_anchors_and_breadcrumbs_golden():
    chunks = chunk_markdown(DOC, "Guide", ChunkOptions(max_tokens=200))
    assert [(c.heading_path, c.anchor) for c in chunks] == [
        (("Guide",), "guide"),
        (("Guide", "Install"), "install"),
        (("Guide", "Install"), "install-1"),
        (("Guide", "Install", "Details & caveats!"), "details--caveats"),
    ]
    assert chunks[1].text == (
        "Guide > Install\n\n## Install\n\nInstall it with pip.\n\n"
        "```python\nimport kb\nkb.setup()\n```"
    )
    assert [c.position for c in chunks] == [0, 1, 2, 3]
    _assert_offsets(DOC, chunks)


def test_title_leads_the_breadcrumb_when_the_headings_do_not_start_with_it():
    chunks = chunk_markdown("## Recency\n\nNewer first.\n", "Ranking")
    assert chunks[0].text.startswith("Ranking > Recency\n\n")
    assert chunks[0].heading_path == ("Recency",)


@pytest.mark.parametrize(
    "heading, anchor",
    [
        ("Hello World", "hello-world"),
        ("API: v2.0 (beta)", "api-v20-beta"),
        ("snake_case ok", "snake_case-ok"),
        ("Über uns", "über-uns"),
    ],
)
def test_github_style_slugs(heading, anchor):
    assert slugify_heading(heading) == anchor


def test_code_fence_is_never_split_across_chunks():
    code = "```js\n" + "\n".join(f"const v{i} = {i};" for i in range(12)) + "\n```"
    doc = "## Code\n\n" + "word " * 30 + "\n\n" + code + "\n\nafter the fence\n"
    chunks = chunk_markdown(doc, "", ChunkOptions(max_tokens=80, overlap_tokens=10))
    fences = [c for c in chunks if "```js" in c.body]
    assert len(fences) == 1 and fences[0].body.count("```") == 2
    assert not any(c.partial_code for c in chunks)
    _assert_offsets(doc, chunks)


def test_oversized_fence_splits_only_at_line_boundaries_and_is_marked():
    lines = [f"line_{i} = compute({i}, {i + 1})" for i in range(60)]
    doc = "## Big\n\n```python\n" + "\n".join(lines) + "\n```\n"
    chunks = chunk_markdown(doc, "", ChunkOptions(max_tokens=60, overlap_tokens=10))
    partial = [c for c in chunks if c.partial_code]
    assert len(partial) > 2
    for chunk in partial:
        for line in chunk.body.splitlines():
            assert (
                line in lines or line.startswith("```") or line in ("## Big", "")
            )  # the heading opens the first
        assert chunk.token_estimate <= 60 + estimate_tokens("Big\n\n")
    _assert_offsets(doc, chunks)


def test_budget_respected_and_overlap_stays_within_a_section():
    para = " ".join(f"Sentence number {i} is here." for i in range(40))
    doc = f"## A\n\n{para}\n\n## B\n\nShort section B.\n"
    chunks = chunk_markdown(doc, "", ChunkOptions(max_tokens=50, overlap_tokens=12))
    a_chunks = [c for c in chunks if c.anchor == "a"]
    assert len(a_chunks) > 3
    assert all(estimate_tokens(c.body) <= 50 for c in chunks)
    # consecutive chunks of section A overlap; B starts fresh at its heading
    for first, second in zip(a_chunks, a_chunks[1:], strict=False):
        assert second.start_byte < first.end_byte
    b_chunk = next(c for c in chunks if c.anchor == "b")
    assert b_chunk.body.startswith("## B")
    _assert_offsets(doc, chunks)


def test_byte_offsets_on_chinese_and_emoji():
    doc = "# 指南 🚀\n\n这是第一段。包含表情符号 😀👍🏽 和中文。\n\n## 安装\n\n运行命令安装。第二句话。第三句话！\n"  # noqa: E501
    chunks = chunk_markdown(doc, "指南", ChunkOptions(max_tokens=12, overlap_tokens=3))
    assert len(chunks) > 2
    _assert_offsets(doc, chunks)
    assert chunks[0].start_byte == 0
    assert any(c.anchor == "安装" for c in chunks)
    assert chunks[-1].end_byte == len(doc.rstrip("\n").encode("utf-8"))


def test_a_cjk_run_after_a_latin_word_counts_each_character():
    # a word stops where Han or kana starts: "Windows" is one token, each of 版のインストール another  # noqa: E501
    assert estimate_tokens("Windows版のインストール") == 9
    assert estimate_tokens("第2章 𠮷野家") == 6  # supplementary-plane Han too
    # one run of 100,001 characters opened by a Latin letter: counted as two tokens, it was one
    # passage
    # too long for PostgreSQL's tsvector, and its failure took the whole write batch with it
    text = "a" + "中文" * 50_000
    chunks = chunk_text(text, "", ChunkOptions(max_tokens=400, overlap_tokens=30))
    assert len(chunks) > 200
    assert all(estimate_tokens(c.body) <= 400 and len(c.body) <= 401 for c in chunks)
    _assert_offsets(text, chunks)


def test_plain_text_paragraph_sentence_and_hard_cut_with_overlap():
    text = (
        "First paragraph. It has two sentences.\n\n"
        + ("x" * 5 + " ") * 120
        + "\n\n最后一段。没有空格的中文句子很长很长。"
    )
    chunks = chunk_text(text, "Notes", ChunkOptions(max_tokens=40, overlap_tokens=8))
    assert chunks[0].text.startswith("Notes\n\nFirst paragraph.")
    assert all(c.heading_path == () and c.anchor == "" for c in chunks)
    assert all(estimate_tokens(c.body) <= 40 for c in chunks)
    _assert_offsets(text, chunks)
    assert len(chunks) >= 4


def test_empty_document_has_no_chunks():
    assert chunk_markdown("", "t") == [] and chunk_text("  \n\n ", "t") == []


def test_a_heading_only_section_opens_the_next_chunk_instead_of_being_one():
    chunks = chunk_markdown(
        "# 1. Intro\n\n## 1.1 Scope\n\ntext a\n\n## 1.2 Empty\n\n## 1.3 Last\n\ntext b\n", "Doc"
    )
    assert [c.body for c in chunks] == [
        "# 1. Intro\n\n## 1.1 Scope\n\ntext a",
        "## 1.2 Empty\n\n## 1.3 Last\n\ntext b",
    ]
    assert [c.heading_path for c in chunks] == [("1. Intro", "1.1 Scope"), ("1. Intro", "1.3 Last")]


def test_a_heading_with_an_id_and_no_text_opens_its_first_subsection_under_the_subsections_anchor():
    chunks = chunk_markdown(
        "# Notes\n\nAll releases.\n\n## Version 1.4 {#v14}\n\n### Features {#features-14}\n\n"
        "Faster builds.\n\n## Version 1.3 {#v13}\n\n## Version 1.2 {#v12}\n\nFixes.\n"
        "\n## A {#a}\n\n### B {#b}\n\n### C {#c}\n\nC text.\n",
        "Notes",
    )
    assert [(c.anchor, c.heading_path) for c in chunks] == [
        ("notes", ("Notes",)),
        ("features-14", ("Notes", "Version 1.4", "Features")),
        ("v13", ("Notes", "Version 1.3")),
        ("v12", ("Notes", "Version 1.2")),
        ("b", ("Notes", "A", "B")),
        ("c", ("Notes", "A", "C")),
    ]
    assert (
        chunks[1].body == "## Version 1.4 {#v14}\n\n### Features {#features-14}\n\nFaster builds."
    )
    assert (
        chunks[2].body == "## Version 1.3 {#v13}"
    )  # followed by a sibling: empty in the page itself
    assert (
        chunks[4].body == "## A {#a}\n\n### B {#b}"
    )  # a chain stops at a sibling of its last heading


def test_a_heading_opens_the_chunk_of_what_it_heads_even_before_a_long_table():
    """A heading straight before a block too long to join it (a table of 400 tokens) once became a
    chunk of its own, a result with nothing to read that ranked first for its breadcrumb's words
    (the demo's "What is read, and what structure is kept"). The block after a heading is split
    to leave the heading room."""
    from pathlib import Path

    from ingest.extract import extract

    docs = Path(__file__).resolve().parents[2] / "docs"
    for page in sorted(docs.glob("*.md")):
        extracted = extract(page.read_bytes(), "text/markdown", charset="utf-8")
        chunks = chunk_markdown(extracted.content, extracted.title)
        raw = extracted.content.encode("utf-8")
        assert all(raw[c.start_byte : c.end_byte].decode("utf-8") == c.body for c in chunks)
        bare = [
            c.body
            for c in chunks
            if all(line.startswith("#") for line in c.body.strip().splitlines())
        ]
        assert bare == [], (page.name, bare)
    table = "## Inputs\n\n| a | b |\n|---|---|\n" + "".join(
        f"| row {i} word | value {i} here |\n" for i in range(60)
    )
    chunks = chunk_markdown(table, "", ChunkOptions(max_tokens=200, overlap_tokens=10))
    assert chunks[0].body.startswith("## Inputs\n\n| a | b |") and len(chunks) > 1
    assert all(
        chunk.token_estimate <= 200 + estimate_tokens(chunk.text) - estimate_tokens(chunk.body)
        for chunk in chunks
    )
