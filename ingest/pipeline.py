"""The ingest pipeline: the one place that writes documents and chunks.

Per document: clean text -> sha256 -> unchanged means skip (no chunking, no embedding, no
write); otherwise chunk -> embed -> in one transaction upsert the document and its chunks and
delete the orphaned tail. Embedding is batched across documents for throughput; each document
is still written in its own transaction, so a crash leaves every document entirely old or
entirely new. Per-item errors are recorded on the run, which goes on; documents that vanished
from a completely listed source are removed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator

from django.core.files.storage import default_storage
from django.core.exceptions import SuspiciousFileOperation
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from ingest.boilerplate import BoilerplateCounter, block_keys, drop_repeated
from ingest.chunk import ChunkOptions, ChunkSpec, chunk_markdown, chunk_text
from ingest.embed import Embedder, check_embedder_dimension, get_embedder
from ingest.errors import ContentTooLarge, EmptyContent, FileKeyInvalid, FileMissing, IngestInternalError
from ingest.extract import Extracted, extract
from ingest.extract.documents import ISOLATED_TYPES
from ingest.extract.isolated import ParserBudget, extract_isolated
from ingest.fetch import Fetcher
from ingest.filetypes import max_bytes_for
from ingest.services import current_source_revision
from ingest.uploads import source_files
from ingest.loaders import KnownDocument, LoadedItem, SourceLoader, SourceSpec
from kb.conf import kb_settings
from kb.errors import DatabaseUnavailable, KBError
from kb.models import Chunk, Document, IngestItem, IngestRun, Source
from kb.vocabulary import MULTI_PAGE_KINDS
from kb.names import document_name_key, duplicate_key
from kb.vector_index import ensure_namespace_index

logger = logging.getLogger(__name__)

DB_RECONNECT_ATTEMPTS = 8  # about 15 s of waiting for a restarting database

EMBED_BATCH_CHUNKS = 128  # chunks gathered across documents before one embedding call
EMBED_BATCH_MAX_WAIT_S = 5.0  # ...or seconds the oldest waiting document may wait for them
# the version of extraction and chunking: part of every document's byte key (new extraction
# rules re-read bytes that did not change) and recorded on each document (new chunking rules
# re-chunk and re-embed stored text); raise it when either changes what a document becomes
PIPELINE_VERSION = "2"
DOCUMENT_FIELDS = ("namespace", "title", "path", "name_key", "content", "content_hash", "media_type",
                   "byte_size", "indexed_at", "embedding_model", "etag", "last_modified", "metadata")


@dataclass
class _Pending:
    """A document that changed, waiting for its embeddings."""

    item: LoadedItem
    extracted: Extracted
    content_hash: str
    chunks: list[ChunkSpec]
    reason: str
    started: float
    byte_key: str = ""
    block_keys: tuple[str, ...] = ()  # the page's blocks before boilerplate was dropped
    document_id: int | None = None
    queued_at: float = field(default_factory=time.monotonic)


@dataclass
class _Outcome:
    ref: str
    status: IngestItem.Status
    reason: str = ""
    error_code: str = ""
    error_message: str = ""
    byte_size: int = 0
    chunks: int = 0
    duration_ms: int = 0


@dataclass
class _State:
    doc_id: int
    content_hash: str
    embedding_model: str
    title: str
    content: str
    media_type: str
    path: str = ""
    etag: str = ""
    last_modified: str = ""
    metadata: dict = field(default_factory=dict)


@dataclass
class IngestPipeline:
    run: IngestRun
    embedder: Embedder = field(default_factory=get_embedder)
    fetcher: Fetcher | None = None
    chunk_options: ChunkOptions | None = None
    on_progress: Callable[[IngestRun], None] | None = None

    def __post_init__(self):
        self.source: Source = self.run.source
        # what this run indexes; recorded on the source only when the run succeeds
        self.source_revision = current_source_revision(self.source)
        self.chunk_options = self.chunk_options or ChunkOptions(max_tokens=kb_settings().chunk_tokens)
        self._pending: list[_Pending] = []
        self._outcomes: list[_Outcome] = []
        self._seen: set[str] = set()
        self._boilerplate = BoilerplateCounter()
        self._run_block_keys: dict[str, tuple[str, ...]] = {}  # pages this run extracted

    # --- entry point --------------------------------------------------------------------------
    def execute(self, items: Iterable[LoadedItem] | None = None) -> IngestRun:
        """Run the whole ingest; `items` replaces the source's own loader (benchmarks, tests)."""
        self._start()
        try:
            self._check_column()
            self._states = self._load_states()
            self._boilerplate = BoilerplateCounter(
                {ref: tuple(state.metadata.get("block_keys", ())) for ref, state in self._states.items()})
            if self.run.mode == IngestRun.Mode.REEMBED:
                self._reembed_stored()
                complete = False
            else:
                loader = None if items is not None else self._loader()
                self._consume(items if items is not None else loader.items(), loader)
                complete = loader.complete if loader else False
            self._flush()
            self._drop_learned_boilerplate()
            if complete and not self.source.options.get("keep_removed", False) and not self.run.items_failed:
                self._remove_missing()
        except KBError as exc:
            self._finish(failed_with=exc)
            return self.run
        except DatabaseError as exc:
            self._fail_after_lost_database(exc)
            return self.run
        except Exception as exc:  # noqa: BLE001 - a bug must end the run as failed, never leave it running
            logger.exception("unexpected error in ingest run %s", self.run.pk)
            self._pending.clear()
            self._finish(failed_with=IngestInternalError(f"{type(exc).__name__}: {exc}"))
            return self.run
        self._finish()
        return self.run

    def _fail_after_lost_database(self, exc: DatabaseError) -> None:
        """The database went away (restart, failover, network). Every batch is one transaction,
        so each document is entirely old or entirely new; wait for the server to come back, then
        record the run as failed with a stable code, so it can be retried instead of hanging in
        "running". If the server stays away, the error propagates (nothing can be recorded)."""
        logger.warning("database error during ingest run %s: %s", self.run.pk, exc)
        self._pending.clear()
        self._outcomes.clear()  # outcomes of the rolled-back batch were never written
        for attempt in range(DB_RECONNECT_ATTEMPTS):
            try:
                connection.close()
                connection.ensure_connection()
                break
            except DatabaseError:
                time.sleep(min(0.25 * 2 ** attempt, 4.0))
        else:
            raise exc
        self.run.refresh_from_db(fields=["items_done", "items_changed", "items_unchanged", "items_failed",
                                          "items_removed", "chunks_written", "chunks_embedded", "items_total"])
        self._finish(failed_with=DatabaseUnavailable(
            f"The database connection was lost during the ingest ({type(exc).__name__}); documents written "
            "before it are complete, the batch in flight was rolled back. Retry the run."))

    def _start(self) -> None:
        self.run.status = IngestRun.Status.RUNNING
        self.run.started_at = self.run.heartbeat_at = timezone.now()
        self.run.attempts += 1
        for counter in ("items_total", "items_done", "items_changed", "items_unchanged",
                        "items_failed", "items_removed", "chunks_written", "chunks_embedded"):
            setattr(self.run, counter, 0)
        self.run.error = ""
        self.run.save()
        self.run.items.all().delete()  # a retried task starts its report afresh

    def _check_column(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'kb_chunk'::regclass "
                "AND attname = 'embedding'"
            )
            check_embedder_dimension(self.embedder, cursor.fetchone()[0])

    def _load_states(self, refs: list[str] | None = None) -> dict[str, _State]:
        documents = Document.objects.filter(source=self.source)
        if refs is not None:
            documents = documents.filter(ref__in=refs)
        rows = documents.values_list(
            "ref", "id", "content_hash", "embedding_model", "title", "content", "media_type", "path",
            "etag", "last_modified", "metadata",
        )
        return {ref: _State(*rest) for ref, *rest in rows}

    def _loader(self) -> SourceLoader:
        known = {}
        for d in Document.objects.filter(source=self.source).only("ref", "etag", "last_modified", "metadata"):
            current = d.metadata.get("pipeline") == PIPELINE_VERSION  # else fetch it whole again
            document = KnownDocument(
                ref=d.ref, etag=d.etag if current else "", last_modified=d.last_modified if current else "",
                lastmod=d.metadata.get("lastmod", "") if current else "", links=tuple(d.metadata.get("links", ())),
            )
            known[d.ref] = document
            fetched_as = d.metadata.get("url", "")
            if fetched_as and fetched_as not in known:
                known[fetched_as] = document  # a page stored under its canonical URL
        only_refs = None
        if self.run.mode == IngestRun.Mode.RETRY and self.run.retry_of_id and self.source.kind != "text":
            only_refs = set(self.run.retry_of.items.filter(status=IngestItem.Status.FAILED)
                            .values_list("ref", flat=True))
        files = tuple(source_files(self.source))
        spec = SourceSpec(kind=self.source.kind, location=self.source.location, text=self.source.text,
                          name=self.source.name, options=self.source.options or {}, files=files)
        return SourceLoader(spec, fetcher=self.fetcher or Fetcher(), known=known,
                            open_file=open_stored_file, only_refs=only_refs)

    # --- per item -----------------------------------------------------------------------------
    def _consume(self, items: Iterable[LoadedItem], loader: SourceLoader | None) -> None:
        iterator: Iterator[LoadedItem] = iter(items)
        while True:
            started = time.monotonic()
            try:
                item = next(iterator)
            except StopIteration:
                break
            if loader is not None:
                self.run.items_total = max(loader.discovered, self.run.items_done + 1)
            self._seen.add(item.ref)
            try:
                self._handle(item, started)
            except (KBError, DatabaseError):
                raise
            except Exception as exc:  # noqa: BLE001 - an extractor bug must not abort the run
                logger.exception("unexpected error ingesting %s", item.ref)
                self._record(_Outcome(item.ref, IngestItem.Status.FAILED, error_code=IngestInternalError.code,
                                      error_message=f"{type(exc).__name__}: {exc}"), started)
            self._flush_if_full()

    def _handle(self, item: LoadedItem, started: float) -> None:
        if item.skipped:
            self._seen.discard(item.ref)  # out of scope now: removed like a vanished page
            self._record(_Outcome(item.ref, IngestItem.Status.SKIPPED, reason=item.skipped), started)
            return
        if item.error is not None:
            self._record(_Outcome(item.ref, IngestItem.Status.FAILED, error_code=item.error.code,
                                  error_message=item.error.message), started)
            return
        state = self._states.get(item.ref)
        if item.not_modified:
            reason = change_reason(state, state.content_hash, self.embedder.model_id) if state else ""
            if reason:
                extracted = stored_extraction(state)
                self._queue(item, extracted, state.content_hash, reason, started)
            else:
                self._record(_Outcome(item.ref, IngestItem.Status.UNCHANGED, reason="not modified"), started)
            return
        byte_key = document_byte_key(item.body or b"")
        if state is not None and state.metadata.get("byte_key") == byte_key \
                and not change_reason(state, state.content_hash, self.embedder.model_id):
            self._touch_unchanged(item, state, None)
            self._record(_Outcome(item.ref, IngestItem.Status.UNCHANGED, reason="same bytes",
                                  byte_size=len(item.body or b"")), started)
            return
        try:
            extracted = self._extract(item)
            extracted, keys = self._drop_boilerplate(item, extracted)
            if not extracted.content.strip():
                raise EmptyContent("No text left after extraction.")
        except KBError as exc:
            self._record(_Outcome(item.ref, IngestItem.Status.FAILED, error_code=exc.code, error_message=exc.message,
                                  byte_size=len(item.body or b"")), started)
            return
        content_hash = _text_hash(extracted.content)
        reason = change_reason(state, content_hash, self.embedder.model_id)
        if not reason:
            self._touch_unchanged(item, state, extracted, byte_key)
            self._record(_Outcome(item.ref, IngestItem.Status.UNCHANGED, reason="same content hash",
                                  byte_size=len(item.body or b"")), started)
            return
        self._queue(item, extracted, content_hash, reason, started, byte_key, keys)

    def _drop_boilerplate(self, item: LoadedItem, extracted: Extracted) -> tuple[Extracted, tuple[str, ...]]:
        """Web pages of a multi-page source lose the blocks that repeat across the source."""
        if self.source.kind not in MULTI_PAGE_KINDS or not extracted.site_anchors:
            return extracted, ()
        keys = block_keys(extracted.content)
        self._boilerplate.observe(item.ref, keys)
        self._run_block_keys[item.ref] = keys
        content, dropped = drop_repeated(extracted.content, self._boilerplate.repeated())
        return (replace(extracted, content=content) if dropped else extracted), keys

    def _extract(self, item: LoadedItem) -> Extracted:
        """Documents are parsed in a budgeted child process; HTML, markdown and text here."""
        if item.media_type in ISOLATED_TYPES:
            conf = kb_settings()
            budget = ParserBudget(conf.parser_cpu_seconds, conf.parser_memory_mb * 1024 * 1024)
            return extract_isolated(item.body or b"", item.media_type, fallback_title=item.title_hint, budget=budget)
        return extract(item.body or b"", item.media_type, charset=item.charset, url=item.url,
                       fallback_title=item.title_hint)

    def _chunks(self, extracted: Extracted) -> list[ChunkSpec]:
        if extracted.media_type == "text/markdown":
            return chunk_markdown(extracted.content, extracted.title, self.chunk_options, extracted.pages,
                                  web_page=extracted.site_anchors)
        return chunk_text(extracted.content, extracted.title, self.chunk_options, extracted.pages)

    def _queue(self, item, extracted, content_hash, reason, started, byte_key="", keys=()) -> None:
        chunks = self._chunks(extracted)
        if not chunks:
            self._record(_Outcome(item.ref, IngestItem.Status.FAILED, error_code=EmptyContent.code,
                                  error_message="No chunks could be made."), started)
            return
        self._pending.append(_Pending(item, extracted, content_hash, chunks, reason, started, byte_key,
                                      tuple(keys)))

    def _touch_unchanged(self, item: LoadedItem, state: _State, extracted: Extracted | None,
                         byte_key: str = "") -> None:
        """Same text: keep validators (and the byte key) current, cheaply; re-embed nothing."""
        changes = {}
        if item.etag or item.last_modified:
            changes.update(etag=item.etag, last_modified=item.last_modified)
        if extracted is not None and extracted.title != state.title:
            changes["title"] = extracted.title
        if byte_key and state.metadata.get("byte_key") != byte_key:
            changes["metadata"] = {**state.metadata, "byte_key": byte_key}
        if changes:
            current = Document.objects.filter(pk=state.doc_id).values(*changes).first() or {}
            changes = {k: v for k, v in changes.items() if current.get(k) != v}
        if changes:
            with transaction.atomic():
                Document.objects.filter(pk=state.doc_id).update(**changes)
                if "title" in changes:
                    Chunk.objects.filter(document_id=state.doc_id).update(title=changes["title"][:500])

    def _reembed_stored(self) -> None:
        self.run.items_total = len(self._states)
        for ref, state in self._states.items():
            started = time.monotonic()
            self._seen.add(ref)
            extracted = stored_extraction(state)
            self._queue(LoadedItem(ref=ref), extracted, state.content_hash, "re-embed requested", started)
            self._flush_if_full()

    def _drop_learned_boilerplate(self) -> None:
        """Pages written before a block was known to repeat across the site still hold it: now
        that the run has seen the site, drop it from them (their items are already reported)."""
        repeated = self._boilerplate.repeated()
        refs = [ref for ref, keys in self._run_block_keys.items() if repeated.intersection(keys)]
        if not refs:
            return
        pending = []
        for ref, state in self._load_states(refs).items():
            content, dropped = drop_repeated(state.content, repeated)
            if not dropped or not content.strip():
                continue
            self._states[ref] = state  # the stored path, validators and metadata are kept
            extracted = replace(stored_extraction(state), content=content)
            chunks = self._chunks(extracted)
            if chunks:
                pending.append(_Pending(LoadedItem(ref=ref), extracted, _text_hash(content), chunks,
                                        "site boilerplate learned", time.monotonic(),
                                        state.metadata.get("byte_key", ""),
                                        tuple(state.metadata.get("block_keys", ()))))
        if pending:
            try:
                vectors = self.embedder.embed_documents([c.text for p in pending for c in p.chunks])
            except KBError as exc:  # those pages stay as written, whole; the next run cleans them
                logger.warning("boilerplate not dropped from %d pages of run %s: %s", len(pending), self.run.pk, exc)
                return
            self._store(pending, vectors)
            self._save_progress(force=True)

    # --- embedding and writing ----------------------------------------------------------------
    def _flush_if_full(self) -> None:
        """Flush when the batch is big enough to embed efficiently, or when its oldest document
        has waited long enough (a slow crawl shows its documents, and a crash loses little)."""
        if not self._pending:
            return
        full = sum(len(p.chunks) for p in self._pending) >= EMBED_BATCH_CHUNKS
        if full or time.monotonic() - self._pending[0].queued_at >= EMBED_BATCH_MAX_WAIT_S:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        texts = [chunk.text for p in pending for chunk in p.chunks]
        try:
            vectors = self.embedder.embed_documents(texts)
        except KBError as exc:
            for p in pending:
                self._record(_Outcome(p.item.ref, IngestItem.Status.FAILED, error_code=exc.code,
                                      error_message=exc.message), p.started)
            return
        self._store(pending, vectors)
        for p in pending:
            self._record(_Outcome(p.item.ref, IngestItem.Status.CHANGED, reason=p.reason,
                                  byte_size=len(p.extracted.content.encode("utf-8")),
                                  chunks=len(p.chunks)), p.started)

    def _store(self, pending: list[_Pending], vectors) -> None:
        """Write an embedded batch and count its chunks on the run."""
        self._write(pending, vectors)
        written = sum(len(p.chunks) for p in pending)
        self.run.chunks_embedded += written
        self.run.chunks_written += written

    def _write(self, pending: list[_Pending], vectors) -> None:
        """Upsert a batch of documents and their chunks and delete their orphaned tails, in one
        transaction: after a crash every document in it is entirely old or entirely new."""
        now = timezone.now()
        documents = [self._document_row(p, now) for p in pending]
        with transaction.atomic():
            written = Document.objects.bulk_create(
                documents, update_conflicts=True, unique_fields=["source", "ref"],
                update_fields=list(DOCUMENT_FIELDS),
            )
            rows, offset = [], 0
            for p, document in zip(pending, written):
                for chunk, vector in zip(p.chunks, vectors[offset: offset + len(p.chunks)]):
                    rows.append(Chunk(
                        document_id=document.pk, namespace_id=self.source.namespace_id,
                        position=chunk.position, title=document.title, text=chunk.text,
                        heading_path=list(chunk.heading_path), anchor=chunk.anchor[:300],
                        start_byte=chunk.start_byte, end_byte=chunk.end_byte,
                        token_estimate=chunk.token_estimate, is_partial_code=chunk.partial_code,
                        page_start=chunk.page_start, page_end=chunk.page_end, embedding=vector,
                        embedding_model=self.embedder.model_id, embed_reason=p.reason,
                        text_key=duplicate_key(chunk.text), body_key=duplicate_key(chunk.body),
                    ))
                offset += len(p.chunks)
            Chunk.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["document", "position"],
                update_fields=["title", "text", "heading_path", "anchor", "start_byte", "end_byte",
                               "token_estimate", "is_partial_code", "page_start", "page_end", "embedding",
                               "embedding_model", "embed_reason", "namespace", "text_key", "body_key"],
            )
            with connection.cursor() as cursor:
                cursor.execute(
                    "DELETE FROM kb_chunk c USING unnest(%s::bigint[], %s::int[]) AS t(document_id, n) "
                    "WHERE c.document_id = t.document_id AND c.position >= t.n",
                    [[d.pk for d in written], [len(p.chunks) for p in pending]],
                )

    def _document_row(self, p: _Pending, now) -> Document:
        """The document as it will be stored. Re-embedding stored content (nothing was fetched)
        keeps the stored path, validators and metadata."""
        item, extracted = p.item, p.extracted
        title = extracted.title[:500]
        state = self._states.get(item.ref)
        if item.body is None and state is not None:
            path, etag, last_modified = state.path, state.etag, state.last_modified
            metadata = {**state.metadata, "pipeline": PIPELINE_VERSION}
        else:
            path, etag, last_modified = item.path[:2048], item.etag[:300], item.last_modified[:100]
            links = list(item.links or extracted.links)
            metadata = {key: value for key, value in (
                ("lastmod", item.lastmod), ("links", links), ("url", item.url), ("byte_key", p.byte_key),
                ("original_type",
                 item.media_type if extracted.page_unit or item.media_type != extracted.media_type else ""),
                ("page_unit", extracted.page_unit), ("pages", [list(page) for page in extracted.pages]),
                ("site_anchors", extracted.site_anchors), ("block_keys", list(p.block_keys)),
                ("pipeline", PIPELINE_VERSION),
            ) if value}
        return Document(
            source=self.source, ref=item.ref, namespace_id=self.source.namespace_id, title=title,
            path=path, name_key=document_name_key(title, path or item.ref), content=extracted.content,
            content_hash=p.content_hash, media_type=extracted.media_type,
            byte_size=len(extracted.content.encode("utf-8")), created_at=item.created_at, indexed_at=now,
            embedding_model=self.embedder.model_id, etag=etag, last_modified=last_modified, metadata=metadata,
        )

    def _remove_missing(self) -> None:
        missing = [ref for ref in self._states if ref not in self._seen]
        for ref in missing:
            with transaction.atomic():
                Document.objects.filter(pk=self._states[ref].doc_id).delete()
            self.run.items_removed += 1
            self._outcomes.append(_Outcome(ref, IngestItem.Status.REMOVED, reason="gone from the source"))
        self._save_progress(force=True)

    # --- bookkeeping --------------------------------------------------------------------------
    def _record(self, outcome: _Outcome, started: float) -> None:
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        self._outcomes.append(outcome)
        self.run.items_done += 1
        self.run.items_total = max(self.run.items_total, self.run.items_done)
        if outcome.status == IngestItem.Status.FAILED:
            self.run.items_failed += 1
        elif outcome.status == IngestItem.Status.CHANGED:
            self.run.items_changed += 1
        elif outcome.status == IngestItem.Status.UNCHANGED:
            self.run.items_unchanged += 1
        self._save_progress()

    _last_save = 0.0

    def _save_progress(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_save < 0.5:
            return
        self._last_save = now
        IngestItem.objects.bulk_create([
            IngestItem(run=self.run, ref=o.ref[:2048], status=o.status, reason=o.reason[:200],
                       error_code=o.error_code[:64], error_message=o.error_message[:4000],
                       byte_size=o.byte_size, chunks=o.chunks, duration_ms=o.duration_ms)
            for o in self._outcomes
        ])
        self._outcomes.clear()
        self.run.heartbeat_at = timezone.now()
        self.run.save(update_fields=[
            "items_total", "items_done", "items_changed", "items_unchanged", "items_failed",
            "items_removed", "chunks_written", "chunks_embedded", "heartbeat_at",
        ])
        if self.on_progress is not None:
            self.on_progress(self.run)

    def _finish(self, failed_with: KBError | None = None) -> None:
        self._save_progress(force=True)
        run = self.run
        if failed_with is not None:
            run.status, run.error = IngestRun.Status.FAILED, f"{failed_with.code}: {failed_with.message}"
        elif run.items_failed and run.items_failed == run.items_done:
            run.status = IngestRun.Status.FAILED
            run.error = "every item failed; see the per-item report"
        elif run.items_failed:
            run.status = IngestRun.Status.PARTIAL
        else:
            run.status = IngestRun.Status.SUCCEEDED
        if failed_with is None:
            self._ensure_vector_index()
        run.finished_at = timezone.now()
        run.save()
        summary = {
            "run": run.pk, "changed": run.items_changed, "unchanged": run.items_unchanged,
            "failed": run.items_failed, "removed": run.items_removed, "chunks": run.chunks_written,
        }
        indexed = {"indexed_revision": self.source_revision} if run.status == IngestRun.Status.SUCCEEDED else {}
        Source.objects.filter(pk=self.source.pk).update(
            last_run_at=run.finished_at, last_run_status=run.status, last_run_summary=summary, **indexed
        )


    def _ensure_vector_index(self) -> None:
        """Give the namespace its own HNSW index once it is large enough (kb/vector_index.py).
        Part of the run, so a finished run is fast to search; a failed build costs speed, not
        results (the namespace is searched exactly), so it is logged and retried by the next run."""
        try:
            ensure_namespace_index(self.source.namespace_id)  # logs a build itself
        except DatabaseError as exc:
            logger.warning("vector index for namespace %s not built: %s", self.source.namespace_id, exc)


def change_reason(state: _State | None, content_hash: str, model_id: str) -> str:
    """Why a document must be (re-)chunked and embedded, or "" when its stored chunks stand."""
    if state is None:
        return "new"
    if state.content_hash != content_hash:
        return "content changed"
    if state.embedding_model != model_id:
        return "model changed"
    if state.metadata.get("pipeline") != PIPELINE_VERSION:
        return "pipeline upgraded"
    return ""


def _text_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def stored_extraction(state: _State) -> Extracted:
    """A stored document as an extraction, pages included, for re-embedding without a fetch."""
    pages = tuple((int(offset), int(number)) for offset, number in state.metadata.get("pages", ()))
    return Extracted(state.title, state.content, state.media_type, pages=pages,
                     page_unit=state.metadata.get("page_unit", ""),
                     site_anchors=bool(state.metadata.get("site_anchors")))


def document_byte_key(body: bytes) -> str:
    """What an unchanged file or page is recognised by before any extraction."""
    return hashlib.sha256(PIPELINE_VERSION.encode() + b"\0" + body).hexdigest()


def open_stored_file(key: str, media_type: str = "") -> tuple[bytes, str]:
    """Read an uploaded file from Django storage, refusing traversal and oversized files."""
    conf = kb_settings()
    max_bytes = max_bytes_for(media_type, text_limit=conf.fetch_max_bytes, document_limit=conf.document_max_bytes)
    try:
        size = default_storage.size(key)
        if size > max_bytes:
            raise ContentTooLarge(f"The file {key!r} is {size} bytes; the limit for its type is {max_bytes}.")
        with default_storage.open(key, "rb") as handle:
            return handle.read(max_bytes + 1), key
    except SuspiciousFileOperation as exc:
        raise FileKeyInvalid(f"The file key {key!r} points outside the upload storage.") from exc
    except FileNotFoundError as exc:
        raise FileMissing(f"The file {key!r} is not in storage.") from exc
