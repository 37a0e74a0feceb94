"""The postings trigger function (migrations 0003, 0011 and 0020 state it; this is its form up to
0049, which files each chunk's postings and counts under `kb_statistics_key(namespace_id,
audience_id)` instead of its namespace's id, so a restricted chunk's stay apart): a chunk's
postings and its namespace's BM25 statistics follow every insert, update and delete.
`record_old` / `record_new` run after the statistics update for the old and new row."""


def postings_sync(record_old: str = "", record_new: str = "") -> str:
    return f"""
CREATE OR REPLACE FUNCTION kb_chunk_postings_sync() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    len real;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM kb_chunk_term WHERE chunk_id = OLD.id;
        UPDATE kb_namespace_stats
           SET chunk_count = chunk_count - 1,
               total_len = total_len - kb_tsvector_length(OLD.search_vector),
               generation = nextval('kb_namespace_stats_generation')
         WHERE namespace_id = OLD.namespace_id;{record_old}
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
               total_len = kb_namespace_stats.total_len + EXCLUDED.total_len,
               generation = nextval('kb_namespace_stats_generation');{record_new}
    END IF;
    RETURN NULL;
END
$$;
"""
