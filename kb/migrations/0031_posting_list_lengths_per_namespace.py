"""The packed posting lists hold each chunk's length once per namespace instead of once per
posting (retrieval/posting_lists.py): `kb_posting_list_build.lengths` is every chunk's length
at its offset from the build's base, read by a process once per build and kept; each term keeps
only its shortest length (`min_length`), the bound its scoring needs. A search then transfers
six bytes a posting instead of ten.

Lists built in the old layout are dropped here; retrieval's migration 0002 builds them again
for the namespaces large enough for them (until then, and in a failed build, the channel reads
the postings table: exact, slower). Going back drops the new lists the same way; the older code
then reads the postings table until an ingest run or `kb_posting_lists --ensure` builds them."""

from django.db import migrations, models

FORWARD = """
DELETE FROM kb_posting_list_build;
ALTER TABLE kb_posting_list_build ADD COLUMN lengths bytea NOT NULL;  -- float4 big-endian per chunk offset
ALTER TABLE kb_posting_list_build ALTER lengths SET STORAGE EXTERNAL;
ALTER TABLE kb_posting_list DROP COLUMN lengths, ADD COLUMN min_length real NOT NULL;
"""

BACKWARD = """
DELETE FROM kb_posting_list_build;
ALTER TABLE kb_posting_list DROP COLUMN min_length, ADD COLUMN lengths bytea NOT NULL;
ALTER TABLE kb_posting_list ALTER lengths SET STORAGE EXTERNAL;
ALTER TABLE kb_posting_list_build DROP COLUMN lengths;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0030_namespace_passage_configs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, BACKWARD)],
            state_operations=[
                migrations.AddField("postinglistbuild", "lengths", models.BinaryField()),
                migrations.RemoveField("postinglist", "lengths"),
                migrations.AddField("postinglist", "min_length", models.FloatField()),
            ],
        ),
    ]
