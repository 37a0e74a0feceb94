from django.db import migrations

# A chunk's postings with their lexemes and frequencies, contiguous: the pruned lexical channel
# completes a candidate's score with one index descent, and the postings trigger deletes a
# chunk's postings through it as it did through the chunk-only index this one replaces.
CREATE = """CREATE INDEX CONCURRENTLY IF NOT EXISTS kb_chunk_term_chunk_terms
            ON kb_chunk_term (chunk_id, lexeme) INCLUDE (tf, doc_len)"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("kb", "0018_chunk_term_impact_index"),
    ]

    operations = [
        migrations.RunSQL(CREATE, "DROP INDEX CONCURRENTLY IF EXISTS kb_chunk_term_chunk_terms"),
        migrations.RunSQL(
            "DROP INDEX CONCURRENTLY IF EXISTS kb_chunk_term_chunk",
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS kb_chunk_term_chunk ON kb_chunk_term (chunk_id)",
        ),
    ]
