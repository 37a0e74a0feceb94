"""Source management for the API: create, update, delete with validation. ORM writes here."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from ingest.errors import ContentTooLarge
from ingest.service import (
    check_location as check_source_location,
)
from ingest.service import (
    ingests_otherwise,
    queue_after_save,
    start_ingest,
    sync_refresh_schedule,
)
from ingest.uploads import add_files
from kb.auth import Principal, require_readable
from kb.conf import kb_settings
from kb.errors import Conflict, NotFound, ValidationFailed
from kb.models import IngestItem, IngestRun, Namespace, Source
from kb.vocabulary import REPOSITORY_KINDS, URL_KINDS


@dataclass(frozen=True)
class Saved:
    """A source as a create or an update left it: the run it queued, and what the caller should know
    (nothing yet: a name that did not resolve was one, but a save no longer resolves names)."""

    source: Source
    queued: IngestRun | None = None
    warnings: tuple[str, ...] = ()


def source_out(
    source: Source, queued: IngestRun | None = None, warnings: tuple[str, ...] = ()
) -> dict:
    return {
        "id": source.pk,
        "namespace": source.namespace.slug,
        "name": source.name,
        "kind": source.kind,
        "location": source.location,
        "options": source.options,
        "enabled": source.enabled,
        "priority": source.priority,
        "last_run_status": source.last_run_status,
        "last_run_at": source.last_run_at,
        "queued_run": queued.pk if queued else None,
        "warnings": list(warnings),
    }


def saved_out(saved: Saved) -> dict:
    return source_out(saved.source, saved.queued, saved.warnings)


def run_out(run: IngestRun) -> dict:
    failed = list(
        run.items.filter(status=IngestItem.Status.FAILED).values(
            "ref", "error_code", "error_message"
        )[:100]
    )
    skipped = list(run.items.filter(status=IngestItem.Status.SKIPPED).values("ref", "reason")[:100])
    return {
        "id": run.pk,
        "source_id": run.source_id,
        "status": run.status,
        "mode": run.mode,
        "percent": run.progress_percent,
        "items_total": run.items_total,
        "items_done": run.items_done,
        "items_changed": run.items_changed,
        "items_unchanged": run.items_unchanged,
        "items_failed": run.items_failed,
        "items_removed": run.items_removed,
        "chunks_written": run.chunks_written,
        "error": run.error,
        "queued_at": run.queued_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "failed_items": failed,
        "skipped_items": skipped,
    }


def get_source(principal: Principal, source_id: int, *, write: bool = False) -> Source:
    source = Source.objects.select_related("namespace").filter(pk=source_id).first()
    missing = NotFound(f"No source {source_id}.")
    if source is None:
        raise missing
    require_readable(principal, source.namespace.slug, missing)
    if write:
        principal.check(
            source.namespace.slug, write=True
        )  # readable: saying "read-only" leaks nothing
    return source


def _save(source: Source, *, check_location: bool) -> None:
    """Validate and save."""
    try:
        source.full_clean(validate_constraints=False)  # uniqueness is the database's answer: 409
    except ValidationError as exc:
        raise ValidationFailed(
            "The source is not valid: "
            + "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
            ),
            details={"fields": exc.message_dict},
        ) from exc
    # refused at save, as the admin refuses it: a URL the worker would refuse is no source
    if check_location and source.kind in URL_KINDS + REPOSITORY_KINDS:
        check_source_location(source.kind, source.location)
    try:
        with transaction.atomic():
            source.save()
    except IntegrityError as exc:
        if "source_unique_name" in str(exc):
            raise Conflict(
                f"A source named {source.name!r} already exists in {source.namespace.slug!r}."
            ) from exc
        raise ValidationFailed(f"The source breaks a database rule: {exc}") from exc
    sync_refresh_schedule(source)


def create_source(principal: Principal, data: dict) -> Saved:
    """The new source, and the run it queued: a web or text source is ingested as soon as it is
    saved, as the console does; a file source waits for its files."""
    principal.check(data["namespace"], write=True)
    namespace = Namespace.objects.filter(slug=data.pop("namespace")).first()
    if namespace is None:
        raise NotFound("No such namespace.")
    source = Source(namespace=namespace, **data)
    _save(source, check_location=True)
    return Saved(source, queue_after_save(source))


def update_source(principal: Principal, source_id: int, changes: dict) -> Saved:
    """The source, and the run queued when what it ingests changed in value
    (`ingests_otherwise`)."""
    source = get_source(principal, source_id, write=True)
    changed = {field for field, value in changes.items() if getattr(source, field) != value}
    for field in changed:
        setattr(source, field, changes[field])
    _save(source, check_location="location" in changed)
    return Saved(source, queue_after_save(source) if ingests_otherwise(changed) else None)


def delete_source(principal: Principal, source_id: int) -> None:
    get_source(principal, source_id, write=True).delete()


UPLOAD_OVERHEAD_BYTES = 1024 * 1024  # multipart boundaries and headers around the files


def upload_target(principal: Principal, source_id: int, content_length: str | None) -> Source:
    """The file source an upload is for, checked before its body is read: the caller may write
    it, and the declared body is not over the archive limit."""
    source = get_source(principal, source_id, write=True)
    if source.kind != Source.Kind.FILE:
        raise ValidationFailed(
            f"Source {source_id} is a {source.kind!r} source; files go to 'file' sources."
        )
    limit = kb_settings().archive_max_bytes + UPLOAD_OVERHEAD_BYTES
    try:
        declared = int(content_length or 0)
    except ValueError:
        raise ValidationFailed(f"Content-Length {content_length!r} is not a number.") from None
    if declared > limit:
        raise ContentTooLarge(
            f"The upload is {declared} bytes; an upload may be at most {limit} "
            "(KB_ARCHIVE_MAX_BYTES and the multipart framing).",
            details={"max_bytes": limit},
        )
    return source


def upload_to_source(principal: Principal, source_id: int, uploads) -> dict:
    """Store uploads in a file source (the only way bytes reach one) and start its ingest."""
    source = get_source(principal, source_id, write=True)
    if source.kind != Source.Kind.FILE:
        raise ValidationFailed(
            f"Source {source_id} is a {source.kind!r} source; files go to 'file' sources."
        )
    report = add_files(source, uploads)
    run = start_ingest(source) if report.added or report.replaced else None
    return {"source_id": source.pk, **report.as_dict(), "run_id": run.pk if run else None}
