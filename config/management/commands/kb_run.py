"""Run the whole product: migrate, admin login, demo source, web server and worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

from config.bootstrap import ensure_admin_user
from config.embedded_db import prune_dead_handles

SERVER_START_SECONDS = 180


def _wait_until_serving(url: str, server: subprocess.Popen, stopping) -> bool:
    """True once `url` answers (any HTTP status); False if the server exits, never answers, or
    `stopping()` turns true (Ctrl-C while the model loads)."""
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline and server.poll() is None and not stopping():
        try:
            urllib.request.urlopen(url, timeout=2)  # our own loopback server
            return True
        except urllib.error.HTTPError:
            return True  # it answered: 503 while the worker starts is still serving
        except (urllib.error.URLError, OSError):
            time.sleep(0.25)
    return False


class Command(BaseCommand):
    help = "Migrate, create the admin login and demo source, then serve the app with a worker."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="Skip the demo source.")

    def handle(self, *args, host: str, port: int, no_demo: bool, **options):
        self.stdout.write("==> migrating the database")
        call_command("migrate", interactive=False, verbosity=0)
        login = ensure_admin_user()
        from ingest.watchdog import fail_stuck_runs, release_orphaned_tasks

        stuck = fail_stuck_runs(
            service_restarted=True
        )  # runs whose worker went down with the product
        if stuck:
            self.stdout.write(
                f"==> failed {len(stuck)} stuck ingest runs (retry them from the admin)"
            )
        released = (
            release_orphaned_tasks()
        )  # what the stopped worker had taken from the queue, unstarted
        if released:
            self.stdout.write(
                f"==> {len(released)} queued tasks of the stopped worker handed out again"
            )
        if not no_demo:
            self._demo()
        connection.close()

        base = f"http://{host}:{port}"
        self._stopping = False

        def stop(signum, frame):  # Ctrl-C or SIGTERM, from here on: stop the children cleanly
            self._stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        if not _become_subreaper():
            self.stderr.write(
                "==> this system keeps orphaned processes from kb_run: init waits for them"
            )
        # each child loads the model for the path it uses before it serves (KB_WARM_MODEL), and the
        # banner waits for the web server, so the first search is as fast as the ones after it
        children = {
            "worker": Child("the worker (qcluster)", ["qcluster"], "documents"),
            "web": Child("the web server", ["runserver", "--noreload", f"{host}:{port}"], "query"),
        }
        for child in children.values():
            child.start()
        self.stdout.write("==> loading the model in the web server and the worker")
        if _wait_until_serving(f"{base}/healthz", children["web"].process, lambda: self._stopping):
            self._banner(base, login)
            self._supervise(list(children.values()))
        else:
            self._stop(list(children.values()))
            if not self._stopping:
                self.stderr.write("The web server did not start; see its output above.")
                raise SystemExit(1)

    def _banner(self, base: str, login) -> None:
        self.stdout.write(self.style.SUCCESS(f"\nKnowledge base running at {base}/"))
        self.stdout.write(f"  search page   {base}/")
        self.stdout.write(f"  admin         {base}/admin/")
        self.stdout.write(f"  API docs      {base}/api/docs")
        self.stdout.write(f"  health        {base}/healthz")
        if login.password:
            self.stdout.write(
                self.style.WARNING(
                    f"  admin login   {login.username} / {login.password}   "
                    "(shown once; not stored in plain text)"
                )
            )
        else:
            self.stdout.write(
                f"  admin login   {login.username} (password shown on first run; reset with "
                f"'.venv/bin/python manage.py changepassword {login.username}')"
            )
        self.stdout.write("Press Ctrl-C to stop.\n")

    def _demo(self) -> None:
        from config.demo import ensure_demo_providers, ensure_demo_sources

        run_ids = ensure_demo_sources()
        if run_ids:
            self.stdout.write(
                f"==> demo source queued for ingest (runs {', '.join(map(str, run_ids))})"
            )
        else:
            self.stdout.write("==> demo sources unchanged since their last run: nothing to ingest")
        for entry in ensure_demo_providers(queue=True):
            self.stdout.write(
                f"==> capability provider {entry['provider']!r}: {entry['capabilities']} "
                "capabilities, "
                f"revision {entry['revision'][:12]}"
            )

    def _supervise(self, children: list[Child]) -> None:
        """Until Ctrl-C: a child that exits is named with how it ended and started again, as a
        service manager would; one that keeps dying (RESTARTS_ALLOWED within RESTART_WINDOW_S)
        stops the product, with the reason."""
        while not self._stopping:
            time.sleep(0.3)
            own = [c.process for c in children]
            _reap_orphans(
                own
            )  # adopted orphans; a child of its own that exited is polled, its code kept
            for child in children:
                code = child.process.poll()
                if code is None or self._stopping:
                    continue
                self.stderr.write(f"==> {child.name} exited ({_how_it_ended(code)})")
                if not child.may_restart():
                    self.stderr.write(
                        f"==> {child.name} exited {RESTARTS_ALLOWED} times within "
                        f"{RESTART_WINDOW_S} s; stopping. Its output above says why."
                    )
                    self._stop(children)
                    raise SystemExit(1)
                _end_group(
                    child.process, own
                )  # what it left behind (django-q2's workers) goes with it
                child.start()
                own = [c.process for c in children]
                self.stderr.write(f"==> started {child.name} again")
        self._stop(children)

    def _stop(self, children: list[Child]) -> None:
        """SIGTERM to each child's whole process group, SIGKILL to what is left after 15 s, then the
        embedded database stops unless other processes still use it."""
        self.stdout.write("\n==> stopping web server and worker")
        for child in children:
            _signal_group(child.process, signal.SIGTERM)
        deadline = time.monotonic() + 15
        own = [child.process for child in children]
        for child in children:
            while _group_alive(child.process, own) and time.monotonic() < deadline:
                time.sleep(0.1)
            _end_group(child.process, own)
        pgdata = settings.DATABASES["default"].get("EMBEDDED_PGDATA")
        # every process of the groups is gone: their handles are dead, the last live one stops it
        if pgdata:
            others = prune_dead_handles(pgdata)
            self.stdout.write(
                f"==> the database keeps running: {others} other process(es) use it"
                if others
                else "==> stopping the database"
            )


RESTARTS_ALLOWED = 5
RESTART_WINDOW_S = 120


class Child:
    """A process `kb_run` starts and keeps running: `manage.py <args>` in its own process group
    (a terminal's Ctrl-C reaches kb_run only, which stops the groups with SIGTERM, quietly,
    even while they load the model), warming the model for `warm` before it serves."""

    def __init__(self, name: str, args: list[str], warm: str):
        self.name, self.args, self.warm = name, args, warm
        self.process: subprocess.Popen | None = None
        self.exits: list[float] = []

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", *self.args],
            start_new_session=True,
            env={**os.environ, "KB_WARM_MODEL": self.warm},
        )

    def may_restart(self) -> bool:
        now = time.monotonic()
        self.exits = [t for t in self.exits if now - t < RESTART_WINDOW_S] + [now]
        return len(self.exits) < RESTARTS_ALLOWED


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
MAX_REAPED = 10_000  # per call: a bound, should the kernel keep reporting one process


def _become_subreaper() -> bool:
    """Make the children's orphans kb_run's (django-q2's workers, when their cluster is killed),
    as they are PID 1's when kb_run is a container's first process: either way `_reap_orphans`
    waits for them, so none stays a zombie. False where the system refuses (or is not Linux):
    orphans then go to init, as they would without it."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _reap_orphans(own: Sequence[subprocess.Popen]) -> None:
    """Wait for every exited process of kb_run's. One it started (`own`) is left to subprocess,
    which reads its status through `poll` (so its exit code is kept); any other is an adopted
    orphan, waited for here."""
    started = {process.pid: process for process in own}
    for _ in range(MAX_REAPED):
        try:
            exited = os.waitid(
                os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT
            )  # look, do not reap
        except ChildProcessError:
            return
        if exited is None:
            return
        if exited.si_pid in started:
            started.pop(exited.si_pid).poll()
            continue
        try:
            os.waitpid(exited.si_pid, os.WNOHANG)
        except ChildProcessError:
            continue


def _how_it_ended(code: int) -> str:
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(process: subprocess.Popen, own: Sequence[subprocess.Popen]) -> bool:
    """Whether any process of `process`'s group is left; exited ones are reaped first (the leader,
    and the group's orphans, which are kb_run's), since a zombie still counts as a member."""
    process.poll()
    _reap_orphans(own)
    try:
        os.killpg(process.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _end_group(process: subprocess.Popen, own: Sequence[subprocess.Popen]) -> None:
    """SIGKILL whatever of the process group is left, and reap its leader."""
    _signal_group(process, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _group_alive(process, own) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        process.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass
