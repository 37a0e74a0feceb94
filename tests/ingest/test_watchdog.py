"""The watchdog and what it tells: stalled and waiting runs, failing at twice the stall, stopping
only this cluster's own stuck workers, /healthz and the run page's words."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import psutil
import pytest
from django.utils import timezone

from config.health import health_report
from ingest.report import RunReport
from ingest.run_status import run_note, run_took
from ingest.watchdog import (
    fail_stuck_runs,
    machine,
    stalled_runs,
    stop_abandoned_workers,
    waiting_runs,
    worker_gone,
)
from kb.conf import kb_settings
from kb.models import IngestRun, Source

pytestmark = pytest.mark.django_db
HOST = machine()  # this machine as a run's worker names it: host/PID namespace


@pytest.fixture
def stall(settings):
    settings.KB_RUN_STALL_SECONDS = 60
    kb_settings.cache_clear()
    yield 60
    kb_settings.cache_clear()


@pytest.fixture
def source(namespace):
    return Source.objects.create(namespace=namespace, name="t", kind="text", text="# T\n\nx")


def _running(source, quiet_seconds: float, **fields) -> IngestRun:
    now = timezone.now()
    return IngestRun.objects.create(
        source=source,
        status="running",
        started_at=now - timedelta(seconds=600),
        heartbeat_at=now - timedelta(seconds=quiet_seconds),
        **fields,
    )


def test_a_quiet_run_is_stalled_at_the_threshold_and_failed_only_at_twice_it(source, stall):
    fresh, quiet, silent = _running(source, 5), _running(source, 90), _running(source, 130)
    assert [run.run_id for run in stalled_runs()] == sorted([quiet.pk, silent.pk], reverse=True)
    assert "has made no progress since" in stalled_runs()[0].reason
    assert fail_stuck_runs() == [silent.pk]  # 130 s > 2 × 60 s; 90 s is reported, not acted on
    silent.refresh_from_db(), quiet.refresh_from_db(), fresh.refresh_from_db()
    assert silent.status == "failed" and silent.error.startswith("INGEST_RUN_ABANDONED")
    assert "made no progress since" in silent.error
    assert (quiet.status, fresh.status) == ("running", "running")


def test_when_the_product_starts_a_run_whose_worker_is_gone_fails_at_once(source, stall):
    """scripts/run stopped or killed mid-ingest: its run's heartbeat is still fresh, yet its worker
    is gone with the service, so kb_run fails it as it starts, ready to be retried; a live worker,
    and a worker of another machine, are left to their heartbeat."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    alive = subprocess.Popen(["sleep", "60"])
    try:
        gone = _running(source, 1, worker=f"{HOST}:{dead.pid}")
        working = _running(source, 1, worker=f"{HOST}:{alive.pid}")
        IngestRun.objects.filter(pk=working.pk).update(
            started_at=timezone.now()
        )  # its worker began first
        elsewhere = _running(source, 1, worker="another-host:1")
        newer = IngestRun.objects.create(source=source, status="succeeded")
        Source.objects.filter(pk=source.pk).update(last_run_status="succeeded")
        assert (
            fail_stuck_runs() == []
        )  # a running cluster leaves a killed worker's task to django-q2's redelivery
        assert fail_stuck_runs(service_restarted=True) == [gone.pk]
        gone.refresh_from_db(), working.refresh_from_db(), elsewhere.refresh_from_db()
        assert gone.status == "failed" and gone.error.startswith("INGEST_RUN_ABANDONED")
        assert (
            f"({HOST}:{dead.pid}) is no longer running" in gone.error
            and "Retry the run" in gone.error
        )
        assert (working.status, elsewhere.status) == ("running", "running")
        # the same host name in another PID namespace (a container on the host's network) is not
        # this machine
        assert not worker_gone(f"{socket.gethostname()}/1:{dead.pid}", None)
        source.refresh_from_db()
        assert (
            source.last_run_status == "succeeded" and newer.pk > gone.pk
        )  # the newer run's word stands
        # a pid that now belongs to a process started after the run began is not its worker
        reused = _running(source, 1, worker=f"{HOST}:{alive.pid}")
        IngestRun.objects.filter(pk=reused.pk).update(started_at=timezone.now() - timedelta(days=1))
        assert worker_gone(f"{HOST}:{alive.pid}", timezone.now() - timedelta(days=1))
        assert not worker_gone(f"{HOST}:{alive.pid}", timezone.now())
    finally:
        alive.kill()
        alive.wait()


def test_a_queued_run_waits_only_when_nothing_progresses(source, stall):
    queued = IngestRun.objects.create(source=source)
    IngestRun.objects.filter(pk=queued.pk).update(queued_at=timezone.now() - timedelta(seconds=300))
    busy = _running(source, 5)
    assert waiting_runs() == []  # behind a run that moves, it waits its turn
    IngestRun.objects.filter(pk=busy.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=100)
    )
    [waiting] = waiting_runs()
    assert waiting.run_id == queued.pk and "no worker has taken it since" in waiting.reason


def test_healthz_is_degraded_with_the_reason_while_a_run_is_stalled(source, stall):
    assert health_report().runs["ok"] is True
    run = _running(source, 90, worker=f"{HOST}:4242")
    report = health_report()
    assert report.status in ("degraded", "down") and report.runs["ok"] is False
    [entry] = report.runs["stalled"]
    assert entry["run"] == run.pk and f"worker {HOST}:4242" in entry["reason"]


def test_healthz_names_stuck_runs_and_their_workers_to_a_superuser_only(source, stall, client):
    """Runs belong to tenants, and a worker's name is its host and process: anyone may see that
    the service is degraded and by how many runs, only a superuser which."""
    from django.contrib.auth import get_user_model

    run = _running(source, 90, worker=f"{HOST}:4242")
    anonymous = client.get("/healthz").json()
    assert anonymous["status"] == "degraded" and anonymous["runs"]["stalled"] == 1
    assert socket.gethostname() not in json.dumps(anonymous) and "4242" not in json.dumps(anonymous)
    staff = get_user_model().objects.create_user("curator", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get("/healthz").json()["runs"]["stalled"] == 1
    client.force_login(
        get_user_model().objects.create_superuser("operator", "op@example.com", "pw")
    )
    [entry] = client.get("/healthz").json()["runs"]["stalled"]
    assert entry["run"] == run.pk and f"worker {HOST}:4242" in entry["reason"]


def test_only_this_clusters_own_stuck_worker_is_stopped(source, stall):
    stuck = subprocess.Popen(["sleep", "120"])
    stranger = subprocess.Popen(["sleep", "120"])
    try:
        time.sleep(0.2)
        for process in (stuck, stranger):
            _running(source, 500, worker=f"{HOST}:{process.pid}")
        _running(source, 500, worker=f"another-host:{stuck.pid}")
        assert len(fail_stuck_runs()) == 3
        own = {stuck.pid: psutil.Process(stuck.pid).create_time()}  # the stranger is not our child
        assert stop_abandoned_workers(own) == [stuck.pid]
        assert stuck.wait(timeout=10) == -9 and stranger.poll() is None
        # a pid that started after its run was failed is a reused pid, never killed
        late = subprocess.Popen(["sleep", "120"])
        IngestRun.objects.create(
            source=source,
            status="failed",
            error="INGEST_RUN_ABANDONED: x",
            finished_at=timezone.now() - timedelta(seconds=5),
            worker=f"{HOST}:{late.pid}",
        )
        assert stop_abandoned_workers({late.pid: psutil.Process(late.pid).create_time()}) == []
        late.kill()
    finally:
        for process in (stuck, stranger):
            process.kill()


@pytest.mark.django_db(
    transaction=True
)  # the heartbeat thread writes through a connection of its own
def test_a_bounded_wait_keeps_the_heartbeat_and_progress_is_saved_as_it_happens(
    source, monkeypatch
):
    import ingest.report

    run = IngestRun.objects.create(source=source)
    report = RunReport(run)
    report.start()
    assert run.worker.startswith(f"{HOST}:")
    monkeypatch.setattr(ingest.report, "BEAT_WHILE_WAITING_S", 0.2)
    IngestRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=300))
    with report.beating():
        time.sleep(1.0)
    run.refresh_from_db()
    assert (timezone.now() - run.heartbeat_at).total_seconds() < 1.0
    report.chunked(7)
    report._last_save = 0
    report.embedded(3)
    run.refresh_from_db()
    assert (run.chunks_total, run.chunks_embedded) == (
        7,
        3,
    )  # saved at once, before any item is done


NOW = datetime(2026, 12, 2, 10, 0, 0, tzinfo=dt_timezone.utc)


@pytest.mark.parametrize(
    "status, quiet, expected",
    [
        ("running", 10, "Last progress 10 s ago."),
        (
            "running",
            130,
            "No progress since 09:57:50 UTC (2 min 10 s ago): the worker may be stuck",
        ),
        ("queued", 30, "Waiting for a worker since 09:59:30 UTC."),
        (
            "queued",
            4000,
            "No worker has taken it since 08:53:20 UTC (1 h 6 min 40 s ago): is a worker running?",
        ),
        ("failed", 999, ""),
    ],
    ids=["running", "stalled", "queued", "untaken", "finished"],
)
def test_the_run_page_says_whether_a_run_moves(status, quiet, expected):
    moment = NOW - timedelta(seconds=quiet)
    note = run_note(
        status, queued_at=moment, heartbeat_at=moment, started_at=moment, now=NOW, stall_seconds=120
    )
    assert note.startswith(expected), note


def test_the_run_list_says_how_long_each_run_took_to_the_second():
    def took(status, *, queued=None, started=None, finished=None):
        at = {
            name: None if ago is None else NOW - timedelta(seconds=ago)
            for name, ago in (
                ("queued_at", queued),
                ("started_at", started),
                ("finished_at", finished),
            )
        }
        return run_took(status, now=NOW, **at)

    assert took("succeeded", queued=200, started=190, finished=92) == "1 min 38 s"
    assert took("succeeded", queued=9000, started=8000, finished=100) == "2 h 11 min 40 s"
    assert took("running", queued=50, started=42) == "running for 42 s"
    assert took("queued", queued=12) == "waiting for 12 s"
