"""django-q2 entry points. They take primary keys, never model instances, and are idempotent."""

from ingest.service import execute_run, start_ingest
from ingest.upload_temp import sweep_stale_uploads
from ingest.watchdog import fail_stuck_runs
from kb.models import Source
from kb.ratelimit import forget_old_windows


def run_ingest(run_id: int) -> str:
    run = execute_run(run_id)
    return f"run {run.pk}: {run.status}"


def refresh_source(source_id: int) -> str:
    source = Source.objects.filter(pk=source_id, enabled=True).first()
    if source is None:
        return f"source {source_id}: gone or disabled"
    run = start_ingest(source, sync=True)  # already on a worker: no second hop through the queue
    return f"run {run.pk}: {run.status}"


def watchdog() -> str:
    forget_old_windows()  # rate-limit counters of past minutes
    sweep_stale_uploads()  # upload files left by a web server killed mid-request
    failed = fail_stuck_runs()
    return f"failed stuck runs: {failed}" if failed else "no stuck runs"
