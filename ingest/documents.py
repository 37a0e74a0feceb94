"""Reading stored documents back: the text view a citation scrolls to, and the original file.

Both answer exactly like a missing document (404, same body) when the caller may not read the
document's namespace, so ids cannot be probed across namespaces.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.files.storage import default_storage

from ingest.filetypes import media_type_for
from kb.auth import Principal
from kb.documents import get_document
from kb.errors import NotFound
from kb.render import render_markdown
from kb.models import Chunk, Document, SourceFile
from kb.markup import passage_anchor


@dataclass(frozen=True)
class Section:
    anchor: str  # the section's anchor, on its first passage only
    heading_path: tuple[str, ...]
    html: str  # the passage's markdown rendered safe (kb/render.py)
    location: tuple[int | None, int | None]
    passage: str = ""  # this passage's own anchor, `passage-<chunk id>`, which citations target


@dataclass(frozen=True)
class DocumentView:
    document: Document
    sections: list[Section]
    has_original: bool


def document_view(principal: Principal, document_id: int) -> DocumentView:
    """The document's passages in order, each with its own anchor, rendered from markdown."""
    document = get_document(principal, document_id)
    content = document.content.encode("utf-8")
    sections: list[Section] = []
    anchored: set[str] = set()  # each anchor is the id of its first section only
    for chunk in Chunk.objects.filter(document=document, is_summary=False).order_by("position").only(
            "anchor", "heading_path", "start_byte", "end_byte", "page_start", "page_end"):
        html = render_markdown(content[chunk.start_byte:chunk.end_byte].decode("utf-8", "replace"))
        anchor = chunk.anchor if chunk.anchor not in anchored else ""
        anchored.add(chunk.anchor)
        sections.append(Section(anchor, tuple(chunk.heading_path), html, (chunk.page_start, chunk.page_end),
                                passage_anchor(chunk.pk)))
    return DocumentView(document, sections, _stored_file(document) is not None)


def _stored_file(document: Document) -> SourceFile | None:
    """The upload a document was made from: only a file of the document's own source, and only
    when that source is in the document's namespace (a document row pointing at another
    tenant's source must not open that tenant's files)."""
    if document.source.kind != "file" or document.source.namespace_id != document.namespace_id:
        return None
    return SourceFile.objects.filter(source=document.source, path=document.ref).first()


def original_file(principal: Principal, document_id: int) -> tuple[bytes, str, str]:
    """(bytes, file name, media type) of the uploaded original."""
    document = get_document(principal, document_id)
    stored = _stored_file(document)
    if stored is None or not default_storage.exists(stored.key):
        raise NotFound(f"Document {document_id} has no stored original.")
    with default_storage.open(stored.key, "rb") as handle:
        data = handle.read()
    return data, stored.path.rsplit("/", 1)[-1], media_type_for(stored.path) or "application/octet-stream"
