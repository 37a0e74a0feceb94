"""Packed posting lists: each large namespace's postings again, one row per term, its chunk ids,
term frequencies and lengths packed as binary arrays (retrieval/posting_lists.py). Reading a common
term's 600k postings from the row-per-posting table costs about 0.7 µs each; reading them packed
costs a few nanoseconds, so the lexical channel stays exact BM25 at a million chunks.

The postings trigger keeps the packed lists exact under every write: a chunk written or deleted
after its namespace's lists were built, with an id the lists may hold, is recorded in
kb_posting_list_changed; the channel then ignores that chunk's packed postings and reads its
current ones (and every chunk newer than the lists) from kb_chunk_term. The trigger records the
change only after it has updated the namespace's statistics row, which a build holds locked, so
no write can fall between a build and the recording."""

import django.db.models.deletion
from django.db import migrations, models

from kb.migrations._postings_trigger import postings_sync

TABLES = """
CREATE TABLE kb_posting_list_build (
    namespace_id bigint PRIMARY KEY REFERENCES kb_namespace (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    base_chunk_id bigint NOT NULL,   -- packed chunk ids are offsets from it (int4)
    max_chunk_id bigint NOT NULL,    -- chunks above it are newer than the lists
    chunk_count bigint NOT NULL,
    postings bigint NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now(),
    build_seconds double precision NOT NULL DEFAULT 0
);
CREATE TABLE kb_posting_list (
    namespace_id bigint NOT NULL REFERENCES kb_posting_list_build (namespace_id) ON DELETE CASCADE,
    lexeme text NOT NULL,
    postings integer NOT NULL,
    chunk_offsets bytea NOT NULL,  -- int4 big-endian, chunk id minus the build's base, ascending
    tfs bytea NOT NULL,            -- int2 big-endian
    lengths bytea NOT NULL,        -- float4 big-endian
    PRIMARY KEY (namespace_id, lexeme)
);
-- stored out of line uncompressed: a read is a plain copy, never a decompression
ALTER TABLE kb_posting_list ALTER chunk_offsets SET STORAGE EXTERNAL, ALTER tfs SET STORAGE EXTERNAL,
    ALTER lengths SET STORAGE EXTERNAL;
CREATE TABLE kb_posting_list_changed (
    namespace_id bigint NOT NULL REFERENCES kb_posting_list_build (namespace_id) ON DELETE CASCADE,
    chunk_id bigint NOT NULL,
    PRIMARY KEY (namespace_id, chunk_id)
);
"""

# after the statistics update (whose row lock a build holds): a write of a chunk the lists may hold
RECORD_OLD = """
        INSERT INTO kb_posting_list_changed (namespace_id, chunk_id)
        SELECT b.namespace_id, OLD.id FROM kb_posting_list_build b
         WHERE b.namespace_id = OLD.namespace_id AND OLD.id <= b.max_chunk_id
        ON CONFLICT DO NOTHING;"""
RECORD_NEW = RECORD_OLD.replace("OLD.", "NEW.")


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0019_chunk_term_by_chunk"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    TABLES + postings_sync(record_old=RECORD_OLD, record_new=RECORD_NEW),
                    postings_sync()
                    + "DROP TABLE kb_posting_list_changed; DROP TABLE kb_posting_list; "
                    "DROP TABLE kb_posting_list_build;",
                )
            ],
            state_operations=[
                migrations.CreateModel(
                    name="PostingListBuild",
                    fields=[
                        (
                            "namespace",
                            models.OneToOneField(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                primary_key=True,
                                related_name="+",
                                serialize=False,
                                to="kb.namespace",
                            ),
                        ),
                        ("base_chunk_id", models.BigIntegerField()),
                        ("max_chunk_id", models.BigIntegerField()),
                        ("chunk_count", models.BigIntegerField()),
                        ("postings", models.BigIntegerField()),
                        ("built_at", models.DateTimeField()),
                        ("build_seconds", models.FloatField(default=0)),
                    ],
                    options={"db_table": "kb_posting_list_build"},
                ),
                migrations.CreateModel(
                    name="PostingList",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "namespace",
                                "lexeme",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "namespace",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="kb.namespace",
                            ),
                        ),
                        ("lexeme", models.TextField()),
                        ("postings", models.IntegerField()),
                        ("chunk_offsets", models.BinaryField()),
                        ("tfs", models.BinaryField()),
                        ("lengths", models.BinaryField()),
                    ],
                    options={"db_table": "kb_posting_list"},
                ),
                migrations.CreateModel(
                    name="PostingListChange",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "namespace",
                                "chunk_id",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "namespace",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="kb.namespace",
                            ),
                        ),
                        ("chunk_id", models.BigIntegerField()),
                    ],
                    options={"db_table": "kb_posting_list_changed"},
                ),
            ],
        ),
    ]
