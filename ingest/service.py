"""Ingest services: what the admin, the API and the CLI call to start and follow runs."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task

from ingest.connectors.folder import folder_path
from ingest.connectors.git_cli import check_remote
from ingest.fetch import FetchPolicy
from ingest.ssrf import check_unresolved
from ingest.watchdog import queue_entry, release_orphaned_tasks
from kb.conf import kb_settings
from kb.models import Document, IngestItem, IngestRun, Source
from kb.signals import namespaces_changed
from kb.vocabulary import URL_KINDS

REFRESH_SCHEDULE = "kb-refresh-source-{id}"
INGESTED_FIELDS = frozenset({"namespace", "location", "text", "options"})  # what a source ingests


def ingests_otherwise(changed: set[str]) -> bool:
    """Whether a source whose fields `changed` (in value) now ingests something else: saving it
    queues a run, in the console as through the API (`queue_after_save`)."""
    return bool(INGESTED_FIELDS & changed)


def queue_after_save(source: Source) -> IngestRun | None:
    """The run a new source, or one that now ingests something else, gets on save, in the console
    as through the API: an enabled web or text source is ingested at once (by the worker, never in
    the request); a file source waits for its files."""
    if not source.enabled or source.kind == Source.Kind.FILE:
        return None
    return start_ingest(source)


def start_ingest(
    source: Source,
    *,
    mode: str = IngestRun.Mode.INGEST,
    retry_of: IngestRun | None = None,
    sync: bool = False,
    on_progress=None,
) -> IngestRun:
    """Create a run and hand it to the background worker (or run it here with `sync`). A source
    has at most one queued run of each mode: asking again while one waits returns that one, so
    clicking "Ingest now" a thousand times queues one run, not a thousand; if no worker can reach
    that one's task any more, it is handed out again first (`_requeue_if_stranded`)."""
    with transaction.atomic():
        # one caller at a time per source, locking its row alone (no join through Source's ordering
        # to
        # its namespace) and FOR NO KEY UPDATE: a worker's open write batch holds the namespace FOR
        # SHARE
        # and the source FOR KEY SHARE (its documents' foreign key) until it commits, and neither
        # may
        # make this wait
        Source.objects.select_for_update(no_key=True, of=("self",)).filter(pk=source.pk).order_by(
            "pk"
        ).first()
        waiting = (
            None
            if sync or retry_of is not None
            else IngestRun.objects.filter(
                source=source, mode=mode, status=IngestRun.Status.QUEUED, started_at=None
            )
            .order_by("pk")
            .first()
        )
        if waiting is not None:
            _requeue_if_stranded(waiting)
            return waiting
        run = IngestRun.objects.create(source=source, mode=mode, retry_of=retry_of)
        if not sync:
            _enqueue(run)
    if sync:
        execute_run(run.pk, on_progress=on_progress)
        run.refresh_from_db()
    return run


def _enqueue(run: IngestRun) -> None:
    run.task_id = async_task(
        "ingest.tasks.run_ingest",
        run.pk,
        task_name=f"ingest-run-{run.pk}",
        group=f"source-{run.source_id}",
    )
    run.save(update_fields=["task_id"])


def _requeue_if_stranded(run: IngestRun) -> None:
    """A queued run whose task no worker can take is made takeable again: its queue entry is
    released when the cluster that claimed it no longer runs (the product restarted while it
    waited), and its task enqueued again when the entry is gone without the run having started
    (the task ended early). A task a live cluster holds is left to it."""
    entry = queue_entry(run.task_id) if run.task_id else None
    if entry is None:
        _enqueue(run)
    elif entry.lock is not None and entry.lock > timezone.now():
        release_orphaned_tasks()


def ingest_texts(
    source: Source, documents: Iterable[tuple[str, str, str]], on_progress=None, embedder=None
) -> IngestRun:
    """Ingest documents the caller already holds, as (ref, title, text), into `source` as one
    run here and now (a benchmark's corpus): the same pipeline, change detection and report as
    any other run, without a loader; `embedder` replaces the configured one (a benchmark
    comparing runtimes)."""
    from ingest.loaders import LoadedItem
    from ingest.pipeline import IngestPipeline

    run = IngestRun.objects.create(source=source)
    items = (
        LoadedItem(
            ref=ref,
            body=text.encode("utf-8"),
            media_type="text/plain",
            charset="utf-8",
            title_hint=title,
            path=ref,
        )
        for ref, title, text in documents
    )
    chosen = {"embedder": embedder} if embedder is not None else {}
    IngestPipeline(run, on_progress=on_progress, **chosen).execute(items)
    run.refresh_from_db()
    return run


def execute_run(run_id: int, on_progress=None) -> IngestRun:
    """Run one ingest to its end. Idempotent: a finished run is left as it is."""
    from ingest.pipeline import IngestPipeline

    run = IngestRun.objects.select_related("source__namespace").get(pk=run_id)
    if run.status in IngestRun.FINISHED:
        return run
    return IngestPipeline(run, on_progress=on_progress).execute()


def retry_run(run: IngestRun, *, sync: bool = False) -> IngestRun | None:
    """What Retry on a run's page starts: a run that failed as a whole (abandoned by a dead
    worker, cut off by the database, timed out) is run again in its mode, which skips every
    document it had already written unchanged; a run that ended with failed items fetches only
    those again. None when there is nothing to retry."""
    if run.status == IngestRun.Status.FAILED:
        if (
            run.mode == IngestRun.Mode.RETRY and run.retry_of is not None
        ):  # its items again, not the whole source
            return start_ingest(
                run.source, mode=IngestRun.Mode.RETRY, retry_of=run.retry_of, sync=sync
            )
        mode = IngestRun.Mode.INGEST if run.mode == IngestRun.Mode.RETRY else run.mode
        # linked back to the run that failed; only a RETRY run reads its retry_of's failed items
        return start_ingest(run.source, mode=mode, retry_of=run, sync=sync)
    if not run.items.filter(status=IngestItem.Status.FAILED).exists():
        return None
    return start_ingest(run.source, mode=IngestRun.Mode.RETRY, retry_of=run, sync=sync)


def sync_refresh_schedule(source: Source) -> Schedule | None:
    """Keep one django-q2 schedule per source that has a refresh interval and is enabled."""
    name = REFRESH_SCHEDULE.format(id=source.pk)
    if not source.enabled or not source.refresh_interval:
        Schedule.objects.filter(name=name).delete()
        return None
    minutes = max(1, int(source.refresh_interval.total_seconds() // 60))
    schedule, _ = Schedule.objects.update_or_create(
        name=name,
        defaults=dict(
            func="ingest.tasks.refresh_source",
            args=str(source.pk),
            schedule_type=Schedule.MINUTES,
            minutes=minutes,
            repeats=-1,
        ),
    )
    return schedule


def check_location(kind: str, location: str) -> None:
    """Raise what the worker would refuse about a source's location, at save: a web address the
    SSRF guard refuses (before any DNS), a folder outside KB_FOLDER_ROOTS, a repository address
    whose scheme is not allowed or whose host the guard refuses."""
    if kind in URL_KINDS:
        check_fetchable(location)
    elif kind == Source.Kind.FOLDER:
        folder_path(location, kb_settings().folder_roots)
    elif kind == Source.Kind.GIT:
        check_remote(
            location,
            allowed=FetchPolicy.from_settings().allowed,
            allow_local=kb_settings().git_allow_local,
        )


def check_fetchable(url: str) -> None:
    """Raise what the SSRF guard decides about `url` before any DNS (FetchBlocked with the
    allow-list
    entry it would need): taken at save time, by the console and the API alike. A name is resolved
    only when fetched, so saving is no oracle for an internal DNS
    (`ingest.ssrf.check_unresolved`)."""
    check_unresolved(url, allowed=FetchPolicy.from_settings().allowed)


def confirm_held_removals(source: Source) -> int:
    """Remove the documents a run held back when the source shrank by more than half (the
    curator confirms the source really lost them); returns how many were removed. Documents that
    came back since are no longer held: a later complete run replaces the hold."""
    refs = (source.held_removals or {}).get("refs") or []
    with transaction.atomic():
        held = Document.objects.filter(source=source, ref__in=refs)
        count = held.count()
        held.delete()
        Source.objects.filter(pk=source.pk).update(held_removals={})
    source.held_removals = {}
    if count:
        namespaces_changed.send(sender=confirm_held_removals, namespace_ids=[source.namespace_id])
    return count
