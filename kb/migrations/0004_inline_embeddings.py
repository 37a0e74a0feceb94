"""Keep chunk embeddings inline in the table row (STORAGE MAIN).

A chunk row carries its text, its tsvector and a 384-float vector: past PostgreSQL's 2 kB
threshold the vector was moved out of line (TOAST), and every distance computation fetched and
reassembled it: exact search over 5,700 chunks took 55 ms. With MAIN, PostgreSQL moves the text
and tsvector out of line instead and distance scans read only the main table (about 10 ms).
Existing rows are rewritten once so they take the new layout.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("kb", "0003_bm25_postings")]

    operations = [
        migrations.RunSQL(
            [
                "ALTER TABLE kb_chunk ALTER COLUMN embedding SET STORAGE MAIN",
                "UPDATE kb_chunk SET embedding = embedding WHERE embedding IS NOT NULL",
            ],
            ["ALTER TABLE kb_chunk ALTER COLUMN embedding SET STORAGE EXTENDED"],
        ),
    ]
