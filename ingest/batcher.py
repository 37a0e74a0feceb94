"""Embedding and writing for an ingest run (ingest/pipeline.py): chunks gathered across documents
until a batch is big enough to embed efficiently, or its oldest document has waited long enough;
each batch embedded in reported slices and written by `ingest/store.py` in one transaction, so a
crash leaves every document entirely old or entirely new."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import DatabaseError

from ingest import store
from ingest.decisions import StoredDocument
from ingest.errors import DocumentNotStored
from ingest.extract.ocr import ocr_reason
from ingest.report import Outcome, RunReport
from ingest.store import PendingDocument
from kb.database import database_away
from kb.embedding.embedders import Embedder
from kb.errors import KBError
from kb.models import IngestItem, IngestRun

logger = logging.getLogger(__name__)

EMBED_BATCH_CHUNKS = 128  # chunks gathered across documents before one embedding call
EMBED_BATCH_MAX_WAIT_S = 5.0  # ...or seconds the oldest waiting document may wait for them
EMBED_PROGRESS_CHUNKS = (
    64  # chunks per embedding call: each call is reported (and is one model batch)
)
Status = IngestItem.Status


@dataclass
class Batcher:
    """The documents of a run waiting to be embedded and written."""

    run: IngestRun
    embedder: Embedder
    report: RunReport
    stored: dict[
        str, StoredDocument
    ]  # the source's documents by ref, the pipeline's: writing updates it
    pending: list[PendingDocument] = field(default_factory=list)
    chunk_counts: dict[str, int] = field(
        default_factory=dict
    )  # chunks each page written by this run holds

    def add(self, document: PendingDocument) -> None:
        self.pending.append(document)

    def drop(self) -> None:
        """Forget what waits: the run failed, and its documents stay as they were."""
        self.pending.clear()

    def flush_if_full(self) -> None:
        """Flush when the batch is big enough to embed efficiently, or when its oldest document
        has waited long enough (a slow crawl shows its documents, and a crash loses little)."""
        if not self.pending:
            return
        full = sum(len(p.chunks) for p in self.pending) >= EMBED_BATCH_CHUNKS
        if full or time.monotonic() - self.pending[0].queued_at >= EMBED_BATCH_MAX_WAIT_S:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        batch_started = time.monotonic()
        try:
            vectors = self.vectors(pending)
        except KBError as exc:
            for p in pending:
                self.report.record(
                    Outcome(
                        p.item.ref, Status.FAILED, error_code=exc.code, error_message=exc.message
                    ),
                    own_start(p, pending, batch_started),
                )
            return
        for p in self._store_each_if_refused(pending, vectors):
            self.report.record(
                Outcome(
                    p.item.ref,
                    Status.CHANGED,
                    reason=ocr_reason(p.reason, p.extracted),
                    byte_size=len(p.item.body or p.extracted.content.encode("utf-8")),
                    chunks=len(p.chunks),
                ),
                own_start(p, pending, batch_started),
            )

    def vectors(self, pending: list[PendingDocument]) -> Sequence:
        """Every chunk's vector, in order: the kept ones as stored, the rest embedded now (as the
        embedder gives them: a deferred embedding's are NULL)."""
        kept = [k for p in pending for k in p.kept_per_chunk()]
        texts = [chunk.text for p in pending for chunk in p.chunks]
        if not any(kept):
            return self._embed(texts)
        fresh = iter(self._embed([text for text, k in zip(texts, kept, strict=True) if k is None]))
        return [next(fresh) if k is None else k.vector for k in kept]

    def store(self, pending: list[PendingDocument], vectors) -> None:
        store.write_batch(
            self.run.source,
            pending,
            vectors,
            self.embedder.model_id,
            self.stored,
            runtime=getattr(self.embedder, "document_runtime_in_use", ""),
        )
        # the chunks the run's pages now hold: a page written again (its boilerplate settled)
        # replaces its count instead of adding to it
        self.report.chunks_stored(
            sum(len(p.chunks) - self.chunk_counts.get(p.item.ref, 0) for p in pending)
        )
        self.chunk_counts.update({p.item.ref: len(p.chunks) for p in pending})

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embed in slices, each one reported: the run page moves and the heartbeat beats per
        slice, so a curator (and the watchdog) can tell a long batch from a hung worker. The
        slices are cut from the texts in order of length, so each model batch pads little."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = []
        for start in range(0, len(order), EMBED_PROGRESS_CHUNKS):
            part = [texts[i] for i in order[start : start + EMBED_PROGRESS_CHUNKS]]
            parts.append(self.embedder.embed_documents(part))
            self.report.embedded(len(part))
        if not parts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        vectors = np.concatenate(parts)
        restored = np.empty_like(vectors)
        restored[order] = vectors
        return restored

    def _store_each_if_refused(
        self, pending: list[PendingDocument], vectors
    ) -> list[PendingDocument]:
        """Store the batch; when the database refuses something in it (not when it went away),
        store its documents one by one and fail only those it refuses. Returns those stored.
        Refusals are not only DataError and IntegrityError: a lexeme PostgreSQL cannot read back
        is a syntax error (ProgrammingError), a word or vector too long a limit
        (OperationalError)."""
        try:
            self.store(pending, vectors)
            return pending
        except DatabaseError as exc:
            if database_away(exc):
                raise
            logger.warning(
                "batch of run %s refused (%s); storing its %d documents one by one",
                self.run.pk,
                exc,
                len(pending),
            )
        stored, offset = [], 0
        for p in pending:
            own = vectors[offset : offset + len(p.chunks)]
            offset += len(p.chunks)
            try:
                self.store([p], own)
                stored.append(p)
            except DatabaseError as exc:
                if database_away(exc):
                    raise
                self.report.record(
                    Outcome(
                        p.item.ref,
                        Status.FAILED,
                        error_code=DocumentNotStored.code,
                        error_message=f"The database refused this document: {exc}"[:500],
                    ),
                    p.started,
                )
        return stored


def own_start(
    document: PendingDocument, batch: list[PendingDocument], batch_started: float
) -> float:
    """When `document` would have started had it been done alone, for its report line's duration:
    its own fetch, extraction and chunking, plus its share (by chunks) of the batch's embedding and
    writing, not the time it waited in the batch nor the other documents' share (a 178-byte file
    embedded beside a manual took milliseconds, not the manual's 24 s)."""
    now = time.monotonic()
    total = sum(len(p.chunks) for p in batch) or 1
    share = (now - batch_started) * len(document.chunks) / total
    return now - (document.queued_at - document.started) - share
