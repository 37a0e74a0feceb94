"""Who may log in to the embedded PostgreSQL server: the product's own role, by password.

`initdb` trusts every local connection, and a superuser runs shell commands (`COPY … TO PROGRAM`).
`secure` takes that away once per data folder: the product connects as `kb`, not a superuser, with a
random password (and `pg_read_all_stats`, which a standby's lag needs); `pg_hba.conf` accepts SCRAM
logins on the socket only; the extensions are made in `template1` (pgvector is not trusted), so a
database the product creates has them. The passwords file beside the data folder is readable by the
product's OS user only; the parser child neither inherits nor reads it. A folder that trusted
everyone is converted at its next start; no data moves.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

logger = logging.getLogger(__name__)

ROLE = "kb"
SUPERUSER = "postgres"
EXTENSIONS = ("vector", "pg_trgm")
# A change to what `secure` does changes this text too, so every folder is secured again once.
HBA = (
    "# Written by config/embedded_auth.py (2): password (SCRAM) logins on the Unix socket, "
    "nothing else.\n"
    "local all all scram-sha-256\n"
    "local replication postgres scram-sha-256\n"
)  # a streaming replica's copy, by the superuser only
OWNED_KINDS = {
    "r": "TABLE",
    "p": "TABLE",
    "v": "VIEW",
    "m": "MATERIALIZED VIEW",
    "f": "FOREIGN TABLE",
}


@dataclass(frozen=True)
class Credentials:
    role_password: str
    superuser_password: str


def credentials_file(pgdata: Path) -> Path:
    """Beside the data folder, not in it: under root the folder belongs to the database's user."""
    return pgdata.parent / f"{pgdata.name}.credentials.json"


def secure(pgdata: Path, socket_dir: str, port: int) -> Credentials:
    """The data folder's credentials, after making sure only they open the server (idempotent;
    several processes starting together take turns)."""
    pgdata = Path(pgdata)
    with open(pgdata.parent / f".{pgdata.name}.auth.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process dies
        creds = _load_or_create(credentials_file(pgdata))
        hba = pgdata / "pg_hba.conf"
        if hba.read_text(errors="replace") == HBA and not _still_trusting(socket_dir, port):
            return creds
        logger.info(
            "securing the embedded PostgreSQL server in %s: role %r, password logins only",
            pgdata,
            ROLE,
        )
        # its password once set; ignored by a server that still trusts everyone
        superuser = _conninfo(socket_dir, port, SUPERUSER, "postgres", creds.superuser_password)
        with psycopg.connect(superuser, autocommit=True) as conn:
            _make_roles(conn, creds)
            databases = [
                row[0]
                for row in conn.execute(
                    "SELECT datname FROM pg_database WHERE datname NOT IN ('postgres', 'template0')"
                )
            ]
            for database in databases:
                _prepare_database(socket_dir, port, database, creds.superuser_password)
            _write_like(hba, HBA)
            conn.execute("SELECT pg_reload_conf()")
        return creds


def credentials(pgdata: Path) -> Credentials:
    return _load_or_create(credentials_file(Path(pgdata)))


def _still_trusting(socket_dir: str, port: int) -> bool:
    """Whether the running server still lets in a login without a password: a process that died
    after writing pg_hba.conf but before the server reloaded it leaves it so."""
    try:
        psycopg.connect(
            _conninfo(socket_dir, port, SUPERUSER, "postgres", ""), connect_timeout=5
        ).close()
    except psycopg.OperationalError:
        return False
    return True


def conninfo(
    socket_dir: str, port: int, pgdata: Path, dbname: str, *, superuser: bool = False
) -> str:
    creds = credentials(pgdata)
    if superuser:
        return _conninfo(socket_dir, port, SUPERUSER, dbname, creds.superuser_password)
    return _conninfo(socket_dir, port, ROLE, dbname, creds.role_password)


def _conninfo(socket_dir: str, port: int, user: str, dbname: str, password: str) -> str:
    return psycopg.conninfo.make_conninfo(
        host=socket_dir, port=port, user=user, dbname=dbname, password=password
    )


def _load_or_create(path: Path) -> Credentials:
    try:
        return Credentials(**json.loads(path.read_text()))
    except FileNotFoundError:
        pass
    creds = Credentials(
        role_password=secrets.token_urlsafe(32), superuser_password=secrets.token_urlsafe(32)
    )
    partial = path.with_name(
        path.name + ".new"
    )  # renamed whole, so a crash never leaves an empty file
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(creds.__dict__, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)
    return creds


def _make_roles(conn: psycopg.Connection, creds: Credentials) -> None:
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [ROLE]).fetchone()
    verb = "ALTER" if exists else "CREATE"
    conn.execute(
        sql.SQL(
            verb + " ROLE {} LOGIN CREATEDB NOSUPERUSER NOCREATEROLE NOREPLICATION PASSWORD {}"
        ).format(sql.Identifier(ROLE), sql.Literal(creds.role_password))
    )
    # a replica's lag is read from pg_stat_wal_receiver, whose status only this role shows
    conn.execute(sql.SQL("GRANT pg_read_all_stats TO {}").format(sql.Identifier(ROLE)))
    conn.execute(
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(SUPERUSER), sql.Literal(creds.superuser_password)
        )
    )


def _prepare_database(socket_dir: str, port: int, database: str, password: str) -> None:
    """The extensions the schema needs, and, in a database of the product's, every object in its
    public schema owned by `kb` (a folder made by older code created them as `postgres`)."""
    with psycopg.connect(
        _conninfo(socket_dir, port, SUPERUSER, database, password), autocommit=True
    ) as conn:
        for extension in EXTENSIONS:
            conn.execute(
                sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension))
            )
        if database.startswith("template"):
            return
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(database), sql.Identifier(ROLE)
            )
        )
        relations = conn.execute(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
            "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')"
        ).fetchall()
        for name, kind in relations:  # a table's sequences and indexes follow it
            conn.execute(
                sql.SQL("ALTER " + OWNED_KINDS[kind] + " {} OWNER TO {}").format(
                    sql.Identifier(name), sql.Identifier(ROLE)
                )
            )
        for (name,) in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind = 'S' AND pg_get_userbyid(c.relowner) <> %s"
            " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN "
            "('a', 'i', 'e'))",
            [ROLE],
        ).fetchall():
            conn.execute(
                sql.SQL("ALTER SEQUENCE {} OWNER TO {}").format(
                    sql.Identifier(name), sql.Identifier(ROLE)
                )
            )
        for name, arguments in conn.execute(
            "SELECT p.proname, pg_get_function_identity_arguments(p.oid) FROM pg_proc p"
            " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
            " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"
        ).fetchall():
            conn.execute(
                sql.SQL("ALTER ROUTINE {}(" + arguments + ") OWNER TO {}").format(
                    sql.Identifier(name), sql.Identifier(ROLE)
                )
            )


def _write_like(path: Path, text: str) -> None:
    """Replace `path` with `text`, keeping its owner and mode (the database's OS user reads it)."""
    status = path.stat()
    temporary = path.with_name(path.name + ".kb-new")
    temporary.write_text(text)
    os.chmod(temporary, status.st_mode & 0o777)
    if os.geteuid() == 0:
        os.chown(temporary, status.st_uid, status.st_gid)
    os.replace(temporary, path)
