"""The vector channel on its own thread and connection, overlapping the other channels: the same
results as the same work in sequence, and a broken probe connection costs one search at most.
Committed data (a transactional test), because the probe reads through another connection."""

import threading
import time

import pytest
from django.db import OperationalError, connection, transaction

from retrieval import channels as ch
from retrieval import service
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db(transaction=True)

QUERIES = ["how long should I roast pumpkin for soup", "Qwen 3.8", "ERR_CONNECTION_REFUSED", "growing pumpkins"]


@pytest.fixture
def probe_threads(monkeypatch):
    """The names of the threads the vector channel ran on, in order."""
    seen: list[str] = []
    real = ch.vector_candidates

    def spy(*args, **kwargs):
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(ch, "vector_candidates", spy)
    return seen


def _ranked(result):
    return [(h.chunk_id, h.score, h.cosine, tuple(sorted(h.details.channels))) for h in result.hits]


def test_the_overlapped_probe_gives_what_the_sequence_gives(probe_threads):
    ingest("tenant:a", CORPUS)
    overlapped = [service.search(q, "tenant:a", limit=8, log=False) for q in QUERIES]
    assert probe_threads and all(name.startswith("kb-vector-probe") for name in probe_threads)
    probe_threads.clear()
    with transaction.atomic():  # another connection would not see this transaction: run in sequence
        in_sequence = [service.search(q, "tenant:a", limit=8, log=False) for q in QUERIES]
    assert probe_threads == [threading.current_thread().name] * len(QUERIES)
    assert [_ranked(r) for r in overlapped] == [_ranked(r) for r in in_sequence]
    assert overlapped[0].hits[0].title == "Pumpkin soup"
    # the lexical hits outside the vector channel's nearest still carry their cosine
    lexical_only = [h for r in overlapped for h in r.hits if "vector" not in h.details.channels]
    assert all(h.cosine is not None for h in lexical_only)
    assert {"embed_ms", "vector_ms", "probe_wait_ms", "cosines_ms"} <= set(overlapped[0].timings)


def _other_backends() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity"
                       " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return {pid for (pid,) in cursor.fetchall()}


def _settled_backends() -> set[int]:
    """The other backends once the ones that were closed have exited (they leave asynchronously)."""
    deadline = time.monotonic() + 10
    while (found := _other_backends()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_the_probe_keeps_one_connection_heals_a_killed_one_and_closes_on_request():
    ingest("tenant:a", CORPUS)
    service.close_probe_connections()
    assert _settled_backends() == set()
    for query in QUERIES:
        assert service.search(query, "tenant:a", log=False).hits
    probe_backend = _other_backends()
    assert len(probe_backend) == 1  # one thread, one connection, kept across searches
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ANY(%s)",
                       [list(probe_backend)])
    failures = 0
    for query in QUERIES:
        try:
            assert service.search(query, "tenant:a", log=False).hits
        except OperationalError:
            failures += 1
    assert failures <= 1  # the search that met the dead connection, at most
    assert service.search(QUERIES[0], "tenant:a", log=False).hits[0].title == "Pumpkin soup"
    assert len(_other_backends() - probe_backend) == 1
    service.close_probe_connections()
    assert _settled_backends() == set()
