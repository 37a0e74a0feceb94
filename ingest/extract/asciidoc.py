"""AsciiDoc to the product's markdown, read by Asciidoctor (Debian's `asciidoctor`, MIT, Ruby).

Runs only in the sandboxed parser child (`isolated.py`), which may exec `ruby`; `asciidoc.rb`
converts in secure mode with the attributes that read files, reach the network or run programs
locked off. Its HTML goes through the product's HTML extractor, so each section keeps Asciidoctor's
own id, the one its published site uses.

Not a Python reader: asciidoc-py is GPL, reads the older dialect and runs the filters a document
names; asciidoctrine gives sections no ids and is 30 times slower (docs/ingesting.md, "Why
Asciidoctor").
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from html import escape
from pathlib import Path

from ingest.errors import ConverterMissing, DocumentCorrupt, ParserBudgetExceeded
from ingest.extract import sandbox
from ingest.extract.html import html_to_markdown
from ingest.extract.result import Extracted
from ingest.extract.sandbox import asciidoctor_paths

ASCIIDOC = "text/asciidoc"
SCRIPT = Path(__file__).with_name("asciidoc.rb")


def asciidoc_to_extracted(body: bytes, *, fallback_title: str = "") -> Extracted:
    """The document as markdown with Asciidoctor's section ids, and each id's heading line."""
    cpu, _ = resource.getrlimit(resource.RLIMIT_CPU)  # the child's budget, which ruby inherits
    timeout = 2.0 * cpu + 10 if cpu != resource.RLIM_INFINITY else 120.0
    ruby, library = asciidoctor_paths()
    if not ruby:
        raise ConverterMissing(
            "AsciiDoc is read by Asciidoctor, which is not installed on this server: the "
            "operator installs Debian's 'asciidoctor' package (scripts/asciidoctor.sh)."
        )
    try:  # no gems: the library is named, so rubygems reads none of its folders
        parent = os.getpid()  # ruby dies with this child, as the child dies with its worker
        done = subprocess.run(
            [ruby, "--disable-gems", "-E", "UTF-8:UTF-8", "-I", library, str(SCRIPT)],
            input=body,
            capture_output=True,
            timeout=timeout,
            check=False,
            preexec_fn=lambda: sandbox.die_with_parent(parent),
        )
    except subprocess.TimeoutExpired as exc:
        raise ParserBudgetExceeded(
            f"Asciidoctor took longer than {timeout:.0f} s (KB_PARSER_CPU_SECONDS)."
        ) from exc
    if done.returncode < 0:  # killed by its CPU or memory limit
        raise ParserBudgetExceeded(
            f"Asciidoctor exceeded its CPU or memory budget (signal {-done.returncode}; "
            "KB_PARSER_CPU_SECONDS, KB_PARSER_MEMORY_MB)."
        )
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise DocumentCorrupt(
            f"Asciidoctor could not read the file (exit {done.returncode}): {tail[0][:300]}"
        )
    answer = json.loads(done.stdout)
    title = answer["title"] or fallback_title
    page = html_to_markdown(
        f"<html><head><title>{escape(title)}</title></head><body><main>"
        f"{answer['html']}</main></body></html>".encode(),
        fallback_title=fallback_title,
    )
    lines = tuple((section_id, line) for section_id, _level, line in answer["sections"] if line)
    return Extracted(
        title=title, content=page.content, media_type="text/markdown", heading_lines=lines
    )
