"""The query log's writer: a search gets its row's id at once, and the row is written after it.

Every search logs one QueryLog row, and waiting for its insert (a round trip and a commit, about
2 ms) was on every search's path. Here a search takes an id from a block of the table's own
sequence reserved ahead (one round trip per ID_BLOCK searches, so ids stay unique across
processes), and its row joins a queue that a background thread writes in one INSERT per batch,
FLUSH_SECONDS after the first row of the batch. After a batch it recounts the namespaces'
MeaningEstimate (at most every REFRESH_SECONDS each): the median excess over chance of their
latest ESTIMATE_WINDOW searches, which the namespace's console shows.

What a stop loses: a clean exit (the interpreter's, as a gunicorn worker's graceful stop ends)
stops the writer, letting it finish the batch it holds, then writes the rest of the queue, so
nothing (unless the database is away for EXIT_WAIT_SECONDS); a killed process (SIGKILL, a crash,
an unhandled SIGTERM) loses the rows of its last FLUSH_SECONDS at most. A row that cannot be
written (the database is down) stays queued and is tried again, up to MAX_QUEUED rows. A caller
inside a transaction (a test, a command running in one) writes its row at once, in that
transaction, as before.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time

from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    InterfaceError,
    OperationalError,
    connections,
    transaction,
)
from django.db.models import QuerySet

from kb.models import MeaningEstimate, Namespace, QueryLog

logger = logging.getLogger(__name__)

ID_BLOCK = 64  # ids reserved per round trip
FLUSH_SECONDS = 0.2  # a queued row waits at most about this long
MAX_QUEUED = 20_000  # rows kept while the database refuses them; the oldest go first past this
RETRY_SECONDS = 5.0  # between attempts while the database refuses the rows
ESTIMATE_WINDOW = 200  # a namespace's latest searches its MeaningEstimate reads
REFRESH_SECONDS = (
    10.0  # a namespace's MeaningEstimate is recounted at most this often by a process's writer
)
EXIT_WAIT_SECONDS = 10.0  # a clean exit waits at most this long for the writer's batch

_lock = threading.Lock()
_ids: list[int] = []
_queue: list[QueryLog] = []
_wake = threading.Event()
_writer: _Writer | None = None
_refreshed: dict[
    int, float
] = {}  # namespace: when this process last recounted its estimate (monotonic)


def record(**fields) -> int:
    """Log one search (QueryLog's fields); its id, at once."""
    if connections[DEFAULT_DB_ALIAS].in_atomic_block:
        row = QueryLog.objects.create(**fields)
        refresh_estimates({row.namespace_id})
        return row.pk
    with _lock:
        if not _ids:
            _ids.extend(_reserve(ID_BLOCK))
        row = QueryLog(pk=_ids.pop(0), **fields)
        _queue.append(row)
        _start_writer()
    _wake.set()
    return row.pk


def flush() -> int:
    """Write the queued rows now (the writer thread, a clean exit, a read that needs them); how
    many were written. Rows the database refuses go back to the queue."""
    with _lock:
        rows = _queue[:]
        _queue.clear()
    if not rows:
        return 0
    try:
        QueryLog.objects.bulk_create(rows)
        refresh_estimates({row.namespace_id for row in rows}, every=REFRESH_SECONDS)
        return len(rows)
    except (OperationalError, InterfaceError) as exc:  # the database is away: keep them for later
        with _lock:
            _queue[:0] = rows
            del _queue[: max(0, len(_queue) - MAX_QUEUED)]
        logger.warning("query log: %d rows wait for the database: %s", len(rows), exc)
        return 0
    except DatabaseError:  # a row it refuses (its namespace deleted since): the others still go in
        written = sum(_write_alone(row) for row in rows)
        refresh_estimates({row.namespace_id for row in rows}, every=REFRESH_SECONDS)
        return written


def refresh_estimates(namespace_ids: set[int], *, every: float = 0.0) -> None:
    """Recount each namespace's MeaningEstimate from its latest ESTIMATE_WINDOW logged searches
    with an excess, those of people, apps and agents (not the product's own tools). One statement
    per namespace; one not refreshed for `every` seconds by this process only; a namespace
    deleted meanwhile is skipped."""
    now = time.monotonic()
    for namespace_id in sorted(namespace_ids):
        with _lock:
            if now - _refreshed.get(namespace_id, -math.inf) < every:
                continue
            _refreshed[namespace_id] = now
        try:  # a savepoint when the caller is in a transaction, so a refusal does not end it
            with (
                transaction.atomic(using=DEFAULT_DB_ALIAS),
                connections[DEFAULT_DB_ALIAS].cursor() as cursor,
            ):
                cursor.execute(
                    f"INSERT INTO {MeaningEstimate._meta.db_table} (namespace_id, median_excess, "
                    "searches, updated_at) SELECT %s, percentile_cont(0.5) WITHIN GROUP (ORDER BY "
                    "l.meaning_excess), count(*), now()"
                    f" FROM (SELECT meaning_excess FROM {QueryLog._meta.db_table} WHERE "
                    "namespace_id = %s       AND caller <> %s ORDER BY created_at DESC LIMIT %s) l "
                    "WHERE l.meaning_excess IS NOT NULL ON CONFLICT (namespace_id) DO UPDATE SET "
                    "median_excess = EXCLUDED.median_excess, searches = EXCLUDED.searches, "
                    "updated_at = EXCLUDED.updated_at",
                    [namespace_id, namespace_id, QueryLog.Caller.INTERNAL, ESTIMATE_WINDOW],
                )
        except DatabaseError as exc:
            logger.warning(
                "query log: namespace %s's estimate not refreshed: %s", namespace_id, exc
            )


def _write_alone(row: QueryLog) -> bool:
    try:
        QueryLog.objects.bulk_create([row])
        return True
    except (OperationalError, InterfaceError):
        with _lock:
            _queue.append(row)
        return False
    except DatabaseError as exc:
        logger.warning("query log: search %s not logged: %s", row.pk, exc)
        return False


def wait_for(query_id: int, *, namespaces: QuerySet[Namespace] | None = None) -> QueryLog | None:
    """The logged search `query_id` with its namespace, waiting up to twice FLUSH_SECONDS for
    another process's writer to write it (a vote can follow its search faster than that). With
    `namespaces`, a search of another namespace is not found and waited for like a missing one, so
    the time of the answer does not tell the two apart."""
    deadline = time.monotonic() + 2 * FLUSH_SECONDS
    logs = QueryLog.objects.select_related("namespace").filter(pk=query_id)
    if namespaces is not None:
        logs = logs.filter(namespace__in=namespaces)
    while True:
        log = logs.first()
        if log is not None or time.monotonic() >= deadline:
            return log
        time.sleep(FLUSH_SECONDS / 4)


def _reserve(count: int) -> list[int]:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence('kb_querylog', 'id')) FROM generate_series(1, "
            "%s)",
            [count],
        )
        return [row[0] for row in cursor.fetchall()]


def _start_writer() -> None:
    global _writer
    if _writer is None or not _writer.is_alive():
        _writer = _Writer()
        _writer.start()
        # exit handlers run last registered first: registered now, after the database's own (the
        # embedded server stops at exit when no other process uses it), the queue is written first.
        # The writer is stopped, not only the queue flushed: a daemon thread is frozen once the
        # exit handlers end, and a batch it had taken but not yet sent would be lost.
        atexit.unregister(_stop_at_exit)
        atexit.register(_stop_at_exit)


def _stop_at_exit() -> None:
    stop_writer(timeout=EXIT_WAIT_SECONDS)


def stop_writer(timeout: float = 30.0) -> bool:
    """End the writer thread once its batch is written and close its connection (at exit, before
    a test database is dropped), then write what is still queued; the next search starts a new
    writer. False when the writer is still writing after `timeout` (the database does not
    answer): the queue is then left to it, so an exit is not held longer than that."""
    global _writer
    with _lock:
        writer, _writer = _writer, None
    if writer is not None and writer.is_alive():
        writer.stop.set()
        _wake.set()
        writer.join(timeout=timeout)
        if writer.is_alive():
            logger.warning(
                "query log: the writer is still writing after %.0f s; %d queued rows wait for it",
                timeout,
                len(_queue),
            )
            return False
    flush()
    return True


class _Writer(threading.Thread):
    """The writer thread, with its own stop: once asked to stop it stays asked, whatever writer
    starts after it."""

    def __init__(self) -> None:
        super().__init__(name="kb-query-log", daemon=True)
        self.stop = threading.Event()

    def run(self) -> None:
        _write_forever(self.stop)


def _write_forever(stop: threading.Event) -> None:
    while not stop.is_set():
        _wake.wait()
        _wake.clear()
        stop.wait(FLUSH_SECONDS)  # gather the batch; a stop writes it at once
        # the writer's connection lives as a request's does: replaced when it broke or outlived
        # CONN_MAX_AGE (only here: a caller's connection may be inside its own transaction)
        connections[DEFAULT_DB_ALIAS].close_if_unusable_or_obsolete()
        if flush() == 0 and _queue:  # the database refused them: try again later
            stop.wait(RETRY_SECONDS)
            _wake.set()
    flush()
    connections.close_all()


def _forget_in_child() -> None:
    """A forked child starts empty: its parent writes its own queue, and its ids are the
    parent's."""
    global _writer, _lock, _wake
    _lock = threading.Lock()
    _wake = threading.Event()
    _ids.clear()
    _queue.clear()
    _writer = None


os.register_at_fork(after_in_child=_forget_in_child)
