"""The deployment layout, started as docs/deployment.md says: gunicorn (with and without
`--preload`) and a separate `manage.py qcluster`, each with `KB_WARM_MODEL` as documented,
against one PostgreSQL. Driven from outside: an upload through the API is ingested by the
worker and found by a search; a worker stopped with SIGSTOP mid-run is noticed by /healthz and
the run page, its run is failed, and a fresh worker takes the next run."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.parse
from dataclasses import dataclass

import pytest

from kb.auth import issue_token
from kb.models import ApiToken, IngestRun, Namespace, QueryLog, Source
from tests.e2e.processes import (
    Http,
    Process,
    free_port,
    multipart,
    product_env,
    record_timing,
    wait_for,
)
from tests.pgserver import current_database_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
STALL_SECONDS = 8  # KB_RUN_STALL_SECONDS for these processes: the test waits seconds, not minutes


@dataclass
class Deployment:
    env: dict
    worker: Process
    web: dict  # "plain" and "preload": (Process, Http)


def _web(tmp_path, env, preload: bool) -> tuple[Process, Http]:
    port = free_port()
    workers = "2" if preload else "1"  # --preload: two children forked from the warmed parent
    args = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--workers",
        workers,
        "--bind",
        f"127.0.0.1:{port}",
        "--timeout",
        "120",
    ] + (["--preload"] if preload else [])
    web = Process(
        args, {**env, "KB_WARM_MODEL": "query"}, tmp_path / f"gunicorn-{workers}.log"
    ).start()
    return web, Http(f"http://127.0.0.1:{port}")


@pytest.fixture(scope="module")
def deployment(django_db_setup, django_db_blocker, tmp_path_factory):
    """gunicorn with and without --preload and one qcluster, as docs/deployment.md starts them."""
    tmp_path = tmp_path_factory.mktemp("deployment")
    with django_db_blocker.unblock():
        env = product_env(
            DATABASE_URL=current_database_url(),
            KB_FETCH_ALLOWED_PRIVATE="127.0.0.0/8:*",
            KB_RUN_STALL_SECONDS=str(STALL_SECONDS),
            KB_WATCHDOG_SECONDS="2",
        )
    worker = Process(
        [sys.executable, "manage.py", "qcluster"],
        {**env, "KB_WARM_MODEL": "documents"},
        tmp_path / "qcluster.log",
    ).start()
    web = {
        "plain": _web(tmp_path, env, preload=False),
        "preload": _web(tmp_path, env, preload=True),
    }
    try:
        for process, http in web.values():
            wait_for(
                lambda http=http, process=process: http.healthy() or not process.alive(),
                240,
                "gunicorn to answer",
            )
            assert process.alive(), process.output()[-4000:]
        yield Deployment(env, worker, web)
    finally:
        worker.stop()
        for process, _ in web.values():
            process.stop()
    outputs = worker.output() + "".join(process.output() for process, _ in web.values())
    assert "forked after its parent" not in outputs  # every child embeds on all its cores


def _run(run_id: int) -> IngestRun:
    return IngestRun.objects.get(pk=run_id)


@pytest.mark.parametrize("layout", ["plain", "preload"], ids=["gunicorn", "gunicorn-preload"])
def test_upload_through_the_api_is_ingested_by_the_worker_and_found(
    transactional_db, deployment, layout
):
    namespace = Namespace.objects.create(slug="team:handbook", title="Handbook")
    source = Source.objects.create(namespace=namespace, name="handbook files", kind="file")
    _, token = issue_token("deploy test", namespaces=[namespace], scope=ApiToken.Scope.WRITE)
    auth = {"Authorization": f"Bearer {token}"}
    _, http = deployment.web[layout]
    text = (
        b"# Lighthouse rota\n\nThe lighthouse keeper rota rotates every fortnight; the keeper on "
        b"duty "
        b"logs the lamp hours and the fog signal tests in the harbour book.\n"
    )
    body, content_type = multipart("files", "rota.md", text, "text/markdown")
    started = time.monotonic()
    status, answer = http.post(
        f"/api/sources/{source.pk}/files", body, {**auth, "Content-Type": content_type}
    )
    assert status == 201, answer
    run_id = json.loads(answer)["run_id"]
    wait_for(
        lambda: _run(run_id).status in IngestRun.FINISHED,
        240,
        "the worker to finish the upload's run",
    )
    assert _run(run_id).status == "succeeded", _run(run_id).error
    record_timing(f"deployment_upload_ingest_seconds[{layout}]", time.monotonic() - started)
    for query in (
        "who logs the lamp hours",
        "fog signal tests",
    ):  # with --preload, either child answers
        status, found = http.json(
            "/api/search?" + urllib.parse.urlencode({"namespace": "team:handbook", "query": query}),
            auth,
        )
        assert status == 200 and found["results"], found
        assert found["results"][0]["title"] == "Lighthouse rota", found["results"]


def test_a_rate_limit_holds_across_gunicorn_workers(transactional_db, deployment):
    """Two gunicorn workers answer one token's burst at once: the counter they share in
    PostgreSQL lets exactly the limit through, where a count kept per process would let up to
    twice as many pass."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    namespace = Namespace.objects.create(slug="limits", title="Limits")
    limit, burst = 6, 16
    _, token = issue_token("limit test", namespaces=[namespace], rate_limit_per_minute=limit)
    _, http = deployment.web["preload"]  # two workers
    path = "/api/search?" + urllib.parse.urlencode({"namespace": "limits", "query": "lamp hours"})
    start = Barrier(burst)

    def call(_) -> int:
        start.wait()  # all at once: both workers are busy with this token's requests
        return Http(http.base).get(path, {"Authorization": f"Bearer {token}"})[0]

    with ThreadPoolExecutor(burst) as pool:
        codes = list(pool.map(call, range(burst)))
    assert sorted(codes) == [200] * limit + [429] * (burst - limit), codes
    # each search is logged by its worker's writer thread after the answer: wait for the rows, so
    # the
    # test database is not emptied while a worker still writes to it (a deadlock in the teardown)
    wait_for(
        lambda: QueryLog.objects.filter(namespace=namespace).count() == limit,
        30,
        "the workers' query log rows of the searches let through",
    )


def test_a_stopped_worker_is_noticed_its_run_failed_and_a_fresh_worker_takes_the_queue(
    transactional_db, deployment, web
):
    from ingest.service import start_ingest
    from tests.test_faults import _site

    namespace = Namespace.objects.create(slug="ops", title="Ops", is_public=True)
    _site(web, 40, "version one", delay=0.4)
    slow = Source.objects.create(
        namespace=namespace, name="slow site", kind="sitemap", location=web.url("/sitemap.xml")
    )
    _, http = deployment.web["plain"]
    run = start_ingest(slow)
    wait_for(
        lambda: _run(run.pk).status == "running" and _run(run.pk).items_done >= 2,
        240,
        "the slow run to make progress",
    )
    pid = int(_run(run.pk).worker.rpartition(":")[2])
    http.sign_in(*_staff())  # a superuser: /healthz names the stuck runs to no one else
    os.kill(pid, signal.SIGSTOP)  # alive, but stuck
    stopped_at = time.monotonic()
    try:

        def degraded():
            health = http.json("/healthz")[1]
            stalled = [
                entry
                for entry in health.get("runs", {}).get("stalled", [])
                if entry["run"] == run.pk
            ]
            return health if health["status"] == "degraded" and stalled else None

        health = wait_for(degraded, 120, "/healthz to say degraded")
        record_timing(
            f"sigstop_healthz_degraded_seconds[stall={STALL_SECONDS}s]",
            time.monotonic() - stopped_at,
        )
        assert "no progress since" in health["runs"]["stalled"][0]["reason"]

        status, progress = http.json(f"/admin/kb/ingestrun/{run.pk}/progress.json")
        assert status == 200 and progress["note"].startswith("No progress since"), progress

        wait_for(
            lambda: _run(run.pk).status == "failed", 120, "the watchdog to fail the stalled run"
        )
        record_timing(
            f"sigstop_run_failed_seconds[stall={STALL_SECONDS}s]", time.monotonic() - stopped_at
        )
        assert _run(run.pk).error.startswith("INGEST_RUN_ABANDONED"), _run(run.pk).error
        wait_for(lambda: not _alive(pid), 60, "the stuck worker to be stopped")
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    # a fresh worker, forked by django-q2 in its place, takes the next run and finishes it
    quick = Source.objects.create(
        namespace=namespace,
        name="note",
        kind="text",
        text="# Note\n\nThe harbour master keeps the tide tables.",
    )
    second = start_ingest(quick)
    wait_for(
        lambda: _run(second.pk).status in IngestRun.FINISHED,
        180,
        "a fresh worker to run the next ingest",
    )
    assert _run(second.pk).status == "succeeded", _run(second.pk).error
    assert _run(second.pk).worker != _run(run.pk).worker
    wait_for(lambda: http.json("/healthz")[1]["status"] == "ok", 60, "/healthz to be ok again")
    assert not IngestRun.objects.filter(status__in=["running", "queued"]).exists()


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _staff() -> tuple[str, str]:
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser(
        "operator", "op@example.com", "a-long-operator-password"
    )
    return "operator", "a-long-operator-password"
