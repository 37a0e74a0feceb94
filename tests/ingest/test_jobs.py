"""Background jobs: admin actions, a real django-q2 worker, schedules, the run page, the CLI."""

import datetime
import os
import subprocess
import sys
import time

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import OperationalError
from django.urls import reverse
from django_q.models import OrmQ, Schedule

from ingest.service import start_ingest, sync_refresh_schedule
from kb.models import Chunk, IngestRun, Source
from tests.pgserver import REPO, current_database_url


@pytest.fixture
def staff_client(client, db):
    user = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    client.force_login(user)
    return client


def test_admin_action_enqueues_a_run_that_a_real_worker_completes(
    transactional_db, client, namespace
):
    user = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    client.force_login(user)
    source = Source.objects.create(
        namespace=namespace,
        name="notes",
        kind="text",
        text="# Worker test\n\nThe worker embeds this text.",
    )
    response = client.post(
        reverse("admin:kb_source_changelist"),
        {"action": "ingest_now", "_selected_action": [source.pk]},
        follow=True,
    )
    assert response.status_code == 200
    run = IngestRun.objects.get(source=source)
    assert run.status == "queued" and run.task_id
    assert OrmQ.objects.count() == 1
    assert f"run #{run.pk}" in response.content.decode()

    worker = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=REPO,
        env={**os.environ, "DATABASE_URL": current_database_url()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.status not in ("queued", "running"):
                break
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert run.status == "succeeded", run.error
    assert Chunk.objects.filter(document__source=source).count() == 1
    source.refresh_from_db()
    assert source.last_run_status == "succeeded" and source.last_run_summary["chunks"] == 1


class _Rollback(Exception):
    pass


def _hold_locks(hold, started, release) -> None:
    """In a thread of its own (its own connection): take locks in one transaction, say so, and
    keep them until `release` is set; then roll back."""
    from django.db import connection, transaction

    try:
        with transaction.atomic():
            hold()
            started.set()
            release.wait(30)
            raise _Rollback
    except _Rollback:
        pass
    finally:
        connection.close()


def _queue_while(hold, source: Source):
    """`start_ingest(source)` while another connection holds what `hold` takes: the run, or the
    lock timeout it met (2 s, so a wait fails the test instead of hanging it)."""
    import threading

    from django.db import connection

    started, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_locks, args=(hold, started, release))
    holder.start()
    try:
        assert started.wait(30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        try:
            return start_ingest(source)
        except OperationalError as exc:
            return exc
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
    finally:
        release.set()
        holder.join(30)


def test_ingest_now_does_not_wait_for_the_workers_open_write_batch(transactional_db, namespace):
    """A worker's write batch holds, until it commits, its namespace FOR SHARE (`language_setting`)
    and the source row FOR KEY SHARE (the foreign key of each document it inserts). Queueing a run
    meanwhile must wait for neither: "Ingest now" once waited over 30 s while the worker wrote."""
    from ingest.store import language_setting

    source = Source.objects.create(
        namespace=namespace, name="notes", kind="text", text="# Notes\n\nBusy."
    )
    other = Source.objects.create(
        namespace=namespace, name="other", kind="text", text="# Other\n\nBusy."
    )

    def open_batch(of: Source):
        return lambda: (language_setting(of.namespace_id), IngestRun.objects.create(source=of))

    run = _queue_while(open_batch(source), source)  # the worker writes this source
    assert isinstance(run, IngestRun) and run.status == "queued" and run.task_id, run
    again = _queue_while(open_batch(other), source)  # or another source of the same namespace
    assert isinstance(again, IngestRun) and again.pk == run.pk, (
        again
    )  # still one queued run per source and mode
    # two callers queueing for one source still take turns on its row
    taking_turns = _queue_while(
        lambda: (
            Source.objects.select_for_update(no_key=True, of=("self",))
            .filter(pk=source.pk)
            .order_by("pk")
            .first()
        ),
        source,
    )
    assert isinstance(taking_turns, OperationalError) and "lock timeout" in str(taking_turns)


def test_admin_actions_need_staff(client, db, namespace):
    source = Source.objects.create(namespace=namespace, name="n", kind="text", text="x")
    response = client.post(
        reverse("admin:kb_source_changelist"),
        {"action": "ingest_now", "_selected_action": [source.pk]},
    )
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not IngestRun.objects.exists()


def test_run_page_shows_progress_items_and_retries_failed(
    staff_client, namespace, web, allow_loopback
):
    web.page("/ok", "<p>fine</p>")
    from tests.webserver import Route

    web.routes["/llms.txt"] = Route(
        f"- [ok]({web.url('/ok')})\n- [bad]({web.url('/bad')})\n".encode(),
        200,
        {"Content-Type": "text/plain"},
    )
    source = Source.objects.create(
        namespace=namespace, name="l", kind="llms", location=web.url("/llms.txt")
    )
    run = start_ingest(source, sync=True)
    page = staff_client.get(reverse("admin:kb_ingestrun_change", args=[run.pk])).content.decode()
    assert 'class="kb-run-live"' in page and "run_progress.js" in page
    assert "Retry 1 failed item" in page
    assert "INGEST_HTTP_STATUS" in page and web.url("/bad") in page
    progress = staff_client.get(reverse("admin:kb_ingestrun_progress", args=[run.pk])).json()
    header = {
        key: progress.pop(key) for key in ("title", "fields", "items")
    }  # the live page's fields
    assert progress == {
        "id": run.pk,
        "status": "partial",
        "percent": 100,
        "items_total": 2,
        "items_done": 2,
        "items_failed": 1,
        "chunks_total": 1,
        "chunks_embedded": 1,
        "chunks_written": 1,
        "note": "",
        "error": "",
    }
    assert header["title"].endswith("(partial)") and len(header["items"]) == 2
    response = staff_client.post(reverse("admin:kb_ingestrun_retry", args=[run.pk]))
    retry = IngestRun.objects.exclude(pk=run.pk).get()
    assert response["Location"] == reverse("admin:kb_ingestrun_change", args=[retry.pk])
    assert (retry.mode, retry.retry_of_id, retry.status) == ("retry", run.pk, "queued")


def test_refresh_interval_becomes_a_schedule(db, namespace):
    source = Source.objects.create(
        namespace=namespace,
        name="n",
        kind="text",
        text="x",
        refresh_interval=datetime.timedelta(hours=6),
    )
    schedule = sync_refresh_schedule(source)
    assert (schedule.func, schedule.args, schedule.minutes, schedule.schedule_type) == (
        "ingest.tasks.refresh_source",
        str(source.pk),
        360,
        Schedule.MINUTES,
    )
    source.enabled = False
    sync_refresh_schedule(source)
    assert not Schedule.objects.filter(name=f"kb-refresh-source-{source.pk}").exists()


def test_refresh_task_runs_an_ingest(db, namespace):
    from ingest.tasks import refresh_source

    source = Source.objects.create(namespace=namespace, name="n", kind="text", text="# T\n\nbody")
    assert refresh_source(source.pk).endswith("succeeded")
    assert Chunk.objects.filter(document__source=source).count() == 1


def test_kb_ingest_command_sync_reports_and_fails_on_failed_runs(db, namespace, capsys):
    good = Source.objects.create(namespace=namespace, name="good", kind="text", text="# G\n\nok")
    call_command("kb_ingest", str(good.pk), "--sync")
    out = capsys.readouterr().out
    assert f"source {good.pk} 'good': run" in out and "succeeded - 1 changed" in out
    bad = Source.objects.create(namespace=namespace, name="bad", kind="file")
    bad.files.create(path="missing.md", key="sources/missing.md")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="At least one run failed"):
        call_command("kb_ingest", str(bad.pk), "--sync")
    assert "INGEST_FILE_MISSING" in capsys.readouterr().out
    with pytest.raises(CommandError, match="No source with id 999999"):
        call_command("kb_ingest", "999999")
