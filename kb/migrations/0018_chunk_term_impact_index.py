from django.db import migrations

# The postings again, by term frequency and length within each term: the lexical channel's
# pruned mode reads only a common term's postings whose impact reaches a floor, and impact rises
# with the frequency and falls with the length, so those postings are one range of lengths per
# frequency (retrieval/lexical.py). Built concurrently, so a live namespace keeps ingesting.
CREATE = """CREATE INDEX CONCURRENTLY IF NOT EXISTS kb_chunk_term_impact
            ON kb_chunk_term (namespace_id, lexeme, tf, doc_len) INCLUDE (chunk_id)"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("kb", "0017_fusion_calibration"),
    ]

    operations = [
        migrations.RunSQL(CREATE, "DROP INDEX CONCURRENTLY IF EXISTS kb_chunk_term_impact"),
    ]
