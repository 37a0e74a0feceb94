"""Fetched or uploaded bytes in, clean markdown or text out: one module per input family.

`extract()` dispatches on the media type (sniffing HTML when the type is missing or generic):
HTML (`html.py`), markdown and plain text (`text.py`), and documents (`documents.py`: PDF,
Office, OpenDocument, spreadsheets, EPUB, e-mail). Every extractor is pure: bytes in, an
`Extracted` out, no Django and no I/O.
"""

from __future__ import annotations

from ingest.errors import BinaryContent
from ingest.extract.documents import DOCUMENT_TYPES, extract_document
from ingest.extract.html import html_to_markdown
from ingest.extract.result import Extracted
from ingest.extract.text import (
    decode_text,
    looks_binary,
    markdown_title,
    normalise_text,
    sniff_html,
)

HTML_TYPES = ("text/html", "application/xhtml+xml")
MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")


def extract(
    body: bytes,
    media_type: str,
    *,
    charset: str | None = None,
    url: str = "",
    fallback_title: str = "",
    ocr_options=None,
) -> Extracted:
    """Dispatch on media type (sniffing HTML when the type is missing or generic); `ocr_options`
    (ingest/extract/ocr.py) let scanned documents be read."""
    media_type = (media_type or "").lower()
    if media_type in DOCUMENT_TYPES:
        return extract_document(
            body, media_type, fallback_title=fallback_title, ocr_options=ocr_options
        )
    if looks_binary(body):
        raise BinaryContent(
            "The content looks binary (NUL bytes or no decodable text) and is not a document type "
            "that is read (see docs/ingesting.md)."
        )
    if media_type in HTML_TYPES or (
        media_type in ("", "application/octet-stream") and sniff_html(body)
    ):
        page = html_to_markdown(body, charset=charset, url=url, fallback_title=fallback_title)
        return Extracted(
            title=page.title,
            content=page.content,
            media_type="text/markdown",
            links=page.links,
            site_anchors=True,
        )
    text = decode_text(body, charset)
    if media_type in MARKDOWN_TYPES:
        return Extracted(
            title=markdown_title(text) or fallback_title,
            content=normalise_text(text),
            media_type="text/markdown",
        )
    return Extracted(title=fallback_title, content=normalise_text(text), media_type="text/plain")


__all__ = ["Extracted", "decode_text", "extract", "markdown_title", "normalise_text"]
