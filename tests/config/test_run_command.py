"""`manage.py kb_run`: the product's one-command start, and the demo corpus it ingests."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from config.bootstrap import ensure_admin_user
from config.demo import ensure_demo_sources
from kb.models import Chunk, Document, IngestRun, Source
from tests.pgserver import REPO, current_database_url, free_port


def _start_kb_run(port: int, log_path, **env: str):
    log = open(log_path, "w")
    return subprocess.Popen(
        [sys.executable, "manage.py", "kb_run", "--port", str(port), "--no-demo"],
        cwd=REPO,
        env={**os.environ, "DATABASE_URL": current_database_url(), **env},
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ), log


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


def _stop(proc, log, log_path) -> str:
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    proc.wait(timeout=60)
    log.close()
    return log_path.read_text()


def test_kb_run_serves_app_and_worker_then_stops_on_ctrl_c(transactional_db, tmp_path):
    port = free_port()
    log_path = tmp_path / "kb_run.log"
    proc, log = _start_kb_run(port, log_path)
    health = {}

    def ready() -> bool:
        nonlocal health
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                health = json.load(response)
        except OSError:
            return False
        return health["worker"]["ok"] and "Knowledge base running at" in log_path.read_text()

    try:
        assert _wait_for(ready, 120), (health, log_path.read_text())
        assert health["status"] == "ok", health
    finally:
        output = _stop(proc, log, log_path)
    assert proc.returncode == 0, output
    assert re.search(r"admin login\s+admin / \S{12,}\s+\(shown once", output)
    assert "stopping web server and worker" in output
    # the web server loads the model for queries before the banner, so the first search is warm
    assert output.index("KB_WARM_MODEL=query: model ready") < output.index(
        "Knowledge base running at"
    )
    assert "KB_WARM_MODEL=documents: model ready" in output  # the worker, for ingest
    children = subprocess.run(
        ["pgrep", "-f", f"runserver --noreload 127.0.0.1:{port}"], capture_output=True
    )
    assert children.returncode == 1, "the web server outlived Ctrl-C"


def test_a_worker_that_dies_is_named_and_started_again(transactional_db, tmp_path):
    """kill -9 of the worker under kb_run, as an out-of-memory kill would: kb_run says which
    process ended and how, starts it again (its orphaned workers go with it), and the product
    keeps serving, with a worker, until Ctrl-C stops everything."""
    import psutil

    port = free_port()
    log_path = tmp_path / "kb_run.log"
    proc, log = _start_kb_run(port, log_path)

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                return (
                    json.load(response)["worker"]["ok"]
                    and "Knowledge base running at" in log_path.read_text()
                )
        except OSError:
            return False

    def cluster() -> (
        psutil.Process
    ):  # the process kb_run started: its own group's leader (orphans are kb_run's too)
        [found] = [
            c
            for c in psutil.Process(proc.pid).children()
            if "qcluster" in " ".join(c.cmdline()) and os.getpgid(c.pid) == c.pid
        ]
        return found

    try:
        assert _wait_for(healthy, 120), log_path.read_text()
        dead = cluster()
        orphans = dead.children(recursive=True)
        dead.kill()
        assert _wait_for(
            lambda: "started the worker (qcluster) again" in log_path.read_text(), 60
        ), log_path.read_text()
        assert "the worker (qcluster) exited (killed by SIGKILL)" in log_path.read_text()
        # kb_run is their parent now, as PID 1 would be in a container, and waits for them: no
        # zombie is left
        assert _wait_for(lambda: not any(psutil.pid_exists(p.pid) for p in orphans), 10), [
            (p.pid, p.status()) for p in orphans if psutil.pid_exists(p.pid)
        ]
        assert cluster().pid != dead.pid
        assert _wait_for(healthy, 120), log_path.read_text()  # the new cluster's heartbeat
    finally:
        output = _stop(proc, log, log_path)
    assert proc.returncode == 0, output


def test_a_worker_that_keeps_dying_stops_the_product_with_the_reason(transactional_db, tmp_path):
    """Five exits of one child within two minutes: kb_run stops restarting it, stops the rest
    (the web server too: a product without its worker never finishes an ingest) and exits 1,
    saying which process and why, instead of restarting it forever."""
    import psutil

    from config.management.commands.kb_run import RESTART_WINDOW_S, RESTARTS_ALLOWED

    port = free_port()
    log_path = tmp_path / "kb_run.log"
    proc, log = _start_kb_run(port, log_path)

    def cluster() -> psutil.Process | None:
        # the process kb_run started: its own group's leader (the cluster's orphaned forks are
        # kb_run's too)
        try:
            found = [
                c
                for c in psutil.Process(proc.pid).children()
                if "qcluster" in " ".join(c.cmdline()) and os.getpgid(c.pid) == c.pid
            ]
        except (psutil.Error, ProcessLookupError):
            return None
        return found[0] if found else None

    killed: list[int] = []
    try:
        assert _wait_for(lambda: "Knowledge base running at" in log_path.read_text(), 120), (
            log_path.read_text()
        )
        while proc.poll() is None and len(killed) < RESTARTS_ALLOWED:
            assert _wait_for(lambda: (c := cluster()) is not None and c.pid not in killed, 60), (
                log_path.read_text()
            )
            worker = cluster()
            killed.append(worker.pid)
            worker.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            _stop(proc, log, log_path)
    log.close()
    output = log_path.read_text()
    assert proc.returncode == 1, output
    assert len(killed) == RESTARTS_ALLOWED
    assert output.count("started the worker (qcluster) again") == RESTARTS_ALLOWED - 1
    assert (
        f"the worker (qcluster) exited {RESTARTS_ALLOWED} times within {RESTART_WINDOW_S} s; "
        "stopping" in output
    )
    children = subprocess.run(
        ["pgrep", "-f", f"runserver --noreload 127.0.0.1:{port}"], capture_output=True
    )
    assert children.returncode == 1, "the web server outlived the stop"


SLOW_PAGES = 400


def _slow_site(web) -> None:
    """A site whose crawl takes minutes: a home page linking to pages that answer in a second
    each."""
    from tests.webserver import Route

    def slow(handler):
        time.sleep(1)
        return Route(
            f"<main><h1>{handler.path}</h1><p>A page of the slow site.</p></main>".encode()
        )

    links = "".join(f"<a href='/p{i}.html'>page {i}</a> " for i in range(SLOW_PAGES))
    web.page("/", f"<main><h1>Home</h1><p>Every page below is slow.</p>{links}</main>")
    for i in range(SLOW_PAGES):
        web.routes[f"/p{i}.html"] = slow


@pytest.mark.timeout(720)  # two starts of the product, each loading the model
def test_a_run_queued_behind_a_long_one_finishes_after_a_restart(
    transactional_db, namespace, web, tmp_path
):
    """Issue 57, B2, as the operator met it: a run waits behind a long crawl, the product is stopped
    with Ctrl-C and started again. The stopped worker had claimed the waiting run's task (django-q2
    locks it for KB_TASK_RETRY, an hour); the new kb_run hands it out again, so it finishes within
    minutes, while the crawl, whose worker went down with the product, fails as abandoned."""
    from django.utils import timezone
    from django_q.models import OrmQ

    from ingest.service import start_ingest

    def queue_entry(task_id: str) -> OrmQ | None:  # django-q2's row of the task
        return next((row for row in OrmQ.objects.all() if row.task_id() == task_id), None)

    _slow_site(web)
    crawl = Source.objects.create(
        namespace=namespace,
        name="slow site",
        kind="crawl",
        location=web.url("/"),
        options={"use_llms_txt": False, "respect_robots": False, "max_depth": 1},
    )
    notes = Source.objects.create(
        namespace=namespace,
        name="notes",
        kind="text",
        text="# Notes\n\nQueued behind the crawl, finished after the restart.",
    )
    port, allow = free_port(), {"KB_FETCH_ALLOWED_PRIVATE": "127.0.0.0/8:*"}
    first_log, second_log = tmp_path / "kb_run-1.log", tmp_path / "kb_run-2.log"
    proc, log = _start_kb_run(port, first_log, **allow)
    try:
        assert (
            _wait_for(
                lambda: (
                    "Knowledge base running at" in first_log.read_text() or proc.poll() is not None
                ),
                180,
            )
            and proc.poll() is None
        ), first_log.read_text()
        long, queued = start_ingest(crawl), start_ingest(notes)

        def waiting_claimed() -> (
            bool
        ):  # the crawl runs, and the worker's cluster has taken the next task
            entry = queue_entry(queued.task_id)
            return (
                IngestRun.objects.get(pk=long.pk).items_done >= 3
                and entry is not None
                and entry.lock > timezone.now()
            )

        assert _wait_for(waiting_claimed, 180), (
            IngestRun.objects.get(pk=long.pk).status,
            first_log.read_text(),
        )
    finally:
        output = _stop(proc, log, first_log)
    assert proc.returncode == 0, output
    assert IngestRun.objects.get(pk=queued.pk).status == "queued"
    assert queue_entry(queued.task_id).lock > timezone.now()  # still claimed by the stopped worker

    started = time.monotonic()
    proc, log = _start_kb_run(port, second_log, **allow)
    try:
        assert _wait_for(
            lambda: IngestRun.objects.get(pk=queued.pk).status not in ("queued", "running"), 180
        ), (IngestRun.objects.get(pk=queued.pk).status, second_log.read_text())
        finished_after = time.monotonic() - started
    finally:
        output = _stop(proc, log, second_log)
    queued.refresh_from_db(), long.refresh_from_db()
    assert queued.status == "succeeded", (queued.error, output)
    assert long.status == "failed" and long.error.startswith("INGEST_RUN_ABANDONED"), long.error
    assert "queued tasks of the stopped worker handed out again" in output
    assert long.attempts == 1  # its task, handed out again too, left the failed run alone
    print(f"the queued run finished {finished_after:.0f} s after kb_run started again")


ORPHAN = """
import os, subprocess, sys, time
import django, psutil
django.setup()
from config.management.commands.kb_run import _become_subreaper, _reap_orphans
assert _become_subreaper()
if os.fork() == 0:  # a child leaving an orphan behind, as a killed cluster leaves its workers
    if os.fork() == 0:
        time.sleep(0.5)
        os._exit(0)
    os._exit(0)
os.wait()  # the child itself
started = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])  # a child kb_run started
time.sleep(2)  # by now the orphan is this process's, and both have exited
before = sorted(p.status() for p in psutil.Process().children())
_reap_orphans([started])
print(before, sorted(p.status() for p in psutil.Process().children()), started.returncode)
"""


def test_kb_run_inherits_its_childrens_orphans_and_waits_for_them():
    """kb_run adopts what its children leave behind, as PID 1 does when kb_run is a container's
    first process, and waits for each, so no zombie piles up however often a worker dies."""
    done = subprocess.run(
        [sys.executable, "-c", ORPHAN],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "DATABASE_URL": "postgresql://unused@127.0.0.1:9/unused",  # never opened
            "DJANGO_SETTINGS_MODULE": "config.settings",
        },
    )
    # the orphan and the started child were zombies; both are gone, and the started one's exit code
    # is kept
    assert done.stdout.split("\n")[-2] == "['zombie', 'zombie'] [] 3", done.stdout + done.stderr


def test_ctrl_c_while_the_model_loads_stops_everything_cleanly(transactional_db, tmp_path):
    port = free_port()
    log_path = tmp_path / "kb_run.log"
    proc, log = _start_kb_run(port, log_path)
    try:
        assert _wait_for(lambda: "loading the model" in log_path.read_text(), 120), (
            log_path.read_text()
        )
    finally:
        output = _stop(proc, log, log_path)
    assert proc.returncode == 0 and "Traceback" not in output, output
    assert "stopping web server and worker" in output and "Knowledge base running" not in output


@pytest.mark.django_db
def test_admin_password_is_shown_once_and_stored_hashed():
    first = ensure_admin_user("boss")
    again = ensure_admin_user("boss")
    assert first.password and again.password is None
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="boss")
    assert user.is_superuser and user.check_password(first.password)
    assert first.password not in user.password


@pytest.mark.django_db
def test_demo_sources_and_provider_load_and_rerun_costs_nothing(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    from kb.conf import kb_settings

    kb_settings.cache_clear()
    try:
        runs = IngestRun.objects.filter(pk__in=ensure_demo_sources(sync=True))
        assert runs.count() == len(list((REPO / "docs").glob("*.md"))) >= 3
        assert set(runs.values_list("status", flat=True)) == {"succeeded"}
        assert Document.objects.filter(namespace__slug="demo", title="Ingesting sources").exists()
        assert Chunk.objects.filter(namespace__slug="demo", anchor="incremental-runs").exists()
        assert ensure_demo_sources(sync=True) == []  # a restart with nothing changed queues nothing
        first = Source.objects.filter(namespace__slug="demo").order_by("name").first()
        Document.objects.filter(source=first).update(embedding_model="st:another-model")
        again = IngestRun.objects.filter(pk__in=ensure_demo_sources(sync=True))
        assert [run.source_id for run in again] == [first.pk] and again.get().status == "succeeded"
        assert again.get().items_changed == 1  # re-embedded with the configured model
        # the example capability provider loads over these sources and answers with verified hits
        from capabilities import service
        from config.demo import ensure_demo_providers
        from kb.auth import Principal

        assert ensure_demo_providers()[0]["capabilities"] == 3
        anonymous = Principal("anonymous")  # the demo namespace is public
        found = service.retrieve_capabilities(anonymous, "how do I add a sitemap?", ["kb"])
        assert found.candidates[0]["id"] == "kb/ingest-sources"
        knowledge = service.retrieve_knowledge(anonymous, ["kb/ingest-sources"], "sitemap lastmod")
        assert knowledge.hits and knowledge.hits[0]["title"] == "Ingesting sources"
    finally:
        kb_settings.cache_clear()
