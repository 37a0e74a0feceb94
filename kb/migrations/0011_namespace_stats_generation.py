"""A generation stamp on each namespace's BM25 statistics, taken from a sequence by the postings
trigger whenever a chunk's postings change, so a search can cache document frequencies per
(namespace, generation) and know exactly when they are stale (retrieval/channels.py). A sequence
rather than a counter: its values are never handed out twice, even when a transaction that took
one rolls back, so a generation always names one state of the postings."""

from django.db import migrations, models


def _postings_sync(stamp: str) -> str:
    """Migration 0003's postings trigger function, with `stamp` appended to both updates of the
    namespace statistics."""
    return f"""
CREATE OR REPLACE FUNCTION kb_chunk_postings_sync() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    len real;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM kb_chunk_term WHERE chunk_id = OLD.id;
        UPDATE kb_namespace_stats
           SET chunk_count = chunk_count - 1,
               total_len = total_len - kb_tsvector_length(OLD.search_vector){stamp}
         WHERE namespace_id = OLD.namespace_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        len := kb_tsvector_length(NEW.search_vector);
        INSERT INTO kb_chunk_term (namespace_id, lexeme, chunk_id, tf, doc_len)
        SELECT NEW.namespace_id, t.lexeme, NEW.id, coalesce(array_length(t.positions, 1), 1), len
          FROM unnest(NEW.search_vector) AS t;
        INSERT INTO kb_namespace_stats (namespace_id, chunk_count, total_len)
        VALUES (NEW.namespace_id, 1, len)
        ON CONFLICT (namespace_id) DO UPDATE
           SET chunk_count = kb_namespace_stats.chunk_count + 1,
               total_len = kb_namespace_stats.total_len + EXCLUDED.total_len{stamp};
    END IF;
    RETURN NULL;
END
$$;
"""


FORWARD = """
CREATE SEQUENCE kb_namespace_stats_generation;
ALTER TABLE kb_namespace_stats ADD COLUMN generation bigint NOT NULL DEFAULT nextval('kb_namespace_stats_generation');
""" + _postings_sync(",\n               generation = nextval('kb_namespace_stats_generation')")

BACKWARD = (
    _postings_sync("")
    + """
ALTER TABLE kb_namespace_stats DROP COLUMN generation;
DROP SEQUENCE kb_namespace_stats_generation;
"""
)


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0010_namespace_vector_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, BACKWARD)],
            state_operations=[
                migrations.AddField(
                    model_name="namespacestats",
                    name="generation",
                    field=models.BigIntegerField(default=0, editable=False),
                ),
            ],
        ),
    ]
