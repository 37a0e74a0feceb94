"""No run stays "running": non-ASCII URLs and validators, a server that drips its headers, a
loader that raises, and a worker that died (the watchdog)."""

from __future__ import annotations

import socket
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from ingest.errors import FetchFailed
from ingest.fetch import Fetcher, FetchPolicy, iri_to_uri
from ingest.pipeline import IngestPipeline
from ingest.service import start_ingest
from ingest.ssrf import parse_allow_rules
from ingest.watchdog import fail_stuck_runs
from kb.models import Document, IngestRun, Source
from tests.webserver import Route

LOOPBACK = parse_allow_rules(["127.0.0.0/8:*"])
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "iri, uri",
    [
        ("http://example.com/café?q=é", "http://example.com/caf%C3%A9?q=%C3%A9"),
        ("https://bücher.example/a b", "https://xn--bcher-kva.example/a%20b"),
        ("http://example.com/already%20escaped", "http://example.com/already%20escaped"),
    ],
)
def test_iris_become_uris_before_the_client_sees_them(iri, uri):
    assert iri_to_uri(iri) == uri


def test_a_crawl_with_a_non_ascii_link_and_validator_finishes(web, namespace, allow_loopback):
    web.page(
        "/", '<main><h1>Start</h1><p><a href="/café">café</a> <a href="/plain">plain</a></p></main>'
    )
    web.routes["/caf%C3%A9"] = Route(
        "<main><h1>Café</h1><p>Crème brûlée.</p></main>".encode(),
        200,
        {"Content-Type": "text/html; charset=utf-8"},
    )
    web.routes["/plain"] = Route(
        b"<main><h1>Plain</h1><p>Text.</p></main>",
        200,
        {"Content-Type": "text/html", "ETag": '"\xe9t\xe9"'},
    )
    source = Source.objects.create(
        namespace=namespace,
        name="crawl",
        kind="crawl",
        location=web.url("/"),
        options={"use_llms_txt": False, "respect_robots": False},
    )
    first = start_ingest(source, sync=True)
    assert first.status == "succeeded", list(
        first.items.values_list("ref", "error_code", "error_message")
    )
    assert Document.objects.filter(source=source, ref=web.url("/caf%C3%A9")).exists()
    assert (
        Document.objects.get(source=source, ref=web.url("/plain")).etag == ""
    )  # not ASCII: not kept
    second = start_ingest(source, sync=True)  # the refresh must not break on the stored validator
    assert second.status == "succeeded"


def test_a_server_dripping_its_headers_hits_the_whole_fetch_deadline():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def drip():
        connection, _ = listener.accept()
        try:
            connection.recv(4096)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Slow: " + b"a" * 100:
                connection.sendall(bytes([byte]))
                time.sleep(0.2)  # each byte well within the per-read timeout
        except OSError:
            pass
        finally:
            connection.close()

    threading.Thread(target=drip, daemon=True).start()
    fetcher = Fetcher(FetchPolicy(allowed=LOOPBACK, timeout=1.0, total_timeout=1.5, retries=0))
    started = time.monotonic()
    with pytest.raises(FetchFailed) as caught:
        fetcher.fetch(f"http://127.0.0.1:{port}/")
    assert caught.value.code == "INGEST_FETCH_TIMEOUT"
    assert time.monotonic() - started < 4
    listener.close()


def test_a_loader_that_raises_ends_the_run_as_failed(namespace):
    source = Source.objects.create(namespace=namespace, name="t", kind="text", text="# T\n\nx")
    run = IngestRun.objects.create(source=source)

    def items():
        raise TypeError("a client bug")
        yield  # pragma: no cover

    run = IngestPipeline(run).execute(items())
    assert run.status == "failed" and run.error.startswith("INGEST_INTERNAL_ERROR: TypeError")


def test_watchdog_fails_runs_whose_worker_died_and_leaves_live_ones(namespace, settings):
    source = Source.objects.create(namespace=namespace, name="t", kind="text", text="# T\n\nx")
    now = timezone.now()
    retry = settings.Q_CLUSTER["retry"]
    dead = IngestRun.objects.create(
        source=source,
        status="running",
        started_at=now - timedelta(seconds=retry + 130),
        heartbeat_at=now - timedelta(seconds=retry + 125),
    )
    # taken up again by django-q2's redelivery: the pipeline restarted it, so it beats again
    redelivered = IngestRun.objects.create(
        source=source,
        status="running",
        started_at=now - timedelta(seconds=30),
        heartbeat_at=now - timedelta(seconds=5),
        attempts=2,
    )
    overdue = IngestRun.objects.create(
        source=source,
        status="running",
        started_at=now - timedelta(seconds=settings.Q_CLUSTER["timeout"] + 300),
        heartbeat_at=now,
    )
    assert sorted(fail_stuck_runs(now)) == sorted([dead.pk, overdue.pk])
    dead.refresh_from_db(), overdue.refresh_from_db(), redelivered.refresh_from_db()
    assert dead.status == "failed" and dead.error.startswith("INGEST_RUN_ABANDONED")
    assert overdue.status == "failed" and overdue.error.startswith("INGEST_RUN_TIMEOUT")
    assert redelivered.status == "running"
    from ingest.service import execute_run

    assert execute_run(dead.pk).status == "failed"  # a late redelivery does not run it again
