"""Faults during ingest: a hanging embedder, a database restarted mid-run, a worker killed
mid-task. Each against real processes and a real PostgreSQL; each document must end up entirely
old or entirely new, and nothing is written twice."""

import time

import pytest

from ingest.pipeline import IngestPipeline
from kb.embedding.http import HttpEmbedder
from kb.models import Document, IngestRun, Source
from tests.cluster import Cluster
from tests.webserver import Route


def test_hanging_embedder_times_out_and_writes_nothing(web, namespace):
    def hang(handler):
        time.sleep(3)
        return Route(b"{}", 200, {"Content-Type": "application/json"})

    web.post_routes["/v1/embeddings"] = hang
    source = Source.objects.create(
        namespace=namespace, name="t", kind="text", text="# A\n\nSome body text."
    )
    embedder = HttpEmbedder(
        web.url("/v1/embeddings"), model="m", dimension=384, timeout=0.5, retries=0
    )
    started = time.monotonic()
    run = IngestPipeline(IngestRun.objects.create(source=source), embedder=embedder).execute()
    assert time.monotonic() - started < 3  # the timeout, not the hang, ended it
    assert run.status == "failed"
    assert run.items.get().error_code == "INGEST_EMBEDDER_FAILED"
    assert not Document.objects.filter(source=source).exists()


def _site(web, pages: int, version: str, delay: float = 0.0):
    urls = "".join(f"<url><loc>{web.url(f'/p{i}')}</loc></url>" for i in range(pages))
    web.routes["/sitemap.xml"] = Route(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'.encode(),
        200,
        {"Content-Type": "application/xml"},
    )
    for i in range(pages):
        html = (
            f"<title>Page {i}</title><h1>Page {i}</h1><p>Page {i} text, {version}. "
            f"Unique word zq{i}{version.replace(' ', '')}.</p>"
        ).encode()

        def page(handler, html=html):
            time.sleep(delay)
            return Route(html)

        web.routes[f"/p{i}"] = page


def _cluster(tcp_postgres, **env) -> Cluster:
    cluster = Cluster(tcp_postgres.url, **env)
    migrated = cluster.manage("migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    return cluster


def _create_source(cluster: Cluster, location: str, name: str = "site") -> int:
    return int(
        cluster.shell(
            "from kb.models import Namespace, Source; "
            "ns, _ = Namespace.objects.get_or_create(slug='ops', defaults={'is_public': True}); "
            f"print(Source.objects.create(namespace=ns, name={name!r}, kind='sitemap', "
            f"location={location!r}).pk)"
        )
    )


def _documents(cluster: Cluster, source_id: int) -> dict[str, tuple[str, list[str]]]:
    rows = cluster.sql(
        "SELECT d.ref, d.content, array_agg(c.text ORDER BY c.position) FROM kb_document d "
        "LEFT JOIN kb_chunk c ON c.document_id = d.id WHERE d.source_id = %s GROUP BY d.id",
        [source_id],
    )
    return {ref: (content, [t for t in texts if t is not None]) for ref, content, texts in rows}


@pytest.mark.slow
def test_database_restarted_mid_ingest_fails_cleanly_then_a_retry_completes(
    web, tcp_postgres, tmp_path
):
    cluster = _cluster(tcp_postgres)
    _site(web, 12, "version one")
    source_id = _create_source(cluster, web.url("/sitemap.xml"))
    first = cluster.manage("kb_ingest", str(source_id), "--sync")
    assert first.returncode == 0, first.stderr[-3000:]

    _site(web, 12, "version two", delay=0.4)  # every page changed, and slow to fetch
    ingest = cluster.start("kb_ingest", str(source_id), "--sync", log=tmp_path / "ingest.log")
    deadline = time.monotonic() + 120
    while sum(web.hits[f"/p{i}"] for i in range(12)) < 12 + 6:  # half of the second run fetched
        assert time.monotonic() < deadline and ingest.poll() is None, (
            tmp_path / "ingest.log"
        ).read_text()
        time.sleep(0.05)
    tcp_postgres.restart()
    assert ingest.wait(timeout=120) != 0, (tmp_path / "ingest.log").read_text()[-3000:]

    status, error = cluster.sql(
        "SELECT status, error FROM kb_ingestrun WHERE source_id = %s ORDER BY id DESC LIMIT 1",
        [source_id],
    )[0]
    assert status == "failed" and error.startswith("KB_DB_UNAVAILABLE"), (status, error)
    documents = _documents(cluster, source_id)
    assert len(documents) == 12
    for ref, (content, chunks) in documents.items():
        version = "version two" if "version two" in content else "version one"
        assert chunks and all(version in text for text in chunks), (
            ref
        )  # entirely old or entirely new

    retry = cluster.manage("kb_ingest", str(source_id), "--sync")
    assert retry.returncode == 0, retry.stderr[-3000:]
    assert all("version two" in content for content, _ in _documents(cluster, source_id).values())


@pytest.mark.slow
def test_worker_killed_mid_task_is_retried_and_writes_nothing_twice(web, tcp_postgres, tmp_path):
    cluster = _cluster(tcp_postgres, KB_TASK_TIMEOUT="40", KB_TASK_RETRY="45")
    _site(web, 12, "version one", delay=0.6)
    source_id = _create_source(cluster, web.url("/sitemap.xml"))
    run_id = int(
        cluster.shell(
            "from ingest.service import start_ingest; from kb.models import Source; "
            f"print(start_ingest(Source.objects.get(pk={source_id})).pk)"
        )
    )
    first_worker = cluster.start("qcluster", log=tmp_path / "worker-1.log")
    # a slow source flushes its first documents after EMBED_BATCH_MAX_WAIT_S; kill the worker then
    cluster.wait_for(
        "SELECT count(*) FROM kb_chunk c JOIN kb_document d ON d.id = c.document_id "
        "WHERE d.source_id = %s",
        lambda rows: rows[0][0] >= 1,
        params=[source_id],
    )
    cluster.kill(first_worker)
    assert cluster.sql("SELECT status FROM kb_ingestrun WHERE id = %s", [run_id])[0][0] == "running"
    before = dict(
        cluster.sql(
            "SELECT c.id, d.ref FROM kb_chunk c JOIN kb_document d ON d.id = c.document_id "
            "WHERE d.source_id = %s",
            [source_id],
        )
    )

    cluster.start(
        "qcluster", log=tmp_path / "worker-2.log"
    )  # picks the task up once its lease expires
    try:
        cluster.wait_for(
            "SELECT status FROM kb_ingestrun WHERE id = %s",
            lambda rows: rows[0][0] != "running",
            timeout=150,
            params=[run_id],
        )
    finally:
        cluster.stop_all()
    assert (
        cluster.sql("SELECT status FROM kb_ingestrun WHERE id = %s", [run_id])[0][0] == "succeeded"
    )
    refs = [
        ref for (ref,) in cluster.sql("SELECT ref FROM kb_ingestitem WHERE run_id = %s", [run_id])
    ]
    assert sorted(refs) == sorted(set(refs)) and len(refs) == 12  # each item reported once
    documents = _documents(cluster, source_id)
    assert len(documents) == 12 and all(chunks for _, chunks in documents.values())
    after = dict(
        cluster.sql(
            "SELECT c.id, d.ref FROM kb_chunk c JOIN kb_document d ON d.id = c.document_id "
            "WHERE d.source_id = %s",
            [source_id],
        )
    )
    assert (
        before and before.items() <= after.items()
    )  # chunks written before the kill were not rewritten


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "debug", [False, True]
)  # scripts/run runs with DEBUG on, where ninja answers for itself
def test_a_request_that_loses_the_database_answers_503_and_the_next_one_reconnects(
    client, settings, debug
):
    """The server ends the connection under a request (as when PostgreSQL stops or restarts): the
    API and the pages say KB_DB_UNAVAILABLE with a Retry-After, not an internal error."""
    settings.DEBUG = debug
    import psycopg
    from django.db import connection

    from kb.models import Namespace
    from tests.pgserver import current_database_url

    Namespace.objects.create(slug="harbour", title="Harbour", is_public=True)

    def lose_the_connection():
        connection.ensure_connection()
        with psycopg.connect(current_database_url(), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid]
            )

    lose_the_connection()
    response = client.get("/api/search", {"q": "tide tables", "namespace": "harbour"})
    assert response.status_code == 503 and response.json()["code"] == "KB_DB_UNAVAILABLE"
    assert response["Retry-After"] == "5"
    lose_the_connection()
    page = client.get("/", {"q": "tide tables", "namespace": "harbour"})
    assert page.status_code == 503 and page.content.decode().startswith("KB_DB_UNAVAILABLE")
    assert client.get("/api/namespaces").status_code == 200  # connected afresh


@pytest.mark.django_db(transaction=True)
def test_a_database_that_does_not_answer_is_given_up_on_and_the_request_answers_503(client):
    """The database's address accepts the connection and never answers (a hung server, a host
    that drops packets): the request gives up after the connect timeout and says
    KB_DB_UNAVAILABLE, instead of holding the web server's worker until it is killed."""
    import socket

    from django.conf import settings
    from django.db import connection

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the handshake; nothing ever answers
    kept = {key: connection.settings_dict[key] for key in ("HOST", "PORT")}
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=str(silent.getsockname()[1]))
    try:
        started = time.monotonic()
        response = client.get("/api/namespaces")
        waited = time.monotonic() - started
    finally:
        connection.close()
        connection.settings_dict.update(kept)
        silent.close()
    assert response.status_code == 503 and response.json()["code"] == "KB_DB_UNAVAILABLE"
    assert settings.DATABASE_CONNECT_TIMEOUT_S <= waited < settings.DATABASE_CONNECT_TIMEOUT_S + 5
    assert client.get("/api/namespaces").status_code == 200  # the real server, connected afresh


def test_only_a_lost_connection_is_the_database_away_not_a_deadlock():
    import psycopg
    from django.db import InterfaceError, OperationalError

    from kb.database import database_away

    def wrapped(cause):
        error = OperationalError(str(cause))
        error.__cause__ = cause
        return error

    assert database_away(wrapped(psycopg.errors.AdminShutdown("terminating connection")))  # 57P01
    assert database_away(
        wrapped(psycopg.OperationalError("connection refused"))
    )  # no SQLSTATE: client side
    assert database_away(InterfaceError("connection already closed"))
    assert not database_away(wrapped(psycopg.errors.DeadlockDetected("deadlock detected")))  # 40P01
    assert not database_away(wrapped(psycopg.errors.LockNotAvailable("lock timeout")))  # 55P03
    assert not database_away(ValueError("not a database error"))
