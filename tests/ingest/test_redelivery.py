"""django-q2 delivers a killed worker's task again after KB_TASK_RETRY (KB_TASK_TIMEOUT + 60 s). By
then the watchdog has usually failed the run; the late delivery must leave it failed, change no
document and start no second run. Each test kills a real run mid-way (the worker's process dies
in the embedding step), lets the real watchdog fail it, and delivers the task again through its
entry point in ingest/tasks.py, against the real database and queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ, Schedule
from django_q.scheduler import scheduler

from ingest import pipeline
from ingest.batcher import Batcher
from ingest.service import start_ingest, sync_refresh_schedule
from ingest.tasks import refresh_source, run_ingest
from ingest.watchdog import fail_stuck_runs
from kb.conf import kb_settings
from kb.models import Chunk, Document, IngestRun, Source

pytestmark = pytest.mark.django_db
STALL = 60


@pytest.fixture(autouse=True)
def stall(settings):
    settings.KB_RUN_STALL_SECONDS = STALL
    kb_settings.cache_clear()
    yield
    kb_settings.cache_clear()


@pytest.fixture
def source(namespace):
    """A source ingested once ("old text"), whose text has changed since: any run that gets to
    write would store "new text"."""
    source = Source.objects.create(
        namespace=namespace, name="t", kind="text", text="# T\n\nThe old text."
    )
    assert start_ingest(source, sync=True).status == "succeeded"
    Source.objects.filter(pk=source.pk).update(text="# T\n\nThe new text.")
    source.refresh_from_db()
    return source


def _killed_mid_run(monkeypatch, deliver) -> None:
    """`deliver()` runs a task until its worker dies in the embedding step, as SIGKILL would leave
    it: no except clause runs, the run stays "running" and its heartbeat stops."""

    def die(self, texts):
        raise SystemExit("worker killed")

    with monkeypatch.context() as patch:
        patch.setattr(Batcher, "_embed", die)
        with pytest.raises(SystemExit):
            deliver()


def _watchdog_later() -> list[int]:
    """The watchdog's pass once the dead worker's run has been quiet for twice the stall."""
    return fail_stuck_runs(now=timezone.now() + timedelta(seconds=2 * STALL + 1))


def _state(source: Source) -> dict:
    return {
        "runs": list(
            IngestRun.objects.filter(source=source)
            .order_by("pk")
            .values("pk", "status", "error", "started_at", "finished_at", "attempts", "items_done")
        ),
        "documents": list(
            Document.objects.filter(source=source).values_list("pk", "content", "content_hash")
        ),
        "chunks": sorted(
            Chunk.objects.filter(document__source=source).values_list("pk", flat=True)
        ),
        "source": Source.objects.filter(pk=source.pk)
        .values("last_run_status", "last_run_at")
        .get(),
    }


def test_a_late_redelivery_of_a_run_the_watchdog_failed_changes_nothing(source, monkeypatch):
    run = start_ingest(source)  # queued, its task in django-q2's queue
    task_args = OrmQ.objects.get().task["args"]
    assert task_args == (run.pk,)
    _killed_mid_run(monkeypatch, lambda: run_ingest(*task_args))  # the worker that took it dies
    assert IngestRun.objects.get(pk=run.pk).status == "running"
    assert _watchdog_later() == [run.pk]
    before = _state(source)
    assert before["runs"][-1]["status"] == "failed" and before["runs"][-1]["error"].startswith(
        "INGEST_RUN_ABANDONED"
    )

    assert run_ingest(*task_args) == f"run {run.pk}: failed"  # django-q2 delivers it again, late

    assert _state(source) == before
    assert "The old text." in Document.objects.get(source=source).content


def test_a_run_the_watchdog_fails_while_its_redelivery_starts_stays_failed(source, monkeypatch):
    """The redelivery reads the run while it is still "running", and the watchdog fails it before
    the pipeline claims it: the claim sees the failure, and the run is not brought back."""
    run = start_ingest(source)
    _killed_mid_run(monkeypatch, lambda: run_ingest(run.pk))
    read_as_running = pipeline.current_source_revision

    def watchdog_in_between(src):  # the pipeline is being built: execute_run read "running"
        assert IngestRun.objects.get(pk=run.pk).status == "running"
        assert _watchdog_later() == [run.pk]
        return read_as_running(src)

    monkeypatch.setattr(pipeline, "current_source_revision", watchdog_in_between)
    before = _state(source)
    before_failed = IngestRun.objects.get(pk=run.pk)
    assert run_ingest(run.pk) == f"run {run.pk}: failed"
    after = _state(source)
    assert after["documents"] == before["documents"] and after["chunks"] == before["chunks"]
    failed = IngestRun.objects.get(pk=run.pk)
    assert (failed.status, failed.attempts) == ("failed", before_failed.attempts)
    assert failed.error.startswith("INGEST_RUN_ABANDONED")
    assert "The old text." in Document.objects.get(source=source).content


def test_a_late_redelivery_of_a_refresh_starts_no_second_run(source, monkeypatch):
    # the scheduler's pass starts by closing stale connections: here that would end the test's
    # transaction
    monkeypatch.setattr("django_q.scheduler.close_old_django_connections", lambda: None)
    source.refresh_interval = timedelta(hours=6)
    source.save()
    sync_refresh_schedule(source)
    scheduler(broker=get_broker())  # django-q2's scheduler queues the refresh's tick
    tick = Schedule.objects.get(func="ingest.tasks.refresh_source")
    assert tick.task and OrmQ.objects.filter(key=get_broker().list_key).count() == 1
    _killed_mid_run(monkeypatch, lambda: refresh_source(source.pk))
    refresh = IngestRun.objects.filter(source=source).latest("pk")
    assert refresh.status == "running"
    assert _watchdog_later() == [refresh.pk]
    before = _state(source)

    assert (
        refresh_source(source.pk)
        == f"run {refresh.pk}: failed (this refresh already ran; not run again)"
    )

    assert _state(source) == before
    assert "The old text." in Document.objects.get(source=source).content
    # the schedule's next tick is a new refresh, and runs
    Schedule.objects.filter(pk=tick.pk).update(next_run=timezone.now() - timedelta(seconds=1))
    scheduler(broker=get_broker())
    assert refresh_source(source.pk).endswith(": succeeded")
    assert "The new text." in Document.objects.get(source=source).content
