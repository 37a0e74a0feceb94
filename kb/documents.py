"""Document queries for the API and the MCP tools: listing, detail, capped text read in pieces.
ORM reads in one place."""

from __future__ import annotations

from django.db.models import QuerySet

from kb.auth import Principal, require_readable
from kb.errors import NotFound, ValidationFailed
from kb.models import Chunk, Document

TRUNCATION_MARKER = ("\n\n[… truncated: characters {start}–{end} of {total} shown; "
                     "continue with offset={end} …]")


def visible_documents(principal: Principal, namespace: str | None = None) -> QuerySet[Document]:
    if namespace:
        principal.check(namespace)
    namespaces = principal.readable_namespaces()
    documents = Document.objects.filter(namespace__in=namespaces)
    if namespace:
        documents = documents.filter(namespace__slug=namespace)
    return documents.order_by("id")


def get_document(principal: Principal, document_id: int) -> Document:
    document = Document.objects.select_related("namespace", "source").filter(pk=document_id).first()
    missing = NotFound(f"No document {document_id}.")
    if document is None:
        raise missing
    require_readable(principal, document.namespace.slug, missing)
    return document


def get_chunk(principal: Principal, chunk_id: int) -> Chunk:
    """A passage the principal may read; another tenant's answers exactly like a missing one."""
    chunk = Chunk.objects.select_related("document", "namespace").filter(pk=chunk_id).first()
    missing = NotFound(f"No passage {chunk_id}.")
    if chunk is None:
        raise missing
    require_readable(principal, chunk.namespace.slug, missing)
    return chunk


def section_text(document: Document, anchor: str) -> tuple[str, int, int]:
    """The stretch of the document's text its chunks with `anchor` cover, with its UTF-8 byte
    range (chunk offsets are UTF-8 byte offsets, end exclusive): an exact slice of the stored text."""
    spans = list(Chunk.objects.filter(document=document, anchor=anchor, is_summary=False)
                 .values_list("start_byte", "end_byte"))
    if not spans:
        raise NotFound(f"Document {document.pk} has no section {anchor!r}.",
                       details={"document_id": document.pk, "anchor": anchor})
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    return document.content.encode("utf-8")[start:end].decode("utf-8", errors="replace"), start, end


def capped_text(document: Document, max_chars: int, offset: int = 0) -> dict:
    return {"id": document.pk, **text_window(document.content, max_chars, offset)}


def text_window(text: str, max_chars: int, offset: int = 0) -> dict:
    """Characters `offset` to `offset + max_chars` of a text. A window that stops before the end
    closes with an explicit marker saying where to continue; `text[:returned_chars]` is always
    the exact slice, so pieces read one after the other add up to the whole text."""
    total = len(text)
    if not 0 <= offset <= total:
        raise ValidationFailed(f"offset must be between 0 and {total} (the text's length), got {offset}.",
                               details={"field": "offset", "total_chars": total})
    end = min(total, offset + max_chars)
    window = text[offset:end]
    truncated = end < total
    if truncated:
        window += TRUNCATION_MARKER.format(start=offset, end=end, total=total)
    return {"text": window, "offset": offset, "total_chars": total, "returned_chars": end - offset,
            "truncated": truncated, "next_offset": end if truncated else None}
