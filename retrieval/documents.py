"""Read stored documents back: listing, detail, text in capped pieces, the text view, the original.

A document, passage or original of a namespace the caller may not read, or of an audience they are
not in (kb/audiences.py), answers exactly like a missing one (same error, same single query), so ids
cannot be probed across namespaces or audiences.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.files.storage import default_storage
from django.db.models import QuerySet

from ingest.filetypes import media_type_for
from ingest.markdown_blocks import read_blocks, read_sections
from kb.audiences import document_filter
from kb.auth import Principal, require_readable
from kb.errors import NotFound, ValidationFailed
from kb.markup import passage_anchor
from kb.models import Chunk, Document, SourceFile
from retrieval.render import render_markdown, without_title

TRUNCATION_MARKER = (
    "\n\n[… truncated: characters {start}–{end} of {total} shown; continue with offset={end} …]"
)


def visible_documents(principal: Principal, namespace: str | None = None) -> QuerySet[Document]:
    if namespace:
        principal.check(namespace)
    namespaces = principal.readable_namespaces()
    documents = Document.objects.filter(namespace__in=namespaces).filter(
        document_filter(principal.audiences)
    )
    if namespace:
        documents = documents.filter(namespace__slug=namespace)
    return documents.order_by("id")


def get_document(principal: Principal, document_id: int) -> Document:
    document = (
        Document.objects.select_related("namespace", "source")
        .filter(document_filter(principal.audiences), pk=document_id)
        .first()
    )
    missing = NotFound(f"No document {document_id}.")
    if document is None:
        raise missing
    require_readable(principal, document.namespace.slug, missing)
    return document


def get_chunk(principal: Principal, chunk_id: int) -> Chunk:
    """A passage the principal may read; another tenant's answers exactly like a missing one."""
    chunk = (
        Chunk.objects.select_related("document", "namespace")
        .filter(document_filter(principal.audiences, "document__"), pk=chunk_id)
        .first()
    )
    missing = NotFound(f"No passage {chunk_id}.")
    if chunk is None:
        raise missing
    require_readable(principal, chunk.namespace.slug, missing)
    return chunk


def section_text(document: Document, anchor: str) -> tuple[str, int, int]:
    """The section of `anchor` with its subsections (as a reader of the page means a section),
    read from the document's own headings as the chunker reads them (ids, slugs, a page's ids
    inherited by headings it gives none), with its UTF-8 byte range: an exact slice of the stored
    text. Any heading's anchor is found, whether or not a chunk is cited at it."""
    content = document.content
    sections = read_sections(
        content, read_blocks(content), bool(document.metadata.get("site_anchors"))
    )
    span = section_range(
        [
            (section.anchor, _heading_level(section), section.blocks[0].start)
            for section in sections
        ],
        anchor,
        len(content),
    )
    if span is None:
        raise NotFound(
            f"Document {document.pk} has no section {anchor!r}.",
            details={"document_id": document.pk, "anchor": anchor},
        )
    start = len(content[: span[0]].encode("utf-8"))
    text = content[span[0] : span[1]]
    return text, start, start + len(text.encode("utf-8"))


def _heading_level(section) -> int:
    first = section.blocks[0]
    return first.level if first.kind == "heading" else 0


def section_range(
    sections: list[tuple[str, int, int]], anchor: str, length: int
) -> tuple[int, int] | None:
    """The character range of `anchor`'s section among a document's sections (anchor, level of
    the heading it opens with or 0, start offset; in order): from the first section with the
    anchor to the next that opens with a heading of its level or above (a sibling, even one of
    the same name or with the same id), or the end. None when no section has the anchor. Pure."""
    first = next((i for i, (a, _, _) in enumerate(sections) if a == anchor), None)
    if first is None:
        return None
    _, level, start = sections[first]
    end = next(
        (at for _, other, at in sections[first + 1 :] if 0 < other <= level or not level), length
    )
    return start, end


def capped_text(document: Document, max_chars: int, offset: int = 0) -> dict:
    return {"id": document.pk, **text_window(document.content, max_chars, offset)}


def text_window(text: str, max_chars: int, offset: int = 0) -> dict:
    """Characters `offset` to `offset + max_chars` of a text. A window that stops before the end
    closes with an explicit marker saying where to continue; `text[:returned_chars]` is always
    the exact slice, so pieces read one after the other add up to the whole text."""
    total = len(text)
    if not 0 <= offset <= total:
        raise ValidationFailed(
            f"offset must be between 0 and {total} (the text's length), got {offset}.",
            details={"field": "offset", "total_chars": total},
        )
    end = min(total, offset + max_chars)
    window = text[offset:end]
    truncated = end < total
    if truncated:
        window += TRUNCATION_MARKER.format(start=offset, end=end, total=total)
    return {
        "text": window,
        "offset": offset,
        "total_chars": total,
        "returned_chars": end - offset,
        "truncated": truncated,
        "next_offset": end if truncated else None,
    }


@dataclass(frozen=True)
class Section:
    anchor: str  # the section's anchor, on its first passage only
    heading_path: tuple[str, ...]
    html: str  # the passage's markdown rendered safe (retrieval/render.py)
    location: tuple[int | None, int | None]
    passage: str = ""  # this passage's own anchor, `passage-<chunk id>`, which citations target
    inner_anchors: tuple[
        str, ...
    ] = ()  # ids of headings inside it that head no passage of their own


@dataclass(frozen=True)
class DocumentView:
    document: Document
    sections: list[Section]
    has_original: bool


def document_view(principal: Principal, document_id: int) -> DocumentView:
    """The document's passages in order, each with its own anchor, rendered from markdown; a
    passage that overlaps the one before it (the chunker repeats a few sentences, or a whole
    block, so each passage reads alone) shows only what follows it, so the page reads the
    document once."""
    document = get_document(principal, document_id)
    content = document.content.encode("utf-8")
    sections: list[Section] = []
    chunks = list(
        Chunk.objects.filter(document=document, is_summary=False)
        .order_by("position")
        .only("anchor", "heading_path", "start_byte", "end_byte", "page_start", "page_end")
    )
    anchored = {
        chunk.anchor for chunk in chunks
    }  # ids a passage carries; each on its first passage only
    placed: set[str] = set()
    # bytes of the document already shown: a chunk's overlap with the one before is not shown twice
    shown = 0
    for chunk in chunks:
        text = content[max(chunk.start_byte, shown) : chunk.end_byte].decode("utf-8", "replace")
        shown = max(shown, chunk.end_byte)
        anchor = chunk.anchor if chunk.anchor not in placed else ""
        placed.add(chunk.anchor)
        inner = tuple(
            dict.fromkeys(
                block.heading_id
                for block in read_blocks(text)
                if block.heading_id
                and block.heading_id not in anchored
                and block.heading_id not in placed
            )
        )
        placed.update(inner)
        # the page shows the title above the passages: neither a first heading nor the breadcrumbs
        # repeat it
        path = tuple(chunk.heading_path)
        path = path[1:] if path[:1] == (document.title,) else path
        if not sections:
            text = without_title(text, document.title)
        sections.append(
            Section(
                anchor,
                path,
                render_markdown(text),
                (chunk.page_start, chunk.page_end),
                passage_anchor(chunk.pk),
                inner,
            )
        )
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
    return (
        data,
        stored.path.rsplit("/", 1)[-1],
        media_type_for(stored.path) or "application/octet-stream",
    )
