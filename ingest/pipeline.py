"""The ingest pipeline: one run from the source's items to stored, embedded chunks.

Each embedded batch is written in one transaction (`ingest/store.py`), so a crash leaves every
document entirely old or entirely new; an item's error is recorded and the run goes on. Deletions
that would take more than half of the source's documents are held until a curator confirms them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from django.db import DatabaseError, connection

from ingest import store
from ingest.batcher import Batcher
from ingest.boilerplate import BoilerplateCounter, settle
from ingest.chunk import ChunkOptions
from ingest.connectors import Connector, connector_class
from ingest.decisions import (
    BOILERPLATE_LEARNED,
    REEMBED_REQUESTED,
    StoredDocument,
    stored_extraction,
    text_hash,
)
from ingest.errors import IngestInternalError
from ingest.fetch import Fetcher
from ingest.item_steps import ItemSteps
from ingest.loaders import DEFAULTS, LoadedItem, SourceSpec
from ingest.report import Outcome, RunReport
from ingest.store import PendingDocument
from ingest.uploads import current_source_revision, open_stored_file, source_files
from kb.conf import kb_settings
from kb.embedding.embedders import Embedder, check_embedder_dimension, get_embedder
from kb.errors import DatabaseUnavailable, KBError
from kb.models import IngestItem, IngestRun, Source
from kb.signals import namespaces_changed

logger = logging.getLogger(__name__)

DB_RECONNECT_ATTEMPTS = 8  # about 15 s of waiting for a restarting database
Status = IngestItem.Status


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
        self.chunk_options = self.chunk_options or ChunkOptions(
            max_tokens=kb_settings().chunk_tokens
        )
        self.report = RunReport(self.run, self.on_progress)
        self._stored: dict[str, StoredDocument] = {}
        self._seen: set[str] = set()
        self._connector: Connector | None = None
        self._held: dict | None = (
            None  # removals held by this run (None: the source's hold is left as it is)
        )
        self._batches = Batcher(self.run, self.embedder, self.report, self._stored)
        self._items = ItemSteps(
            self.run,
            self.embedder,
            self.report,
            self._batches,
            self.chunk_options,
            self._seen,
            stored=self._stored,
        )

    # --- the run ------------------------------------------------------------------------------
    def execute(self, items: Iterable[LoadedItem] | None = None) -> IngestRun:
        """Run the whole ingest; `items` replaces the source's own loader (benchmarks, tests). A run
        already over (failed by the watchdog, finished by another delivery) is left as it is."""
        if not self.report.start():
            logger.info("ingest run %s is already %s: left as it is", self.run.pk, self.run.status)
            return self.run
        try:
            return self._execute(items)
        finally:
            self._release_embedder_memory()

    def _release_embedder_memory(self) -> None:
        """A worker idles between runs: the embedder's batch buffers go back to the system. The
        run has ended either way, so a failure here is only logged."""
        release = getattr(self.embedder, "release_memory", None)
        if release is None:
            return
        try:
            release()
        except Exception:
            logger.warning(
                "could not release the embedder's memory after run %s", self.run.pk, exc_info=True
            )

    def _execute(self, items: Iterable[LoadedItem] | None) -> IngestRun:
        try:
            self._ingest(items)
        except KBError as exc:
            self._finish(failed_with=exc)
            return self.run
        except DatabaseError as exc:
            self._fail_after_lost_database(exc)
            return self.run
        except Exception as exc:  # a bug must end the run as failed, never leave it running
            logger.exception("unexpected error in ingest run %s", self.run.pk)
            self._batches.drop()
            self._finish(failed_with=IngestInternalError(f"{type(exc).__name__}: {exc}"))
            return self.run
        self._finish()
        return self.run

    def _ingest(self, items: Iterable[LoadedItem] | None) -> None:
        check_embedder_dimension(self.embedder, store.embedding_column_dimension())
        self._stored = self._batches.stored = self._items.stored = store.stored_documents(
            self.source
        )
        self._items.boilerplate = BoilerplateCounter(
            {ref: tuple(doc.metadata.get("block_keys", ())) for ref, doc in self._stored.items()}
        )
        if self.run.mode == IngestRun.Mode.REEMBED:
            self._reembed_stored()
        else:
            connector = self._connector = None if items is not None else self.connector()
            self._consume(items if items is not None else connector.items(), connector)
        self._batches.flush()
        self._drop_learned_boilerplate()
        keep_removed = self.source.options.get("keep_removed", DEFAULTS["keep_removed"])
        if self._connector is not None and not keep_removed and not self.run.items_failed:
            self._remove_deleted(self._connector.deletions(set(self._stored), self._seen))

    def connector(self) -> Connector:
        """The source's connector, told what the store knows (and, for a retry, the failed refs)."""
        only_refs = None
        if (
            self.run.mode == IngestRun.Mode.RETRY
            and self.run.retry_of_id
            and self.source.kind != "text"
        ):
            only_refs = store.failed_refs(self.run.retry_of)
        spec = SourceSpec(
            kind=self.source.kind,
            location=self.source.location,
            text=self.source.text,
            name=self.source.name,
            options=self.source.options or {},
            files=tuple(source_files(self.source)) if self.source.kind == "file" else (),
        )
        return connector_class(self.source.kind)(
            spec,
            fetcher=self.fetcher,
            open_file=open_stored_file,
            known=store.known_documents(self.source),
            only_refs=only_refs,
            cursor=self.source.indexed_commit,
        )

    def _finish(self, failed_with: KBError | None = None) -> None:
        self.report.save(force=True)
        if failed_with is None:
            with self.report.beating():  # the indexes kept from the chunks are brought up to date
                namespaces_changed.send(
                    sender=IngestPipeline, namespace_ids=[self.source.namespace_id]
                )
        self.report.finish(failed_with, self.source_revision)
        self._keep_sync_state()

    def _keep_sync_state(self) -> None:
        """A succeeded run stores where its connector got to (git: the commit it indexed); a run
        that listed the whole source replaces the source's held removals with its own."""
        changes = {}
        if (
            self._connector is not None
            and self.run.status == IngestRun.Status.SUCCEEDED
            and self._connector.cursor != self.source.indexed_commit
        ):
            changes["indexed_commit"] = self._connector.cursor[:64]
        if self._held is not None and self._held != (self.source.held_removals or {}):
            changes["held_removals"] = self._held
        if changes:
            Source.objects.filter(pk=self.source.pk).update(**changes)
            for name, value in changes.items():
                setattr(self.source, name, value)

    def _fail_after_lost_database(self, exc: DatabaseError) -> None:
        """The database went away (restart, failover, network). Every batch is one transaction,
        so each document is entirely old or entirely new; wait for the server to come back, then
        record the run as failed with a stable code, so it can be retried instead of hanging in
        "running". If the server stays away, the error propagates (nothing can be recorded)."""
        logger.warning("database error during ingest run %s: %s", self.run.pk, exc)
        self._batches.drop()
        for attempt in range(DB_RECONNECT_ATTEMPTS):
            try:
                connection.close()
                connection.ensure_connection()
                break
            except DatabaseError:
                time.sleep(min(0.25 * 2**attempt, 4.0))
        else:
            raise exc
        self.report.forget_unsaved()
        self._finish(
            failed_with=DatabaseUnavailable(
                f"The database connection was lost during the ingest ({type(exc).__name__}); "
                "documents written "
                "before it are complete, the batch in flight was rolled back. Retry the run."
            )
        )

    # --- per item -----------------------------------------------------------------------------
    def _consume(self, items: Iterable[LoadedItem], loader: Connector | None) -> None:
        iterator = iter(items)
        while True:
            started = time.monotonic()
            item = next(iterator, None)
            if item is None:
                break
            if loader is not None:
                self.report.discovered(loader.discovered)
            self._seen.add(item.ref)
            try:
                self._items.handle(item, started)
            except (KBError, DatabaseError):
                raise
            except Exception as exc:  # an extractor bug must not abort the run
                logger.exception("unexpected error ingesting %s", item.ref)
                self.report.record(
                    Outcome(
                        item.ref,
                        Status.FAILED,
                        error_code=IngestInternalError.code,
                        error_message=f"{type(exc).__name__}: {exc}",
                    ),
                    started,
                )
            self._batches.flush_if_full()

    def _reembed_stored(self) -> None:
        self.report.expect(len(self._stored))
        for ref, stored in self._stored.items():
            started = time.monotonic()
            self._seen.add(ref)
            self._items.queue(
                LoadedItem(ref=ref),
                stored_extraction(stored),
                stored.content_hash,
                REEMBED_REQUESTED,
                started,
            )
            self._batches.flush_if_full()

    def _drop_learned_boilerplate(self) -> None:
        """Settle every page on the whole source's counts, now that the run has seen the site:
        pages written before a block was known to repeat lose it, and blocks dropped on too
        little evidence (by this run's sample or an earlier run) are put back. Their items are
        already reported; the blocks each page lost stay in its metadata."""
        repeated = self._items.boilerplate.repeated(final=True)
        refs = [ref for ref, keys in self._items.block_keys.items() if repeated.intersection(keys)]
        refs += sorted(self._items.dropped_refs)
        refs += [
            ref
            for ref, stored in self._stored.items()
            if stored.metadata.get("boilerplate_dropped")
        ]
        if not refs:
            return
        pending = []
        settling = store.stored_documents(self.source, list(dict.fromkeys(refs)))
        for ref, stored in settling.items():
            before = tuple((int(i), b) for i, b in stored.metadata.get("boilerplate_dropped", ()))
            content, dropped = settle(stored.content, before, repeated)
            if content == stored.content or not content.strip():
                continue
            self._stored[ref] = stored  # the stored path, validators and metadata are kept
            extracted = replace(stored_extraction(stored), content=content)
            chunks = self._items.chunks(extracted)
            if chunks:
                pending.append(
                    PendingDocument(
                        LoadedItem(ref=ref),
                        extracted,
                        text_hash(content),
                        chunks,
                        BOILERPLATE_LEARNED,
                        time.monotonic(),
                        stored.metadata.get("byte_key", ""),
                        tuple(stored.metadata.get("block_keys", ())),
                        dropped,
                    )
                )
        if pending:
            kept = self._items.kept(
                [settling[p.item.ref].doc_id for p in pending],
                [c for p in pending for c in p.chunks],
            )
            offset = 0
            for p in pending:
                p.kept, offset = kept[offset : offset + len(p.chunks)], offset + len(p.chunks)
            self.report.chunked(sum(p.to_embed for p in pending))
            try:
                vectors = self._batches.vectors(pending)
            except KBError as exc:  # those pages stay as written, whole; the next run cleans them
                logger.warning(
                    "boilerplate not settled on %d pages of run %s: %s",
                    len(pending),
                    self.run.pk,
                    exc,
                )
                return
            self._batches.store(pending, vectors)
            self.report.rewritten({p.item.ref: len(p.chunks) for p in pending})

    def _remove_deleted(self, deleted: set[str]) -> None:
        """Remove the documents the connector reports deleted, unless fewer than half of the
        source's documents would remain: a share that was not mounted, a branch emptied by
        mistake. Then nothing is removed; the removals wait on the source for a curator to
        confirm them in the console, and the run's report says so per document."""
        deleted = {ref for ref in deleted if ref in self._stored}
        self._held = {}
        if deleted and 2 * (len(self._stored) - len(deleted)) < len(self._stored):
            note = (
                f"removal held: the source shrank from {len(self._stored)} to "
                f"{len(self._stored) - len(deleted)} documents; confirm it on the source's page"
            )
            self._held = {"run": self.run.pk, "refs": sorted(deleted), "stored": len(self._stored)}
            for ref in sorted(deleted):
                self.report.record(Outcome(ref, Status.SKIPPED, reason=note), time.monotonic())
            self.report.save(force=True)
            return
        for ref in sorted(deleted):
            store.remove_document(self._stored[ref].doc_id)
            self.report.removed(ref)
        self.report.save(force=True)
