"""Run the whole product: migrate, admin login, demo source, web server and worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

from kb.bootstrap import ensure_admin_user
from kb.embedded_db import prune_dead_handles

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
        from ingest.watchdog import fail_stuck_runs

        stuck = fail_stuck_runs()  # runs whose worker died while the product was down
        if stuck:
            self.stdout.write(f"==> failed {len(stuck)} stuck ingest runs (retry them from the admin)")
        if not no_demo:
            self._demo()
        connection.close()

        base = f"http://{host}:{port}"
        self._stopping = False

        def stop(signum, frame):  # Ctrl-C or SIGTERM, from here on: stop the children cleanly
            self._stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        # each child loads the model for the path it uses before it serves (KB_WARM_MODEL), and the
        # banner waits for the web server, so the first search is as fast as the ones after it
        children = [
            # in their own process groups: a terminal's Ctrl-C reaches this process only, which
            # stops them with SIGTERM, quietly, even while they are still loading the model
            subprocess.Popen([sys.executable, "manage.py", "qcluster"], start_new_session=True,
                             env={**os.environ, "KB_WARM_MODEL": "documents"}),
            subprocess.Popen(
                [sys.executable, "manage.py", "runserver", "--noreload", f"{host}:{port}"],
                env={**os.environ, "KB_WARM_MODEL": "query"}, start_new_session=True,
            ),
        ]
        self.stdout.write("==> loading the model in the web server and the worker")
        if _wait_until_serving(f"{base}/healthz", children[1], lambda: self._stopping):
            self._banner(base, login)
        elif not self._stopping:
            self.stderr.write("The web server did not start; see its output above.")
        self._supervise(children)

    def _banner(self, base: str, login) -> None:
        self.stdout.write(self.style.SUCCESS(f"\nKnowledge base running at {base}/"))
        self.stdout.write(f"  search page   {base}/")
        self.stdout.write(f"  admin         {base}/admin/")
        self.stdout.write(f"  API docs      {base}/api/docs")
        self.stdout.write(f"  health        {base}/healthz")
        if login.password:
            self.stdout.write(self.style.WARNING(
                f"  admin login   {login.username} / {login.password}   "
                "(shown once; not stored in plain text)"
            ))
        else:
            self.stdout.write(
                f"  admin login   {login.username} (password shown on first run; reset with "
                f"'.venv/bin/python manage.py changepassword {login.username}')"
            )
        self.stdout.write("Press Ctrl-C to stop.\n")

    def _demo(self) -> None:
        from kb.demo import ensure_demo_providers, ensure_demo_sources

        run_ids = ensure_demo_sources()
        if run_ids:
            self.stdout.write(f"==> demo source queued for ingest (runs {', '.join(map(str, run_ids))})")
        else:
            self.stdout.write("==> demo sources unchanged since their last run: nothing to ingest")
        for entry in ensure_demo_providers(queue=True):
            self.stdout.write(f"==> capability provider {entry['provider']!r}: {entry['capabilities']} capabilities, "
                              f"revision {entry['revision'][:12]}")

    def _supervise(self, children: list[subprocess.Popen]) -> None:
        while not self._stopping and all(child.poll() is None for child in children):
            time.sleep(0.3)
        self.stdout.write("\n==> stopping web server and worker")
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # a child that does not stop takes its own children with it
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        pgdata = settings.DATABASES["default"].get("EMBEDDED_PGDATA")
        if pgdata:  # the database stops when this process exits, unless others still use it
            prune_dead_handles(pgdata)
        failed = [c.args[2] for c in children if c.returncode not in (0, -2, -15, 130)]
        if failed and not self._stopping:
            raise SystemExit(1)
