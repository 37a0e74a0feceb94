"""What a file of a folder or repository is read as: the upload readers' types
(`ingest.filetypes`), plus reStructuredText and Jupyter notebooks, which are turned into the
product's markdown here (by `ingest.extract.rst` and `ingest.extract.notebook`) so they get
its sections and anchors."""

from __future__ import annotations

from pathlib import PurePosixPath

from ingest.errors import EmptyContent
from ingest.extract.notebook import notebook_to_markdown
from ingest.extract.rst import rst_to_markdown
from ingest.filetypes import media_type_for

RST = "text/x-rst"
NOTEBOOK = "application/x-ipynb+json"
SOURCE_TYPES = {".rst": RST, ".rest": RST, ".ipynb": NOTEBOOK}


def source_media_type(path: str) -> str:
    """The type a repository or folder file is read as ("" for a file that is not read)."""
    return SOURCE_TYPES.get(PurePosixPath(path).suffix.lower()) or media_type_for(path)


def as_markdown(body: bytes, media_type: str, path: str) -> tuple[bytes, str, str]:
    """(bytes, media type, title) to hand the pipeline: reStructuredText and notebooks as markdown
    with their section ids as anchors; every other type as it is."""
    if media_type == RST:
        title, text = rst_to_markdown(body, source_path=path)
    elif media_type == NOTEBOOK:
        title, text = notebook_to_markdown(body)
    else:
        return body, media_type, ""
    if not text.strip():
        raise EmptyContent(f"{path!r} holds no text once read as {media_type} (an empty file, or only "
                           "directives that are not honoured, such as include).")
    return text.encode("utf-8"), "text/markdown", title
