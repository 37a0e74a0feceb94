"""Going back past the languages migration (kb 0028) leaves a database whose postings match its
passages: every passage is lexed in English again, and the lexical index with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import IngestRun, Namespace, Source
from tests.pgcopy import client_env, psql, restored_copy

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "languages"

# postings that are not the passage's stored lexemes, or lexemes without their posting
STALE = """SELECT count(*) FROM (
             (SELECT id, unnest(tsvector_to_array(search_vector)) FROM kb_chunk
              EXCEPT SELECT chunk_id, lexeme FROM kb_chunk_term)
             UNION ALL
             (SELECT chunk_id, lexeme FROM kb_chunk_term
              EXCEPT SELECT id, unnest(tsvector_to_array(search_vector)) FROM kb_chunk)) AS t"""

# the namespace's BM25 statistics against its passages' stored lexing
STATISTICS_DRIFT = """SELECT s.chunk_count - count(c.id),
                              round((s.total_len - sum(kb_tsvector_length(c.search_vector)))::numeric, 3)
                        FROM kb_namespace_stats s JOIN kb_chunk c ON c.namespace_id = s.namespace_id
                       GROUP BY s.namespace_id, s.chunk_count, s.total_len"""  # noqa: E501
# English keeps the word whole
GERMAN_STEM = "SELECT count(*) FROM kb_chunk_term WHERE lexeme = 'laufzeitumgeb'"


def test_unapplying_languages_relexes_every_passage_in_english_with_its_postings(tmp_path):
    namespace = Namespace.objects.create(slug="back", title="back")
    source = Source.objects.create(
        namespace=namespace, name="manual", kind=Source.Kind.TEXT, text="x"
    )
    page = "user-space.de-DE.html"
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        iter(
            [
                LoadedItem(
                    ref=page,
                    body=(PAGES / page).read_bytes(),
                    media_type="text/html",
                    charset="utf-8",
                    path=page,
                )
            ]
        )
    )
    assert run.status == "succeeded", run.error

    env, database = client_env(), connection.settings_dict["NAME"]
    assert psql(env, database, "-c", "SELECT DISTINCT search_config FROM kb_chunk") == "german"
    assert psql(env, database, "-c", GERMAN_STEM) != "0"
    with restored_copy(tmp_path, "kb_back") as copy:
        url = f"postgres://{env['PGUSER']}@/{copy}?host={env['PGHOST']}&port={env['PGPORT']}"
        done = subprocess.run(
            [sys.executable, "manage.py", "migrate", "kb", "0027"],
            cwd=settings.BASE_DIR,
            env={**env, "DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        postings = int(psql(env, copy, "-c", "SELECT count(*) FROM kb_chunk_term"))
        stale = int(psql(env, copy, "-c", STALE))
        german = psql(env, copy, "-c", GERMAN_STEM)
        statistics = psql(env, copy, "-c", STATISTICS_DRIFT)
    assert postings > 0 and stale == 0
    assert german == "0"  # the German stem is gone with the German lexing
    assert statistics == "0|0.000"  # the namespace's chunk count and total length are its passages'
