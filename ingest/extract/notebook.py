"""Jupyter notebooks to markdown: markdown (and format 3's heading) cells as they are, code cells
as fences in the
notebook's language, and their text outputs (streams, `text/plain` results, error names) as
plain fences after them. Images and HTML outputs are left out. Pure: JSON in, markdown out."""

from __future__ import annotations

import json
import re

from ingest.errors import DocumentCorrupt
from ingest.extract.text import markdown_title

MAX_OUTPUT_CHARS = 4000  # of one cell's outputs: a long log says little
MAX_DEPTH = 64  # of nested JSON arrays and objects: a notebook nests about 8 deep
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
BRACKET = re.compile(r"[\[\]{}]")


def notebook_to_markdown(body: bytes) -> tuple[str, str]:
    """(title, markdown) of an .ipynb file (format 4, and 3's worksheets)."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentCorrupt(f"The notebook is not valid JSON: {exc}.") from exc
    _check_depth(text)
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentCorrupt(f"The notebook is not valid JSON: {exc}.") from exc
    if not isinstance(notebook, dict):
        raise DocumentCorrupt("The notebook is not a JSON object.")
    cells = notebook.get("cells")
    if cells is None:  # nbformat 3
        cells = [
            cell
            for sheet in _list(notebook.get("worksheets"))
            for cell in _list(_dict(sheet).get("cells"))
        ]
    metadata = _dict(notebook.get("metadata"))
    language = (
        _dict(metadata.get("kernelspec")).get("language")
        or _dict(metadata.get("language_info")).get("name")
        or ""
    )
    language = language if isinstance(language, str) else ""
    blocks = []
    for cell in cells if isinstance(cells, list) else ():
        if not isinstance(cell, dict):
            continue
        source = _text(cell.get("source", cell.get("input", "")))
        kind = cell.get("cell_type")
        if kind == "markdown" and source.strip():
            blocks.append(source.strip())
        elif kind == "heading" and source.strip():  # nbformat 3's heading cells
            level = cell.get("level") if isinstance(cell.get("level"), int) else 1
            blocks.append(f"{'#' * min(max(level, 1), 6)} {' '.join(source.split())}")
        elif kind == "code" and source.strip():
            blocks.append(f"```{language}\n{source.rstrip()}\n```")
            output = _outputs(_list(cell.get("outputs")))
            if output:
                blocks.append(f"```text\n{output}\n```")
    text = "\n\n".join(blocks) + "\n"
    return markdown_title(text) or "", text


def _check_depth(text: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH before parsing it (json's recursion would fail
    past Python's limit); brackets inside strings do not count."""
    depth = 0
    for bracket in BRACKET.finditer(JSON_STRING.sub("", text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > MAX_DEPTH:
            raise DocumentCorrupt(
                f"The notebook's JSON nests deeper than {MAX_DEPTH} levels; a notebook nests "
                "about 8."
            )


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _text(value) -> str:
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def _outputs(outputs) -> str:
    parts = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_text(output.get("text")))
        elif kind in ("execute_result", "display_data", "pyout"):
            data = _dict(output.get("data")) or output
            parts.append(_text(data.get("text/plain") or data.get("text")))
        elif kind in ("error", "pyerr"):
            parts.append(f"{_text(output.get('ename'))}: {_text(output.get('evalue'))}")
    text = "\n".join(part.rstrip("\n") for part in parts if part and part.strip())
    text = text.replace("```", "'''")
    return text[:MAX_OUTPUT_CHARS] + ("\n…" if len(text) > MAX_OUTPUT_CHARS else "")
