from django.db import migrations

# The packed posting lists (0020) make the lexical channel exact and fast at every size, so the
# two indexes its pruned mode read (about 11 GB per million chunks, paid on every write) go.
# The postings trigger deletes a chunk's postings through a plain chunk index again.


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("kb", "0020_posting_lists"),
    ]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS kb_chunk_term_chunk ON kb_chunk_term (chunk_id)",
            "DROP INDEX CONCURRENTLY IF EXISTS kb_chunk_term_chunk",
        ),
        migrations.RunSQL(
            "DROP INDEX CONCURRENTLY IF EXISTS kb_chunk_term_chunk_terms",
            """CREATE INDEX CONCURRENTLY IF NOT EXISTS kb_chunk_term_chunk_terms
                             ON kb_chunk_term (chunk_id, lexeme) INCLUDE (tf, doc_len)""",
        ),
        migrations.RunSQL(
            "DROP INDEX CONCURRENTLY IF EXISTS kb_chunk_term_impact",
            """CREATE INDEX CONCURRENTLY IF NOT EXISTS kb_chunk_term_impact
                             ON kb_chunk_term (namespace_id, lexeme, tf, doc_len) INCLUDE (chunk_id)""",
        ),
    ]
