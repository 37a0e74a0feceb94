"""What an ingest run (ingest/pipeline.py) does with one item of its source: report it skipped or
failed as its connector says; move a renamed document; skip an unchanged one (by its bytes, then by
its text); else extract it (in a budgeted child process for documents), drop the site's repeated
blocks, chunk it and queue it for embedding (`ingest/batcher.py`), with the notes the run report
gives it: what a limit cut, a low recall, the blocks dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ingest import store
from ingest.batcher import Batcher
from ingest.boilerplate import BoilerplateCounter, Dropped, block_keys, split_repeated
from ingest.chunk import ChunkOptions, ChunkSpec, chunk_markdown, chunk_text
from ingest.decisions import (
    Action,
    StoredDocument,
    decide,
    document_byte_key,
    stored_extraction,
    text_hash,
)
from ingest.errors import EmptyContent
from ingest.extract import Extracted, extract
from ingest.extract.documents import ISOLATED_TYPES
from ingest.extract.isolated import ParserBudget, capped, extract_isolated, without_nul
from ingest.extract.ocr import OcrOptions
from ingest.loaders import LoadedItem
from ingest.recall import SiteLines, content_recall, page_lines
from ingest.report import Outcome, RunReport
from ingest.store import PendingDocument
from kb.conf import kb_settings
from kb.embedding.embedders import Embedder
from kb.errors import KBError
from kb.models import IngestItem, IngestRun
from kb.vocabulary import MULTI_PAGE_KINDS

Status = IngestItem.Status


@dataclass
class ItemSteps:
    """One run's handling of its items; the run (ingest/pipeline.py) shares its sets and maps."""

    run: IngestRun
    embedder: Embedder
    report: RunReport
    batches: Batcher
    chunk_options: ChunkOptions
    seen: set[str]  # refs the run listed; an item out of scope now leaves it
    stored: dict[str, StoredDocument] = field(default_factory=dict)  # the source's, by ref
    boilerplate: BoilerplateCounter = field(default_factory=BoilerplateCounter)
    block_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)  # pages this run extracted
    dropped_refs: set[str] = field(default_factory=set)  # pages written without some blocks
    moved: dict[str, str] = field(default_factory=dict)  # new ref -> old ref, moved by this run
    site_lines: SiteLines = field(default_factory=SiteLines)

    def __post_init__(self):
        self.source = self.run.source

    def handle(self, item: LoadedItem, started: float) -> None:
        if item.skipped:
            self.seen.discard(item.ref)  # out of scope now: removed like a vanished page
            self.report.record(Outcome(item.ref, Status.SKIPPED, reason=item.skipped), started)
            return
        if item.error is not None:
            message = item.error.message.rstrip()
            if item.linked_from:
                message = message + ("" if message.endswith((".", "!", "?")) else ".")
                message += f" Linked from {', '.join(item.linked_from)}."
            self.report.record(
                Outcome(item.ref, Status.FAILED, error_code=item.error.code, error_message=message),
                started,
            )
            return
        if item.renamed_from:
            self._move(item)
        stored, body = self.stored.get(item.ref), item.body or b""
        byte_key = "" if item.not_modified else document_byte_key(body)
        decision = decide(
            stored, self.embedder.model_id, not_modified=item.not_modified, byte_key=byte_key
        )
        if decision.action == Action.REEMBED:
            self.queue(
                item, stored_extraction(stored), stored.content_hash, decision.reason, started
            )
            return
        if decision.action == Action.SKIP:
            if stored is not None and not item.not_modified:
                store.touch_unchanged(item, stored, None)
            size = 0 if item.not_modified else len(body)
            if item.ref in self.moved:  # its text stands: the move was the change
                self.report.record(
                    Outcome(
                        item.ref, Status.CHANGED, reason=self._moved_note(item.ref), byte_size=size
                    ),
                    started,
                )
                return
            self.report.record(
                Outcome(item.ref, Status.UNCHANGED, reason=decision.reason, byte_size=size), started
            )
            return
        try:
            extracted, keys, dropped = self._drop_boilerplate(item, self._extract(item))
            if not extracted.content.strip():
                raise EmptyContent("No text left after extraction.")
        except KBError as exc:
            self.report.record(
                Outcome(
                    item.ref,
                    Status.FAILED,
                    error_code=exc.code,
                    error_message=exc.message,
                    byte_size=len(body),
                ),
                started,
            )
            return
        content_hash = text_hash(extracted.content)
        decision = decide(stored, self.embedder.model_id, content_hash=content_hash)
        if decision.action == Action.SKIP:
            store.touch_unchanged(item, stored, extracted, byte_key)
            moved = item.ref in self.moved
            self.report.record(
                Outcome(
                    item.ref,
                    Status.CHANGED if moved else Status.UNCHANGED,
                    reason=self._moved_note(item.ref) if moved else decision.reason,
                    byte_size=len(body),
                ),
                started,
            )
            return
        reason = (
            f"{self._moved_note(item.ref)}; {decision.reason}"
            if item.ref in self.moved
            else decision.reason
        )
        self.queue(item, extracted, content_hash, reason, started, byte_key, keys, dropped)

    def _move(self, item: LoadedItem) -> None:
        """A renamed item: its stored document takes the new ref and path, keeping its passages
        and their vectors (what it says is then decided as for any other item)."""
        stored = self.stored.get(item.renamed_from)
        if stored is None or item.ref in self.stored:
            return
        store.move_document(stored.doc_id, item.ref, item.path or item.ref, item.url)
        self.stored[item.ref] = self.stored.pop(item.renamed_from)
        self.moved[item.ref] = item.renamed_from

    def _moved_note(self, ref: str) -> str:
        return f"renamed from {self.moved[ref]}"

    def _extract(self, item: LoadedItem) -> Extracted:
        """Documents, and HTML or text over KB_PARSER_INLINE_MAX_BYTES, are parsed in a budgeted
        child process; small HTML, markdown and text here. Either way the text is capped at
        KB_EXTRACT_MAX_CHARS and holds no NUL (PostgreSQL's text cannot). Scans are OCRed there."""
        conf = kb_settings()
        body = item.body or b""
        if item.media_type in ISOLATED_TYPES or len(body) > conf.parser_inline_max_bytes:
            budget = ParserBudget(
                conf.parser_cpu_seconds, conf.parser_memory_mb * 1024 * 1024, conf.extract_max_chars
            )
            ocr = OcrOptions(conf.ocr_languages, conf.ocr_page_seconds, conf.ocr_max_pages)
            with self.report.beating():  # the child has its own deadline
                extracted = extract_isolated(
                    body,
                    item.media_type,
                    fallback_title=item.title_hint,
                    charset=item.charset,
                    url=item.url,
                    budget=budget,
                    ocr=ocr,
                )
        else:
            extracted = capped(
                extract(
                    body,
                    item.media_type,
                    charset=item.charset,
                    url=item.url,
                    fallback_title=item.title_hint,
                ),
                conf.extract_max_chars,
            )
        return without_nul(extracted)

    def _drop_boilerplate(
        self, item: LoadedItem, extracted: Extracted
    ) -> tuple[Extracted, tuple[str, ...], Dropped]:
        """Web pages of a multi-page source lose the blocks that repeat across the source (once
        the sample is large enough; the run's end settles every page on the whole source)."""
        if self.source.kind not in MULTI_PAGE_KINDS or not extracted.site_anchors:
            return extracted, (), ()
        keys = block_keys(extracted.content, item.body)
        self.boilerplate.observe(item.ref, keys)
        self.block_keys[item.ref] = keys
        content, dropped = split_repeated(extracted.content, self.boilerplate.repeated())
        if dropped:
            self.dropped_refs.add(item.ref)
        return (replace(extracted, content=content) if dropped else extracted), keys, dropped

    def chunks(self, extracted: Extracted) -> list[ChunkSpec]:
        if extracted.media_type == "text/markdown":
            return chunk_markdown(
                extracted.content,
                extracted.title,
                self.chunk_options,
                extracted.pages,
                web_page=extracted.site_anchors,
            )
        return chunk_text(extracted.content, extracted.title, self.chunk_options, extracted.pages)

    def queue(
        self, item, extracted, content_hash, reason, started, byte_key="", keys=(), dropped=None
    ) -> None:
        chunks = self.chunks(extracted)
        max_chunks = kb_settings().max_chunks_per_document
        if extracted.left_out:  # before the limits' notes: the report's reason keeps 200 characters
            reason = f"{reason}; {extracted.left_out}" if reason else extracted.left_out
        reason = cut_notes(reason, extracted.cut, len(chunks), max_chunks)
        chunks = chunks[:max_chunks]
        if not chunks:
            self.report.record(
                Outcome(
                    item.ref,
                    Status.FAILED,
                    error_code=EmptyContent.code,
                    error_message="No chunks could be made.",
                ),
                started,
            )
            return
        if (
            item.anchor_of is not None
        ):  # a forge's line anchors (`#L12`), where citations open the file
            chunks = [replace(chunk, anchor=item.anchor_of(chunk)[:300]) for chunk in chunks]
        reason = self._flag_low_recall(item, extracted, chunks, reason)
        if dropped:
            reason = f"{reason}; {len(dropped)} repeated blocks dropped"
        stored = self.stored.get(item.ref)
        pending = PendingDocument(
            item,
            extracted,
            content_hash,
            chunks,
            reason,
            started,
            byte_key,
            tuple(keys),
            dropped,
            kept=self.kept([stored.doc_id], chunks) if stored is not None else (),
        )
        self.batches.add(pending)
        self.report.chunked(pending.to_embed)

    def kept(
        self, document_ids: list[int], chunks: list[ChunkSpec]
    ) -> tuple[store.KeptVector | None, ...]:
        """Per chunk, the stored vector of a chunk with the same text, which it keeps; none in a
        run asked to embed everything again."""
        if self.run.mode == IngestRun.Mode.REEMBED:
            return ()
        known = store.stored_vectors(self.source, document_ids, self.embedder.model_id)
        return tuple(known.get(chunk.text) for chunk in chunks) if known else ()

    def _flag_low_recall(
        self, item: LoadedItem, extracted: Extracted, chunks: list[ChunkSpec], reason: str
    ) -> str:
        """A web page whose chunks hold too little of its own text says so in the report
        (`low_recall 0.42`), so a curator sees a bad extraction instead of trusting it."""
        if not extracted.site_anchors or not item.body:
            return reason
        lines = page_lines(item.body)
        recall = content_recall(lines, [c.body for c in chunks], self.site_lines.observe(lines))
        if not recall.low:  # under LOW_RECALL, or a block of it lost whole
            return reason
        return (
            f"{reason}; low_recall {recall.share:.2f}"
            if reason
            else f"low_recall {recall.share:.2f}"
        )


def cut_notes(reason: str, cut: tuple[int, int] | None, chunks: int, max_chunks: int) -> str:
    """The item's reason, with what a limit cut from the document said in the run report (the
    stored text's own marker says it too, where few would look). `cut`: `Extracted.cut`."""
    if cut:
        reason += (
            f"; text cut to its first {cut[0]:,} of {cut[1]:,} characters (KB_EXTRACT_MAX_CHARS)"
        )
    if chunks > max_chunks:
        reason += (
            f"; only its first {max_chunks:,} of {chunks:,} passages kept "
            "(KB_MAX_CHUNKS_PER_DOCUMENT)"
        )
    return reason
