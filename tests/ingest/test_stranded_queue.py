"""Queue entries claimed by a cluster that no longer runs are handed out again; those a live
cluster holds never are. Against the real queue table, claimed by django-q2's own broker."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta

import psutil
import pytest
from django.core.cache import cache
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ

from ingest.service import start_ingest
from ingest.watchdog import (
    CLUSTERS_KEY,
    ClusterEntry,
    cluster_lease,
    live_clusters,
    machine,
    register_cluster,
    release_orphaned_tasks,
)
from kb.models import IngestRun, Source

pytestmark = pytest.mark.django_db
HOUR = timedelta(hours=1)


@pytest.fixture
def source(namespace):
    return Source.objects.create(namespace=namespace, name="t", kind="text", text="# T\n\nx")


@pytest.fixture
def dead_pid():
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def _queued(source) -> tuple[IngestRun, OrmQ]:
    """A run queued as "Ingest now" queues it, and its entry claimed by a cluster's pusher."""
    run = start_ingest(source)
    claimed = get_broker().dequeue()
    assert [pk for pk, _ in claimed] == [OrmQ.objects.get().pk]
    return run, OrmQ.objects.get()


def _record(*entries: ClusterEntry) -> None:
    cache.set(CLUSTERS_KEY, [entry.as_dict() for entry in entries], None)


def _born() -> datetime:
    """When this process started: a cluster records itself later, before it claims anything."""
    return datetime.fromtimestamp(
        psutil.Process().create_time(), tz=timezone.get_current_timezone()
    )


def _this_process() -> ClusterEntry:
    return ClusterEntry(machine(), os.getpid(), _born(), timezone.now())


def _takeable(entry: OrmQ) -> bool:
    entry.refresh_from_db()
    return entry.lock <= timezone.now()


def test_an_entry_claimed_by_a_cluster_that_stopped_is_handed_out_again(source, dead_pid):
    """The product stopped with a run queued behind a long one: the stopped cluster's pusher had
    claimed it. It is released, and the next cluster's pusher claims it at once."""
    _record(ClusterEntry(machine(), dead_pid, timezone.now() - HOUR, timezone.now()))
    run, entry = _queued(source)
    assert not _takeable(entry)
    assert release_orphaned_tasks() == [entry.pk]
    assert _takeable(entry)
    assert [pk for pk, _ in get_broker().dequeue()] == [entry.pk]
    assert release_orphaned_tasks() == [
        entry.pk
    ]  # claimed again by no live cluster: released again


@pytest.mark.parametrize(
    "holder",
    [
        pytest.param(_this_process, id="this-machine-process-runs"),
        pytest.param(
            lambda: ClusterEntry(
                "another-host/4026531836",
                4242,
                timezone.now() - HOUR,
                timezone.now() - timedelta(seconds=30),
            ),
            id="other-machine-within-lease",
        ),
    ],
)
def test_an_entry_a_live_cluster_may_hold_is_never_released(source, holder, dead_pid):
    _record(holder(), ClusterEntry(machine(), dead_pid, timezone.now() - HOUR, timezone.now()))
    _, entry = _queued(source)
    lock = entry.lock
    assert release_orphaned_tasks() == []
    entry.refresh_from_db()
    assert entry.lock == lock


def test_a_cluster_started_after_the_claim_cannot_hold_it(source, dead_pid):
    """The restarted product's own worker is alive, but it started after the entry was claimed:
    the entry is not its, so it is released (the worker will claim it anew)."""
    _record(ClusterEntry(machine(), dead_pid, timezone.now() - HOUR, timezone.now()))
    _, entry = _queued(source)
    started = register_cluster(timezone.now() + timedelta(seconds=10))  # past the clock slack
    assert [cluster.started for cluster in live_clusters()] == [started]
    assert release_orphaned_tasks() == [entry.pk]


@pytest.mark.parametrize(
    "entry_of",
    [
        pytest.param(
            lambda pid: ClusterEntry(
                "another-host/4026531836",
                4242,
                timezone.now() - HOUR,
                timezone.now() - cluster_lease() - timedelta(seconds=1),
            ),
            id="other-machine-lease-expired",
        ),
        pytest.param(
            lambda pid: ClusterEntry(machine(), os.getpid(), _born() - HOUR, timezone.now()),
            id="this-machine-pid-reused",
        ),
        pytest.param(
            lambda pid: ClusterEntry(machine(), pid, timezone.now() - HOUR, timezone.now()),
            id="this-machine-process-gone",
        ),
    ],
)
def test_a_cluster_is_dead_when_its_process_is_gone_or_its_lease_expired(
    source, entry_of, dead_pid
):
    _record(entry_of(dead_pid))
    _, entry = _queued(source)
    assert live_clusters() == []
    assert release_orphaned_tasks() == [entry.pk]


def test_a_cluster_whose_main_process_was_killed_alone_lives_on_in_its_workers(source, dead_pid):
    """kill -9 of a qcluster's main process leaves its sentinel and workers running, with the tasks
    they claimed: the cluster counts as alive while any process it recorded runs as recorded."""
    worker = subprocess.Popen(["sleep", "60"])
    try:
        born = psutil.Process(worker.pid).create_time()
        _record(
            ClusterEntry(
                machine(), dead_pid, timezone.now() - HOUR, timezone.now(), {worker.pid: born}
            )
        )
        _, entry = _queued(source)
        assert len(live_clusters()) == 1 and release_orphaned_tasks() == []
        _record(
            ClusterEntry(
                machine(), dead_pid, timezone.now() - HOUR, timezone.now(), {worker.pid: born - 60}
            )
        )
        assert live_clusters() == [] and release_orphaned_tasks() == [
            entry.pk
        ]  # that pid is another process now
    finally:
        worker.kill()
        worker.wait()


def test_without_any_record_of_clusters_nothing_is_released(source):
    """A cluster that never recorded itself (the cache emptied) may hold anything: left alone."""
    cache.delete(CLUSTERS_KEY)
    _, entry = _queued(source)
    assert live_clusters() is None
    assert release_orphaned_tasks() == []
    assert not _takeable(entry)


def test_the_entry_of_a_run_that_beats_is_never_released(source, dead_pid):
    """Whatever the record says, a run whose worker stamps its heartbeat is being worked on."""
    _record(ClusterEntry(machine(), dead_pid, timezone.now() - HOUR, timezone.now()))
    run, entry = _queued(source)
    IngestRun.objects.filter(pk=run.pk).update(
        status="running", started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    assert release_orphaned_tasks() == []
    IngestRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - HOUR)
    assert release_orphaned_tasks() == [entry.pk]


def test_a_cluster_renews_its_record_and_drops_the_dead(dead_pid):
    _record(ClusterEntry(machine(), dead_pid, timezone.now() - HOUR, timezone.now()))
    started = register_cluster()
    assert register_cluster(started, family={dead_pid: 0.0}) == started
    [me] = live_clusters()
    assert (me.pid, me.started, me.family) == (os.getpid(), started, {dead_pid: 0.0})
    assert [entry["pid"] for entry in cache.get(CLUSTERS_KEY)] == [os.getpid()]


def test_ingest_now_on_a_stranded_run_hands_it_out_again(source, dead_pid):
    _record(ClusterEntry(machine(), dead_pid, timezone.now() - HOUR, timezone.now()))
    run, entry = _queued(source)
    again = start_ingest(source)
    assert (again.pk, again.task_id) == (run.pk, run.task_id)
    assert _takeable(entry) and OrmQ.objects.count() == 1


def test_ingest_now_on_a_run_whose_task_is_gone_enqueues_it_again(source):
    """Its task ended without starting the run (the entry is gone): a new task for the same run."""
    run, entry = _queued(source)
    entry.delete()
    again = start_ingest(source)
    assert again.pk == run.pk and again.task_id != run.task_id
    assert OrmQ.objects.get().task_id() == again.task_id
    assert IngestRun.objects.get(pk=run.pk).task_id == again.task_id


def test_ingest_now_on_a_run_a_live_cluster_holds_changes_nothing(source):
    register_cluster(_born())
    run, entry = _queued(source)
    lock = entry.lock
    again = start_ingest(source)
    assert (again.pk, again.task_id) == (run.pk, run.task_id)
    entry.refresh_from_db()
    assert entry.lock == lock and OrmQ.objects.count() == 1
