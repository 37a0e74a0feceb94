"""Forge citations at the line the readers' own source positions give: a passage that opens with
its heading cites the heading's line, one inside a section its first words within that section,
where matching first words over the whole file picks the wrong section."""

from __future__ import annotations

from ingest.chunk import ChunkOptions, chunk_markdown
from ingest.connectors.forge import forge_citation, line_of
from ingest.connectors.formats import markdown_heading_lines
from ingest.extract.text import normalise_text

FORGE = "https://forge.example/docs/blob/{commit}/{path}#L{line}"


def test_markdown_citations_open_the_heading_a_first_words_match_misses():
    source = (
        "# Setup\n\nHow to install it.\n\n## Linux\n\nInstall the package with your package "
        "manager.\n\n"
        "## macOS\n\nInstall the package with your package manager.\n\nThen run `kb doctor` to "
        "check "
        "the installation.\n"
    ).encode()
    lines = source.decode().splitlines()
    heading_lines = markdown_heading_lines(source)
    assert heading_lines == {"setup": 1, "linux": 5, "macos": 9}
    chunks = chunk_markdown(
        normalise_text(source.decode()), "Setup", ChunkOptions(max_tokens=12, overlap_tokens=0)
    )
    macos = [c for c in chunks if c.anchor == "macos"]
    assert line_of(macos[0].body, lines) == 7  # the word match: the Linux section's sentence
    _, anchor_of = forge_citation(FORGE, "abc", "README.md", source, heading_lines)
    assert [anchor_of(c) for c in macos] == ["L9", "L13"]  # the heading, then its own sentence


def test_markdown_heading_lines_count_repeated_slugs_and_skip_fenced_hashes():
    source = b"# Guide\r\n\n\n\n## Usage\n\n```sh\n# not a heading\n```\n\n## Usage\n\nAgain.\n"
    assert markdown_heading_lines(source) == {"guide": 1, "usage": 5, "usage-1": 11}
