"""Read a folder's or repository's file as the product's markdown, with its headings' lines.

Beyond the upload readers' types (`ingest.filetypes`), reStructuredText, AsciiDoc and Jupyter
notebooks become markdown here, so they get its sections and anchors. `heading_lines` come from each
reader's own source positions (docutils' titles, Asciidoctor's sourcemap, `ingest.markdown_blocks`
for Markdown): forge citations open the file there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ingest.errors import BinaryContent, EmptyContent
from ingest.extract.asciidoc import ASCIIDOC
from ingest.extract.isolated import ParserBudget, extract_isolated
from ingest.extract.notebook import notebook_to_markdown
from ingest.extract.rst import rst_to_markdown
from ingest.extract.text import decode_text
from ingest.filetypes import media_type_for
from ingest.markdown_blocks import read_blocks, read_sections
from kb.conf import kb_settings

RST = "text/x-rst"
NOTEBOOK = "application/x-ipynb+json"
MARKDOWN = "text/markdown"
# not ".asc", which Asciidoctor also reads but which in a repository is mostly a PGP signature or
# key
SOURCE_TYPES = {
    ".rst": RST,
    ".rest": RST,
    ".ipynb": NOTEBOOK,
    ".adoc": ASCIIDOC,
    ".asciidoc": ASCIIDOC,
}


@dataclass
class Converted:
    """A file as the pipeline gets it: its bytes and type (markdown for the formats converted
    here), the title its reader found, and each section anchor's heading line in the file."""

    body: bytes
    media_type: str
    title: str = ""
    heading_lines: dict[str, int] = field(default_factory=dict)


def source_media_type(path: str) -> str:
    """The type a repository or folder file is read as ("" for a file that is not read)."""
    return SOURCE_TYPES.get(PurePosixPath(path).suffix.lower()) or media_type_for(path)


def as_markdown(body: bytes, media_type: str, path: str) -> Converted:
    """reStructuredText, AsciiDoc and notebooks as markdown with their section ids as anchors;
    every other type as it is (Markdown with its headings' lines)."""
    lines: dict[str, int] = {}
    if media_type == RST:
        title, text = rst_to_markdown(body, source_path=path, heading_lines=lines)
    elif media_type == ASCIIDOC:
        conf = kb_settings()
        budget = ParserBudget(
            conf.parser_cpu_seconds, conf.parser_memory_mb * 1024 * 1024, conf.extract_max_chars
        )
        extracted = extract_isolated(
            body, ASCIIDOC, fallback_title=PurePosixPath(path).stem, budget=budget
        )
        title, text, lines = extracted.title, extracted.content, dict(extracted.heading_lines)
    elif media_type == NOTEBOOK:
        title, text = notebook_to_markdown(body)
    else:
        lines = markdown_heading_lines(body) if media_type == MARKDOWN else {}
        return Converted(body, media_type, heading_lines=lines)
    if not text.strip():
        raise EmptyContent(
            f"{path!r} holds no text once read as {media_type} (an empty file, or only "
            "directives that are not honoured, such as include)."
        )
    return Converted(text.encode("utf-8"), "text/markdown", title, lines)


def markdown_heading_lines(body: bytes) -> dict[str, int]:
    """Each section anchor of a Markdown file and its heading's line, as the product's reader
    makes them (the same headings, slugs and numbering of repeated slugs as its chunks get)."""
    try:
        text = decode_text(body, None).replace("\r\n", "\n").replace("\r", "\n")
    except BinaryContent:  # the pipeline's extraction says so for the file
        return {}
    sections = read_sections(text, read_blocks(text))
    return {
        section.anchor: text.count("\n", 0, section.blocks[0].start) + 1
        for section in sections
        if section.path and section.blocks and section.blocks[0].kind == "heading"
    }
