"""Processes of the product (web server, django-q2 workers, commands) run against an external
PostgreSQL through DATABASE_URL, as in a scaled-out deployment, and a way to read its tables."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parent.parent


class Cluster:
    def __init__(self, database_url: str, **env: str):
        self.url = database_url
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "KB_FETCH_ALLOWED_PRIVATE": "127.0.0.0/8:*",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            **env,
        }
        self.processes: list[subprocess.Popen] = []

    def manage(self, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return result

    def shell(self, code: str) -> str:
        result = self.manage("shell", "-c", code)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""

    def start(self, *args: str, log: Path | None = None) -> subprocess.Popen:
        """Start `manage.py ARGS` in the background (a worker, a long command)."""
        return self.start_command([sys.executable, "manage.py", *args], log=log)

    def start_command(self, command: list[str], log: Path | None = None) -> subprocess.Popen:
        out = open(log, "wb") if log else subprocess.DEVNULL
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL a process and everything it started (a qcluster forks its workers): a crash."""
        family = _descendants(process.pid)
        _kill_all(family)  # the descendants first, so none is re-parented in between
        _kill_all(_processes([process.pid]))
        process.wait(timeout=30)

    def stop(self, process: subprocess.Popen) -> None:
        """Ask a process to stop as an operator would (SIGTERM), then make sure that neither it
        nor anything it started outlives the test."""
        import psutil

        if process.poll() is not None:
            return
        family = _descendants(process.pid)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill(process)
        _, alive = psutil.wait_procs(family, timeout=10)
        _kill_all(alive)

    def stop_all(self) -> None:
        for process in self.processes:
            self.stop(process)

    def sql(self, query: str, params=()) -> list[tuple]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(query, params).fetchall()

    def wait_for(self, query: str, predicate, timeout: float = 120, params=()) -> list[tuple]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                rows = self.sql(query, params)
                if predicate(rows):
                    return rows
            except psycopg.OperationalError:
                pass  # the server may be restarting
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for: {query}")
            time.sleep(0.3)


def _processes(pids):
    import psutil

    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    return found


def _descendants(pid: int):
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _kill_all(processes) -> None:
    import psutil

    for member in processes:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=30)
