"""django-q2 entry points. They take primary keys, never model instances, and are idempotent:
django-q2 delivers a task again when its worker was killed (after KB_TASK_RETRY), and that late
delivery changes nothing once the work it names has run."""

from django_q.models import Schedule

from ingest.extract.isolated import sweep_scratch
from ingest.service import REFRESH_SCHEDULE, execute_run
from ingest.upload_temp import sweep_stale_uploads
from ingest.watchdog import fail_stuck_runs
from kb.models import IngestRun, Source
from kb.ratelimit import forget_old_windows


def run_ingest(run_id: int) -> str:
    run = execute_run(run_id)  # a run already over (the watchdog failed it) is left as it is
    return f"run {run.pk}: {run.status}"


def refresh_source(source_id: int) -> str:
    """One tick of the source's refresh schedule. Its run carries the id of the task the schedule
    last queued, so a second delivery of that task (its worker was killed mid-run, and the
    watchdog failed the run) starts no second run: a tick is refreshed once."""
    source = Source.objects.filter(pk=source_id, enabled=True).first()
    if source is None:
        return f"source {source_id}: gone or disabled"
    tick = (
        Schedule.objects.filter(name=REFRESH_SCHEDULE.format(id=source_id))
        .values_list("task", flat=True)
        .first()
    )
    if tick:
        earlier = IngestRun.objects.filter(source=source, task_id=tick).order_by("pk").first()
        if earlier is not None:
            return f"run {earlier.pk}: {earlier.status} (this refresh already ran; not run again)"
    # already on a worker: the run is executed here, no second hop through the queue
    run = IngestRun.objects.create(source=source, task_id=tick or "")
    run = execute_run(run.pk)
    return f"run {run.pk}: {run.status}"


def watchdog() -> str:
    forget_old_windows()  # rate-limit counters of past minutes
    sweep_stale_uploads()  # upload files left by a web server killed mid-request
    sweep_scratch()  # parser folders left by a worker killed mid-parse
    failed = fail_stuck_runs()
    return f"failed stuck runs: {failed}" if failed else "no stuck runs"
