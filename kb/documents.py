"""Document queries for the API: listing, detail, capped full text. ORM reads in one place."""

from __future__ import annotations

from django.db.models import QuerySet

from kb.auth import Principal, require_readable
from kb.errors import NotFound
from kb.models import Document

TRUNCATION_MARKER = "\n\n[… truncated: {shown} of {total} characters shown; ask for more with max_chars …]"


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


def capped_text(document: Document, max_chars: int) -> dict:
    """The full text, or its first `max_chars` characters ending in an explicit marker."""
    total = len(document.content)
    if total <= max_chars:
        return {"id": document.pk, "text": document.content, "total_chars": total,
                "returned_chars": total, "truncated": False}
    text = document.content[:max_chars] + TRUNCATION_MARKER.format(shown=max_chars, total=total)
    return {"id": document.pk, "text": text, "total_chars": total, "returned_chars": max_chars, "truncated": True}
