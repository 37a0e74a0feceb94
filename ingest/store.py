"""The one writer of documents and chunks, and the pipeline's reads of what is stored.

A batch of embedded documents is written in one transaction: each document is upserted, its
chunks upserted by position and its orphaned tail deleted, so after a crash every document in
the batch is entirely old or entirely new.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from ingest.chunk import ChunkSpec
from ingest.decisions import PIPELINE_VERSION, StoredDocument
from ingest.extract import Extracted
from ingest.loaders import KnownDocument, LoadedItem
from ingest.recall import low_recall_of
from kb.language_detection import detect
from kb.languages import DEFAULT_CONFIG, document_config, main_language
from kb.models import Chunk, Document, IngestItem, IngestRun, Source
from kb.names import document_name_key, duplicate_key

DOCUMENT_FIELDS = (
    "namespace",
    "title",
    "path",
    "name_key",
    "content",
    "content_hash",
    "media_type",
    "byte_size",
    "indexed_at",
    "embedding_model",
    "etag",
    "last_modified",
    "metadata",
    "language",
)
CHUNK_FIELDS = (
    "title",
    "text",
    "heading_path",
    "anchor",
    "start_byte",
    "end_byte",
    "token_estimate",
    "is_partial_code",
    "page_start",
    "page_end",
    "embedding",
    "embedding_model",
    "embed_reason",
    "embedding_runtime",
    "namespace",
    "text_key",
    "body_key",
    "search_config",
)


@dataclass
class PendingDocument:
    """A document to write, chunked and waiting for its embeddings."""

    item: LoadedItem
    extracted: Extracted
    content_hash: str
    chunks: list[ChunkSpec]
    reason: str
    started: float
    byte_key: str = ""
    block_keys: tuple[str, ...] = ()  # the page's blocks before boilerplate was dropped
    dropped_blocks: tuple[tuple[int, str], ...] | None = (
        None  # boilerplate taken out (None: as stored)
    )
    queued_at: float = field(default_factory=time.monotonic)
    kept: tuple[
        KeptVector | None, ...
    ] = ()  # per chunk, the stored vector its unchanged text keeps

    def kept_per_chunk(self) -> tuple[KeptVector | None, ...]:
        """`kept`, one entry per chunk (None where the chunk is to be embedded)."""
        return self.kept or (None,) * len(self.chunks)

    @property
    def to_embed(self) -> int:
        """How many of the chunks keep no stored vector."""
        return sum(1 for kept in self.kept_per_chunk() if kept is None)


@dataclass(frozen=True)
class KeptVector:
    """A stored chunk's vector, and why and by what it was computed, for a chunk of the same
    text."""

    vector: object
    reason: str
    runtime: str


# --- reads ------------------------------------------------------------------------------------


def embedding_column_dimension() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'kb_chunk'::regclass "
            "AND attname = 'embedding'"
        )
        return cursor.fetchone()[0]


def stored_documents(source: Source, refs: list[str] | None = None) -> dict[str, StoredDocument]:
    documents = Document.objects.filter(source=source)
    if refs is not None:
        documents = documents.filter(ref__in=refs)
    rows = documents.values_list(
        "ref",
        "id",
        "content_hash",
        "embedding_model",
        "title",
        "content",
        "media_type",
        "path",
        "etag",
        "last_modified",
        "metadata",
    )
    return {ref: StoredDocument(*rest) for ref, *rest in rows}


def stored_vectors(source: Source, document_ids: list[int], model_id: str) -> dict[str, KeptVector]:
    """The vectors `model_id` computed for these documents of `source`, by chunk text: a document
    chunked again keeps them for every chunk whose text did not change (same text, same model,
    same vector), so only what changed is embedded."""
    rows = Chunk.objects.filter(
        namespace_id=source.namespace_id,
        document__source=source,
        document_id__in=document_ids,
        embedding_model=model_id,
    ).values_list("text", "embedding", "embed_reason", "embedding_runtime")
    return {text: KeptVector(vector, reason, runtime) for text, vector, reason, runtime in rows}


def known_documents(source: Source) -> dict[str, KnownDocument]:
    """What the loader may skip fetching: each document's validators and links, under its ref and
    under the URL it was fetched as. Documents of an older pipeline are fetched whole again."""
    known = {}
    for d in Document.objects.filter(source=source).only(
        "ref", "etag", "last_modified", "metadata"
    ):
        current = d.metadata.get("pipeline") == PIPELINE_VERSION
        document = KnownDocument(
            ref=d.ref,
            etag=d.etag if current else "",
            last_modified=d.last_modified if current else "",
            lastmod=d.metadata.get("lastmod", "") if current else "",
            links=tuple(d.metadata.get("links", ())),
        )
        known[d.ref] = document
        fetched_as = d.metadata.get("url", "")
        if fetched_as and fetched_as not in known:
            known[fetched_as] = document  # a page stored under its canonical URL
    return known


def failed_refs(run: IngestRun) -> set[str]:
    return set(run.items.filter(status=IngestItem.Status.FAILED).values_list("ref", flat=True))


# --- writes -----------------------------------------------------------------------------------


def write_batch(
    source: Source,
    pending: list[PendingDocument],
    vectors,
    model_id: str,
    stored: dict[str, StoredDocument],
    runtime: str = "",
) -> int:
    """Upsert a batch of documents and their chunks and delete their orphaned tails, in one
    transaction; returns the number of chunks written. `runtime` is what computed the vectors
    (the local model's `document_runtime_in_use`), kept with each chunk."""
    now = timezone.now()
    documents = [document_row(source, p, stored.get(p.item.ref), now, model_id) for p in pending]
    with transaction.atomic():
        written = Document.objects.bulk_create(
            documents,
            update_conflicts=True,
            unique_fields=["source", "ref"],
            update_fields=list(DOCUMENT_FIELDS),
        )
        rows, offset = [], 0
        language, main = language_setting(source.namespace_id)
        for p, document in zip(pending, written, strict=True):
            config = document_config(language, document.language, main)
            for chunk, vector, old in zip(
                p.chunks, vectors[offset : offset + len(p.chunks)], p.kept_per_chunk(), strict=True
            ):
                rows.append(
                    chunk_row(
                        source,
                        document,
                        chunk,
                        vector,
                        model_id,
                        old.reason if old else p.reason,
                        old.runtime if old else runtime,
                        config,
                    )
                )
            offset += len(p.chunks)
        Chunk.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["document", "position"],
            update_fields=list(CHUNK_FIELDS),
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM kb_chunk c USING unnest(%s::bigint[], %s::int[]) AS t(document_id, n) "
                "WHERE c.document_id = t.document_id AND c.position >= t.n",
                [[d.pk for d in written], [len(p.chunks) for p in pending]],
            )
    return len(rows)


def language_setting(namespace_id: int) -> tuple[str, str]:
    """The namespace's language setting and main language, read per batch inside its transaction
    and held (FOR SHARE) until it commits: a setting changed while a run goes on applies from the
    next batch, and the change waits for this one, so the relex it starts finds this batch's
    passages stored; without the lock they could commit after the relex listed the documents and
    keep the old configuration."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT language, document_languages::text FROM kb_namespace WHERE id = %s FOR SHARE",
            [namespace_id],
        )
        language, languages = cursor.fetchone()
    return language, main_language(json.loads(languages))


def chunk_row(
    source: Source,
    document: Document,
    chunk: ChunkSpec,
    vector,
    model_id: str,
    reason: str,
    runtime: str = "",
    search_config: str = DEFAULT_CONFIG,
) -> Chunk:
    return Chunk(
        document_id=document.pk,
        namespace_id=source.namespace_id,
        position=chunk.position,
        title=document.title,
        text=chunk.text,
        heading_path=list(chunk.heading_path),
        anchor=chunk.anchor[:300],
        start_byte=chunk.start_byte,
        end_byte=chunk.end_byte,
        token_estimate=chunk.token_estimate,
        is_partial_code=chunk.partial_code,
        page_start=chunk.page_start,
        page_end=chunk.page_end,
        embedding=vector,
        embedding_model=model_id,
        embed_reason=embed_reason(reason),
        embedding_runtime=runtime,
        text_key=duplicate_key(chunk.text),
        body_key=duplicate_key(chunk.body),
        search_config=search_config,
    )


def embed_reason(reason: str) -> str:
    """Why the chunk was embedded: the decision that opens the item's report text, without what
    the report adds after it ("new; low_recall 0.42; 3 repeated blocks dropped" is "new")."""
    return reason.split(";", 1)[0].strip()[: Chunk._meta.get_field("embed_reason").max_length]


def document_row(
    source: Source, p: PendingDocument, stored: StoredDocument | None, now, model_id: str
) -> Document:
    """The document as it will be stored. Re-embedding stored content (nothing was fetched)
    keeps the stored path, validators and metadata."""
    item, extracted = p.item, p.extracted
    title = extracted.title[:500]
    if item.body is None and stored is not None:
        path, etag, last_modified = stored.path, stored.etag, stored.last_modified
        metadata = {**stored.metadata, "pipeline": PIPELINE_VERSION}
        if p.dropped_blocks is not None:
            metadata.pop("boilerplate_dropped", None)
            if p.dropped_blocks:
                metadata["boilerplate_dropped"] = [list(pair) for pair in p.dropped_blocks]
    else:
        path, etag, last_modified = item.path[:2048], item.etag[:300], item.last_modified[:100]
        metadata = fetched_metadata(p)
    return Document(
        source=source,
        ref=item.ref,
        namespace_id=source.namespace_id,
        title=title,
        path=path,
        name_key=document_name_key(title, path or item.ref),
        content=extracted.content,
        content_hash=p.content_hash,
        media_type=extracted.media_type,
        byte_size=len(extracted.content.encode("utf-8")),
        created_at=item.created_at,
        indexed_at=now,
        embedding_model=model_id,
        etag=etag,
        last_modified=last_modified,
        metadata=metadata,
        language=detect(extracted.content),
    )


def fetched_metadata(p: PendingDocument) -> dict:
    """What a freshly read document keeps beside its text (empty values left out)."""
    item, extracted = p.item, p.extracted
    links = list(item.links or extracted.links)
    return {
        key: value
        for key, value in (
            ("lastmod", item.lastmod),
            ("links", links),
            ("url", item.url),
            ("byte_key", p.byte_key),
            (
                "original_type",
                item.media_type
                if extracted.page_unit or item.media_type != extracted.media_type
                else "",
            ),
            ("page_unit", extracted.page_unit),
            ("pages", [list(page) for page in extracted.pages]),
            ("site_anchors", extracted.site_anchors),
            ("block_keys", list(p.block_keys)),
            ("cut", list(extracted.cut or ())),
            ("boilerplate_dropped", [list(pair) for pair in p.dropped_blocks or ()]),
            ("ocr_pages", [number for number, _ in extracted.ocr_pages]),
            ("ocr_confidence", [confidence for _, confidence in extracted.ocr_pages]),
            ("low_recall", low_recall_of(p.reason)),  # the page's recall when under the threshold
            ("pipeline", PIPELINE_VERSION),
        )
        if value
    }


def touch_unchanged(
    item: LoadedItem, stored: StoredDocument, extracted: Extracted | None, byte_key: str = ""
) -> None:
    """Same text: keep validators (and the byte key) current, cheaply; re-embed nothing."""
    changes = {}
    if item.etag or item.last_modified:
        changes.update(etag=item.etag, last_modified=item.last_modified)
    if extracted is not None and extracted.title != stored.title:
        changes["title"] = extracted.title
    if byte_key and stored.metadata.get("byte_key") != byte_key:
        changes["metadata"] = {**stored.metadata, "byte_key": byte_key}
    if changes:
        current = Document.objects.filter(pk=stored.doc_id).values(*changes).first() or {}
        changes = {k: v for k, v in changes.items() if current.get(k) != v}
    if changes:
        with transaction.atomic():
            Document.objects.filter(pk=stored.doc_id).update(**changes)
            if "title" in changes:
                Chunk.objects.filter(document_id=stored.doc_id).update(title=changes["title"][:500])


def move_document(doc_id: int, ref: str, path: str, url: str = "") -> None:
    """A renamed file: its document takes the new ref, path and web URL (and the name key they
    give); its passages and their vectors stay as they are."""
    document = Document.objects.only("title", "metadata").get(pk=doc_id)
    metadata = (
        {**document.metadata, "url": url}
        if url
        else {k: v for k, v in document.metadata.items() if k != "url"}
    )
    Document.objects.filter(pk=doc_id).update(
        ref=ref,
        path=path[:2048],
        metadata=metadata,
        name_key=document_name_key(document.title, path or ref),
    )


def remove_document(doc_id: int) -> None:
    with transaction.atomic():
        Document.objects.filter(pk=doc_id).delete()
