"""Read searches, documents and pages from a streaming replica, and the rest from the primary.

`on_replica(fn)` runs a read on the next replica that is up and within `KB_REPLICA_MAX_LAG_SECONDS`
of the primary, else on the primary. Writes, the query log, rate-limit counters, the cache, the task
queue and ingest always use the primary. A replica that fails mid-read is set aside for
`REPLICA_RETRY_SECONDS` and the read runs again on the primary, so the caller never sees the
failure.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import threading
import time
from typing import Callable, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, connections

from kb.conf import kb_settings

logger = logging.getLogger(__name__)

REPLICA_PREFIX = "replica_"
REPLICA_RETRY_SECONDS = 30.0  # a replica that failed is not tried again before this
LAG_CHECK_SECONDS = 1.0  # a replica's lag is measured at most this often per process
PRIMARY_ONLY_MODELS = {
    "ratecounter",
    "querylog",
    "apitoken",
    "ingestrun",
    "ingestitem",
}  # of app `kb`
LAG_SQL = """
    SELECT CASE
        WHEN NOT pg_is_in_recovery() THEN 0.0
        WHEN NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming') THEN 'Infinity'::float8
        WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
        ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 'Infinity'::float8)
    END"""  # noqa: E501

T = TypeVar("T")
_reading: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "kb_replica_alias", default=None
)
_turn = itertools.count()
_lock = threading.Lock()
_down_until: dict[str, float] = {}
_lag_checked: dict[str, tuple[float, float]] = {}  # alias -> (when, lag in seconds)


def replica_aliases() -> list[str]:
    return sorted(alias for alias in connections.settings if alias.startswith(REPLICA_PREFIX))


def read_alias() -> str:
    """The alias reads go to here and now: the replica of the current `on_replica` call, else the
    primary."""
    return _reading.get() or DEFAULT_DB_ALIAS


def read_connection():
    return connections[read_alias()]


def on_replica(read: Callable[[], T]) -> T:
    """Run `read` against a replica (see the module docstring), falling back to the primary.
    A read inside another (the search inside the search page) stays on the outer read's
    database, so one answer never mixes two replicas, and the outer read handles a failure."""
    if _reading.get() is not None:
        return read()
    alias = choose_replica()
    token = _reading.set(alias)
    try:
        return read()
    except (OperationalError, InterfaceError) as exc:
        if alias == DEFAULT_DB_ALIAS or replica_usable(alias):
            raise  # the replica is fine: the error is the read's own (or the primary's)
        set_aside(alias, exc)
    finally:
        _reading.reset(token)
    token = _reading.set(DEFAULT_DB_ALIAS)
    try:
        return read()
    finally:
        _reading.reset(token)


def choose_replica() -> str:
    """The next usable replica in round-robin order, or the primary when none is."""
    aliases = replica_aliases()
    if not aliases:
        return DEFAULT_DB_ALIAS
    start = next(_turn)
    for offset in range(len(aliases)):
        alias = aliases[(start + offset) % len(aliases)]
        if _down_until.get(alias, 0.0) > time.monotonic():
            continue
        lag = replica_lag(alias)
        if lag is None:
            continue
        if lag <= kb_settings().replica_max_lag_seconds:
            return alias
    return DEFAULT_DB_ALIAS


def replica_lag(alias: str) -> float | None:
    """Seconds the replica is behind (0 when it has replayed all it received while streaming;
    infinite when it streams nothing), measured at most every LAG_CHECK_SECONDS; None when it
    cannot be reached, which also sets it aside."""
    now = time.monotonic()
    checked = _lag_checked.get(alias)
    if checked and now - checked[0] < LAG_CHECK_SECONDS:
        return checked[1]
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(LAG_SQL)
            lag = float(cursor.fetchone()[0])
    except DatabaseError as exc:
        set_aside(alias, exc)
        return None
    with _lock:
        _lag_checked[alias] = (now, lag)
    return lag


def replica_report() -> list[dict]:
    """Each replica as /healthz shows it, measured now: reachable, lag, and whether reads use it."""
    bound = kb_settings().replica_max_lag_seconds
    report = []
    for alias in replica_aliases():
        with _lock:
            _lag_checked.pop(alias, None)
        lag = replica_lag(alias)
        if lag is None:
            report.append(
                {"alias": alias, "ok": False, "error": "unreachable: reads go to the primary"}
            )
        elif lag == float("inf"):
            report.append({"alias": alias, "ok": False, "error": "not streaming from the primary"})
        else:
            report.append({"alias": alias, "ok": lag <= bound, "lag_seconds": round(lag, 3)})
    return report


def replica_usable(alias: str) -> bool:
    try:
        connections[alias].close()
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False


def set_aside(alias: str, exc: BaseException) -> None:
    logger.warning("read replica %s set aside for %.0f s: %s", alias, REPLICA_RETRY_SECONDS, exc)
    with _lock:
        _down_until[alias] = time.monotonic() + REPLICA_RETRY_SECONDS
        _lag_checked.pop(alias, None)
    try:
        connections[alias].close()
    except DatabaseError:
        pass  # a dead server's connection cannot close cleanly; it is dropped either way


def forget_replica_state() -> None:
    """Every replica is tried afresh (tests, and a process that changed its configuration)."""
    with _lock:
        _down_until.clear()
        _lag_checked.clear()


class ReplicaRouter:
    """Inside `on_replica`, the ORM reads the product's content (namespaces, sources, documents,
    chunks, providers) from the chosen replica; everything else, and every write, uses the
    primary."""

    def db_for_read(self, model, **hints):
        alias = _reading.get()
        if (
            alias
            and model._meta.app_label == "kb"
            and model._meta.model_name not in PRIMARY_ONLY_MODELS
        ):
            return alias
        return DEFAULT_DB_ALIAS

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # a replica holds the primary's rows

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS
