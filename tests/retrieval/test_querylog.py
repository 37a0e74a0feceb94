"""The query log's writer: ids at once, rows written after the search, nothing lost on a clean
exit, a refused row dropped alone. Committed data (transactional tests): the writer uses its
own connection, as it does in a web process."""

import os
import subprocess
import sys
import time

import pytest

from kb.models import Namespace, QueryLog
from retrieval import querylog
from tests.cluster import REPO
from tests.pgserver import current_database_url

pytestmark = pytest.mark.django_db(transaction=True)


def _product_python(script: str, timeout: float = 120) -> tuple[int, str, str]:
    """`python -c script` in the repository on the test database, as a product process is: its
    exit code, output and errors (subprocess.TimeoutExpired past `timeout`)."""
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "DATABASE_URL": current_database_url(),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        },
    )
    try:
        out, err = child.communicate(timeout=timeout)
    finally:
        child.kill()
    return child.returncode, out, err


def _wait_for_rows(ids, timeout=10.0):
    deadline = time.monotonic() + timeout
    while QueryLog.objects.filter(pk__in=ids).count() < len(ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return QueryLog.objects.filter(pk__in=ids)


def test_a_search_gets_its_id_at_once_and_its_row_follows():
    namespace = Namespace.objects.create(slug="logged")
    querylog.stop_writer()
    ids = [
        querylog.record(namespace_id=namespace.pk, query=f"query {n}", result_ids=[n], caller="api")
        for n in range(5)
    ]
    assert len(set(ids)) == 5
    assert (
        QueryLog.objects.filter(pk__in=ids).count() < 5
    )  # queued, not written on the search's path
    rows = _wait_for_rows(ids)  # the writer thread, a moment later
    assert sorted((r.pk, r.query, r.result_ids) for r in rows) == [
        (i, f"query {n}", [n]) for n, i in enumerate(ids)
    ]


def test_a_row_the_database_refuses_is_dropped_alone():
    namespace = Namespace.objects.create(slug="kept")
    gone = Namespace.objects.create(slug="gone")
    querylog.stop_writer()
    doomed = querylog.record(namespace_id=gone.pk, query="about to vanish")
    gone.delete()  # its queries are deleted with it; the queued one cannot be written
    kept = querylog.record(namespace_id=namespace.pk, query="still here")
    assert querylog.flush() == 1
    assert list(QueryLog.objects.values_list("pk", "query")) == [(kept, "still here")]
    assert not QueryLog.objects.filter(pk=doomed).exists()


def test_a_clean_exit_writes_every_queued_row():
    namespace = Namespace.objects.create(slug="exiting")
    # a process that logs and exits at once, before its writer's first batch is due
    script = (
        "import django; django.setup(); from retrieval import querylog; "
        f"print(*[querylog.record(namespace_id={namespace.pk}, query=f'q{{n}}') for n in "
        "range(40)])"
    )
    code, out, err = _product_python(script)
    assert code == 0, err[-2000:]
    ids = [int(i) for i in out.split()]
    assert len(ids) == 40
    assert (
        QueryLog.objects.filter(pk__in=ids, namespace=namespace).count() == 40
    )  # no wait: written at exit


def test_an_exit_while_the_writer_holds_a_batch_still_writes_it():
    namespace = Namespace.objects.create(slug="mid-batch")
    # the process exits the moment its writer has taken the batch from the queue, while that
    # thread is still connecting to write it: the exit must wait for the batch, not drop it
    script = (
        "import django, time; django.setup(); from retrieval import querylog; "
        f"i = querylog.record(namespace_id={namespace.pk}, query='last words'); "
        "deadline = time.monotonic() + 30\n"
        "while querylog._queue and time.monotonic() < deadline: pass\n"
        "print(i)"
    )
    ids = []
    for _ in range(3):
        code, out, err = _product_python(script)
        assert code == 0, err[-2000:]
        ids.append(int(out))
    assert sorted(QueryLog.objects.filter(namespace=namespace).values_list("pk", flat=True)) == (
        sorted(ids)
    )


def test_an_exit_while_the_database_does_not_answer_is_not_held_past_its_bound():
    import psycopg

    namespace = Namespace.objects.create(slug="stalled")
    # the table is locked against inserts, as a database that does not answer: the process's
    # writer waits on its first batch, a second search is queued behind it, and the exit waits
    # for the writer EXIT_WAIT_SECONDS (1 here), not longer
    script = (
        "import django, time; django.setup(); from retrieval import querylog; "
        "querylog.EXIT_WAIT_SECONDS = 1.0; "
        f"querylog.record(namespace_id={namespace.pk}, query='stalled'); "
        "time.sleep(3 * querylog.FLUSH_SECONDS); "
        f"querylog.record(namespace_id={namespace.pk}, query='queued behind it')"
    )
    with psycopg.connect(current_database_url()) as holder:
        holder.execute("LOCK TABLE kb_querylog IN SHARE MODE")  # until this transaction ends
        code, _, err = _product_python(script, timeout=30)
        held = holder.execute(
            "SELECT count(*) FROM pg_locks WHERE relation = 'kb_querylog'::regclass "
            "AND mode = 'ShareLock' AND granted"
        ).fetchone()[0]
    assert code == 0, err[-2000:]
    assert held == 1  # the process ended while the table was still locked
    assert "still writing after 1 s; 1 queued rows wait for it" in err


def test_a_vote_waits_a_moment_for_a_search_another_process_is_logging(django_user_model):
    import threading

    from django.db import connections

    from kb.auth import staff_principal
    from kb.errors import NotFound
    from retrieval.curation import record_feedback
    from retrieval.service import search
    from tests.corpus import CORPUS, ingest

    namespace, _ = ingest("voting", CORPUS)
    chunk_id = search("pumpkin soup", "voting", log=False).hits[0].chunk_id
    principal = staff_principal(
        django_user_model.objects.create_superuser("curator", password="pw-123456789")
    )
    [query_id] = querylog._reserve(
        1
    )  # another process's search: its id taken, its row not yet written

    def written_late():
        QueryLog.objects.create(
            pk=query_id, namespace=namespace, query="pumpkin soup", result_ids=[chunk_id]
        )
        connections.close_all()  # this thread's own connection

    late = threading.Timer(0.1, written_late)
    late.start()
    vote = record_feedback(principal, query_id, chunk_id, helpful=True)
    late.join()
    assert vote.query_log_id == query_id and vote.helpful
    started = time.monotonic()
    with pytest.raises(NotFound):
        record_feedback(principal, query_id + 10_000, chunk_id, helpful=True)
    assert (
        time.monotonic() - started < 2
    )  # an unknown search is refused after a short wait, not hung on


def test_a_flush_inside_a_callers_transaction_keeps_its_connection():
    from django.db import transaction

    namespace = Namespace.objects.create(slug="in-a-transaction")
    query_id = querylog.record(namespace_id=namespace.pk, query="queued")  # outside: queued
    with transaction.atomic():
        assert querylog.flush() in (0, 1)  # 0 when the writer was quicker
        assert QueryLog.objects.filter(pk=query_id).exists()  # the same connection, still open
        Namespace.objects.filter(pk=namespace.pk).update(title="still usable")
    assert Namespace.objects.get(pk=namespace.pk).title == "still usable"
