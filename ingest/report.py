"""A run's report: its counters, the per-item outcomes, its progress beats and how it ends.

The one writer of `IngestRun` and `IngestItem` while a run is under way. Outcomes are buffered
and written with the counters at most every `SAVE_INTERVAL_S` (and whenever asked), so a long
run shows progress and its heartbeat without a write per document.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from django.db import DatabaseError, connections
from django.db.models import Case, F, IntegerField, Value, When
from django.utils import timezone

from ingest.watchdog import worker_identity
from kb.errors import KBError
from kb.models import IngestItem, IngestRun, Source

SAVE_INTERVAL_S = 0.5
BEAT_WHILE_WAITING_S = 5.0  # heartbeat period while the run waits on a bounded step
REWRITE_BATCH = 500  # report lines corrected per UPDATE when pages are written again
STATUS_COUNTERS = {
    IngestItem.Status.FAILED: "items_failed",
    IngestItem.Status.CHANGED: "items_changed",
    IngestItem.Status.UNCHANGED: "items_unchanged",
}


@dataclass
class Outcome:
    """One document's line in the report."""

    ref: str
    status: IngestItem.Status
    reason: str = ""
    error_code: str = ""
    error_message: str = ""
    byte_size: int = 0
    chunks: int = 0
    duration_ms: int = 0


class RunReport:
    def __init__(self, run: IngestRun, on_progress: Callable[[IngestRun], None] | None = None):
        self.run, self.on_progress = run, on_progress
        self._outcomes: list[Outcome] = []
        self._last_save = 0.0

    def start(self) -> bool:
        """Claim the run and mark it running with every counter at zero; a redelivered task of a
        run still running starts it afresh. False, with nothing touched, when the run is already
        over: the claim is one conditional UPDATE, so a run the watchdog failed after the task
        read it is not brought back to life (django-q2 redelivers a killed worker's task late)."""
        run = self.run
        now = timezone.now()
        claimed = (
            IngestRun.objects.filter(pk=run.pk)
            .exclude(status__in=IngestRun.FINISHED)
            .update(
                status=IngestRun.Status.RUNNING,
                started_at=now,
                heartbeat_at=now,
                attempts=F("attempts") + 1,
                worker=worker_identity(),
                error="",
                **dict.fromkeys(IngestRun.COUNTERS, 0),
            )
        )
        run.refresh_from_db(
            fields=[
                "status",
                "started_at",
                "heartbeat_at",
                "attempts",
                "worker",
                "error",
                "finished_at",
                *IngestRun.COUNTERS,
            ]
        )
        if claimed:
            run.items.all().delete()
        return bool(claimed)

    def expect(self, total: int) -> None:
        """The run knows how many documents it will handle."""
        self.run.items_total = total

    def discovered(self, total: int) -> None:
        """The loader has found `total` documents so far, at least one more than are done."""
        self.run.items_total = max(total, self.run.items_done + 1)
        self.save()

    def chunked(self, count: int) -> None:
        """A document became `count` chunks that wait for their embeddings."""
        self.run.chunks_total += count
        self.save()

    def embedded(self, count: int) -> None:
        """A batch of `count` chunks was embedded: progress, and a heartbeat."""
        self.run.chunks_embedded += count
        self.save()

    @contextmanager
    def beating(self):
        """Keep the heartbeat going while the run waits on a step that is bounded on its own
        (a parser child with its deadline, an index build): waiting is not hanging. Everything
        else beats by making progress, so a worker stuck in its own code shows as stalled."""
        stop = threading.Event()

        def beat() -> None:
            try:
                while not stop.wait(BEAT_WHILE_WAITING_S):
                    IngestRun.objects.filter(pk=self.run.pk).update(heartbeat_at=timezone.now())
            except DatabaseError:
                pass  # the run's own thread meets the same database and reports it
            finally:
                connections.close_all()  # this thread's connection

        thread = threading.Thread(
            target=beat, name=f"ingest-run-{self.run.pk}-heartbeat", daemon=True
        )
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def record(self, outcome: Outcome, started: float) -> None:
        """A document is done (changed, unchanged, failed or skipped)."""
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        self._outcomes.append(outcome)
        run = self.run
        run.items_done += 1
        run.items_total = max(run.items_total, run.items_done)
        counter = STATUS_COUNTERS.get(outcome.status)
        if counter:
            setattr(run, counter, getattr(run, counter) + 1)
        self.save()

    def removed(self, ref: str) -> None:
        self.run.items_removed += 1
        self._outcomes.append(
            Outcome(ref, IngestItem.Status.REMOVED, reason="gone from the source")
        )

    def chunks_stored(self, count: int) -> None:
        self.run.chunks_written += count

    def rewritten(self, chunks: dict[str, int]) -> None:
        """Pages this run wrote again (their repeated blocks settled) now hold `chunks[ref]`
        chunks each: their lines in the report say so, whether still buffered or written, and
        whether the page changed at its source or was stored by an earlier run."""
        written = (IngestItem.Status.CHANGED, IngestItem.Status.UNCHANGED)
        for outcome in self._outcomes:
            if outcome.ref in chunks and outcome.status in written:
                outcome.chunks = chunks[outcome.ref]
        self.save(force=True)
        refs = [(ref[:2048], count) for ref, count in chunks.items()]
        for start in range(0, len(refs), REWRITE_BATCH):
            part = refs[start : start + REWRITE_BATCH]
            IngestItem.objects.filter(
                run=self.run, status__in=written, ref__in=[ref for ref, _ in part]
            ).update(
                chunks=Case(
                    *(When(ref=ref, then=Value(count)) for ref, count in part),
                    output_field=IntegerField(),
                )
            )

    def forget_unsaved(self) -> None:
        """After a rolled-back batch: its outcomes were never written; the counters go back to
        what the database holds."""
        self._outcomes.clear()
        self.run.refresh_from_db(fields=list(IngestRun.COUNTERS))

    def save(self, force: bool = False) -> None:
        """Write the buffered outcomes, the counters and the heartbeat, then tell the listener."""
        now = time.monotonic()
        if not force and now - self._last_save < SAVE_INTERVAL_S:
            return
        self._last_save = now
        IngestItem.objects.bulk_create(
            [
                IngestItem(
                    run=self.run,
                    ref=o.ref[:2048],
                    status=o.status,
                    reason=o.reason[:200],
                    error_code=o.error_code[:64],
                    error_message=o.error_message[:4000],
                    byte_size=o.byte_size,
                    chunks=o.chunks,
                    duration_ms=o.duration_ms,
                )
                for o in self._outcomes
            ]
        )
        self._outcomes.clear()
        self.run.heartbeat_at = timezone.now()
        self.run.save(update_fields=[*IngestRun.COUNTERS, "heartbeat_at"])
        if self.on_progress is not None:
            self.on_progress(self.run)

    def finish(self, failed_with: KBError | None, indexed_revision: str) -> None:
        """End the run: failed with the error, failed when every item failed, partial when some
        did, else succeeded; the source remembers the run, and a succeeded run's revision."""
        run = self.run
        if failed_with is not None:
            run.status, run.error = (
                IngestRun.Status.FAILED,
                f"{failed_with.code}: {failed_with.message}",
            )
        elif run.items_failed and run.items_failed == run.items_done:
            run.status = IngestRun.Status.FAILED
            run.error = "every item failed; see the per-item report"
        elif run.items_failed:
            run.status = IngestRun.Status.PARTIAL
        else:
            run.status = IngestRun.Status.SUCCEEDED
        run.finished_at = timezone.now()
        run.save()
        summary = {
            "run": run.pk,
            "changed": run.items_changed,
            "unchanged": run.items_unchanged,
            "failed": run.items_failed,
            "removed": run.items_removed,
            "chunks": run.chunks_written,
        }
        indexed = (
            {"indexed_revision": indexed_revision}
            if run.status == IngestRun.Status.SUCCEEDED
            else {}
        )
        Source.objects.filter(pk=run.source_id).update(
            last_run_at=run.finished_at,
            last_run_status=run.status,
            last_run_summary=summary,
            **indexed,
        )
