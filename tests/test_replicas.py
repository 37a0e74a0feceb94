"""Read replicas, against a real streaming replica of the test server (pg_basebackup, hot standby):
searches, documents and pages are answered by the replica; a replica that lags beyond the bound
or stops mid-load is left for the primary, and no caller sees an error."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from config.embedded_auth import credentials
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.replicas import forget_replica_state
from retrieval.service import search
from tests.corpus import CORPUS, ingest
from tests.pgserver import StreamingReplica

ALIAS = "replica_1"
NAMESPACE = "tenant:replica"


def wait_for(condition, timeout: float = 60.0, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(step)
    raise AssertionError("timed out waiting for the replica")


pytestmark = pytest.mark.django_db(transaction=True, databases=["default", ALIAS])


@pytest.fixture(scope="module")
def replica_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """A streaming replica of the test server, configured as `replica_1` (a mirror of `default`
    to Django's test cases: its rows come from the primary, it is never flushed itself)."""
    with django_db_blocker.unblock():
        primary = connections["default"]
        primary.ensure_connection()
        superuser = credentials(Path(primary.settings_dict["EMBEDDED_PGDATA"])).superuser_password
        server = StreamingReplica(
            primary.settings_dict["HOST"],
            int(primary.settings_dict["PORT"]),
            tmp_path_factory.mktemp("replica") / "data",
            superuser,
        )
        server.start()
        connections.settings[ALIAS] = server.django_settings(primary.settings_dict)
    try:
        yield server
    finally:
        connections[ALIAS].close()
        del connections[ALIAS]
        del connections.settings[ALIAS]
        forget_replica_state()
        server.stop("immediate")


@pytest.fixture
def replica(replica_server, settings):
    """The corpus committed on the primary and visible on the replica; reads from a replica up to
    an hour behind (the tests lower the bound where they need to)."""
    ingest(NAMESPACE, CORPUS)
    dbname = connections["default"].settings_dict["NAME"]
    wait_for(
        lambda: (
            replica_server.execute(
                f"SELECT count(*) FROM kb_document d JOIN kb_namespace n "
                f"ON n.id = d.namespace_id WHERE n.slug = '{NAMESPACE}'",
                dbname,
            )[0][0]
            == len(CORPUS)
        )
    )
    settings.KB_REPLICA_MAX_LAG_SECONDS = 3600
    kb_settings.cache_clear()
    forget_replica_state()
    yield replica_server
    forget_replica_state()
    kb_settings.cache_clear()


def test_reads_go_to_the_replica_and_a_lagging_replica_is_left_for_the_primary(
    replica, client, settings
):
    dbname = connections["default"].settings_dict["NAME"]
    first = search("how do I make pumpkin soup", NAMESPACE)
    assert first.database == ALIAS and first.hits[0].document_ref == "pumpkin"
    from config.health import health_report

    [shown] = health_report().replicas
    assert shown["alias"] == ALIAS and shown["ok"] and 0 <= shown["lag_seconds"] < 3600
    from kb.replicas import on_replica, read_alias

    # a read inside a read (the search inside the page) stays on the outer read's database
    assert on_replica(lambda: (read_alias(), on_replica(read_alias))) == (ALIAS, ALIAS)
    assert replica.execute("SELECT pg_is_in_recovery()")[0][0] is True

    # with replay paused, what the primary gains is invisible to the replica: reads prove where they
    # go
    replica.execute("SELECT pg_wal_replay_pause()", dbname)
    ingest(
        NAMESPACE,
        {
            "marmalade": (
                "Seville marmalade",
                "Boil bitter Seville oranges with sugar for marmalade.",
            )
        },
        source_name="late",
    )
    stale = search("bitter orange marmalade", NAMESPACE)
    assert stale.database == ALIAS and "marmalade" not in [h.document_ref for h in stale.hits]
    client.force_login(get_user_model().objects.create_superuser("reader", password="pw-123456789"))
    listing = client.get("/api/documents", {"namespace": NAMESPACE}).json()
    assert listing["count"] == len(CORPUS)  # the replica's count, one document behind
    page = client.get(
        "/", {"q": "bitter orange marmalade", "namespace": NAMESPACE}
    ).content.decode()
    assert "Seville marmalade" not in page

    # past the lag bound the primary answers, and sees the new document
    settings.KB_REPLICA_MAX_LAG_SECONDS = 0.5
    kb_settings.cache_clear()
    forget_replica_state()
    time.sleep(1.5)
    fresh = search("bitter orange marmalade", NAMESPACE)
    assert fresh.database == "default" and fresh.hits[0].document_ref == "marmalade"
    assert client.get("/api/documents", {"namespace": NAMESPACE}).json()["count"] == len(CORPUS) + 1

    # replay resumed: the replica catches up and answers again
    replica.execute("SELECT pg_wal_replay_resume()", dbname)
    wait_for(
        lambda: replica.execute("SELECT count(*) FROM kb_document WHERE ref = 'marmalade'", dbname)[
            0
        ][0]
    )

    def replica_answers() -> bool:  # its lag measured afresh: 0 once it replayed all it received
        forget_replica_state()
        return search("bitter orange marmalade", NAMESPACE, log=False).database == ALIAS

    wait_for(replica_answers)  # the primary's later writes may still be replaying for a moment
    caught_up = search("bitter orange marmalade", NAMESPACE)
    assert caught_up.database == ALIAS and caught_up.hits[0].document_ref == "marmalade"


def test_a_replica_stopped_mid_load_falls_back_to_the_primary_without_errors(replica):
    queries = [
        "pumpkin soup recipe",
        "qwen 3.8 release",
        "ERR_CONNECTION_REFUSED",
        "grow pumpkins in the garden",
    ]
    vectors = {q: get_embedder().embed_query(q) for q in queries}
    answered: list[str] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def load():
        try:
            while not stop.is_set():
                query = queries[len(answered) % len(queries)]
                result = search(query, NAMESPACE, query_vector=vectors[query], log=False)
                assert result.hits, query
                answered.append(result.database)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    worker = threading.Thread(target=load)
    worker.start()
    try:
        wait_for(lambda: answered.count(ALIAS) >= 10 or failures)
        replica.stop("immediate")  # a crash, with searches in flight
        served = len(answered)
        wait_for(lambda: len(answered) >= served + 20 or failures)
    finally:
        stop.set()
        worker.join(timeout=60)
    assert failures == []
    assert answered[:10] == [ALIAS] * 10
    from config.health import health_report

    report = health_report()
    assert report.replicas == [
        {"alias": ALIAS, "ok": False, "error": "unreachable: reads go to the primary"}
    ]
    assert report.status == "degraded" or not report.worker.get(
        "ok"
    )  # search goes on, from the primary
    assert set(answered[served + 1 :]) == {"default"}  # every search after the crash: the primary
