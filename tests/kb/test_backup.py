"""A backup as docs/deployment.md takes it: `pg_dump` of the database, restored into an empty
one with `psql`, keeps every passage, its lexing in its own language and the lexical index (the
restore computes each passage's search vector again, through the same functions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import IngestRun, Namespace, Source
from tests.pgcopy import client_env, psql, restored_copy

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "languages"
CHECKS = {
    "passages": "SELECT count(*) FROM kb_chunk",
    "lexed": "SELECT md5(string_agg(search_config || ':' || search_vector::text, '|' ORDER BY "
    "id)) FROM kb_chunk",
    "postings": "SELECT count(*) FROM kb_chunk_term",
}


def test_a_pg_dump_restores_every_passage_lexed_as_it_was(tmp_path):
    namespace = Namespace.objects.create(slug="backup", title="backup")
    source = Source.objects.create(
        namespace=namespace, name="manual", kind=Source.Kind.TEXT, text="x"
    )
    # German, Chinese character pairs, English, and French, whose stems lose their accents
    # (unaccent)
    pages = [
        "user-space.de-DE.html",
        "reference-appendix.zh-cn.html",
        "user-space.en-US.html",
        "user-space.fr-FR.html",
    ]
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        iter(
            LoadedItem(
                ref=page,
                body=(PAGES / page).read_bytes(),
                media_type="text/html",
                charset="utf-8",
                path=page,
            )
            for page in pages
        )
    )
    assert run.status == "succeeded", run.error

    env, database = client_env(), connection.settings_dict["NAME"]
    before = {name: psql(env, database, "-c", sql) for name, sql in CHECKS.items()}
    assert int(before["passages"]) > 0 and int(before["postings"]) > 0
    with restored_copy(tmp_path, "kb_restore") as copy:
        after = {name: psql(env, copy, "-c", sql) for name, sql in CHECKS.items()}
    assert after == before
