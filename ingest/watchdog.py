"""The watchdog: no run stays "running" after its worker died or its deadline passed.

A running run's worker stamps `heartbeat_at` at every progress save (at least every few seconds
while it works). django-q2 hands a dead worker's task to another worker `KB_TASK_RETRY`
seconds after it was taken, up to `max_attempts` times, and the new attempt starts the run
afresh (its report restarts, documents are upserted, so nothing is written twice). So the
watchdog waits for that redelivery before it acts:

- a run without a heartbeat for `KB_TASK_RETRY` + `GRACE_SECONDS` is failed with
  `INGEST_RUN_ABANDONED`: a redelivery, had there been one, would have stamped it by then;
- a run started more than `KB_TASK_TIMEOUT` + `GRACE_SECONDS` ago is failed with
  `INGEST_RUN_TIMEOUT` (django-q2 stopped its worker at the timeout).

A run the watchdog failed is never taken up again by a late redelivery (`execute_run` leaves
finished runs alone); the curator retries it. The watchdog runs as a django-q2 schedule every
minute and when `kb_run` starts.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from ingest.errors import IngestError, RunAbandoned, RunTimedOut
from kb.models import IngestRun, Source

GRACE_SECONDS = 120
WATCHDOG_SCHEDULE = "kb-ingest-watchdog"


def fail_stuck_runs(now: datetime | None = None) -> list[int]:
    """Fail every run that lost its worker or outlived its deadline; their ids."""
    now = now or timezone.now()
    retry = timedelta(seconds=settings.Q_CLUSTER["retry"] + GRACE_SECONDS)
    timeout = timedelta(seconds=settings.Q_CLUSTER["timeout"] + GRACE_SECONDS)
    running = IngestRun.objects.filter(status=IngestRun.Status.RUNNING)
    failed = []
    stale = Q(heartbeat_at__lt=now - retry) | Q(heartbeat_at__isnull=True, started_at__lt=now - retry)
    for run in running.filter(stale):
        if _fail(run, RunAbandoned("The worker running this ingest stopped (it died or was killed) and the run "
                                   "was not taken up again. Retry it."), now):
            failed.append(run.pk)
    for run in running.filter(started_at__lt=now - timeout).exclude(pk__in=failed):
        if _fail(run, RunTimedOut(f"The run was still running {settings.Q_CLUSTER['timeout']} s after it started "
                                  "(KB_TASK_TIMEOUT); its worker was stopped. Retry it."), now):
            failed.append(run.pk)
    return failed


def _fail(run: IngestRun, error: IngestError, now: datetime) -> bool:
    """Fail the run unless it finished or beat in the meantime (a conditional update)."""
    updated = IngestRun.objects.filter(pk=run.pk, status=IngestRun.Status.RUNNING,
                                       heartbeat_at=run.heartbeat_at).update(
        status=IngestRun.Status.FAILED, error=f"{error.code}: {error.message}", finished_at=now)
    if updated:
        Source.objects.filter(pk=run.source_id).update(last_run_at=now, last_run_status=IngestRun.Status.FAILED)
    return bool(updated)


def ensure_watchdog_schedule() -> None:
    from django_q.models import Schedule

    Schedule.objects.update_or_create(
        name=WATCHDOG_SCHEDULE,
        defaults=dict(func="ingest.tasks.watchdog", schedule_type=Schedule.MINUTES, minutes=1, repeats=-1),
    )
