"""Audiences inside a namespace (issue #61): a source or a document limited to groups.

A document and its chunks carry their audience's id (NULL: open). The postings trigger files a
chunk's postings and counts under its statistics key, `kb_statistics_key(namespace, audience)`:
the namespace's own id for an open chunk, minus the audience's id for a restricted one. So the
namespace-wide document frequencies, chunk count and length, packed lists and spelling vocabulary
hold the open documents only, and a restricted document's words reach a search's statistics only
for readers of its audience (retrieval/lexical.py adds its audience's counts for them).

`kb_audience_guard` keeps the audience columns to their one writer (kb/audiences.py, which sets
`kb.audience_writer` for its transaction): a new document takes its source's audience and a new
chunk its document's; any other update leaves them as they were, so a copy of a source or a
document read before a curator's change and saved afterwards cannot open it again."""

import django.db.models.deletion
from django.db import migrations, models

from kb.migrations._postings_trigger import postings_sync

# 0020's recording of changed chunks, under the statistics key
RECORD_OLD = """
        INSERT INTO kb_posting_list_changed (namespace_id, chunk_id)
        SELECT b.namespace_id, OLD.id FROM kb_posting_list_build b
         WHERE b.namespace_id = OLD.namespace_id AND OLD.id <= b.max_chunk_id
        ON CONFLICT DO NOTHING;"""
RECORD_NEW = RECORD_OLD.replace("OLD.", "NEW.")
BEFORE = postings_sync(record_old=RECORD_OLD, record_new=RECORD_NEW)
KEYED = BEFORE.replace(
    "OLD.namespace_id", "kb_statistics_key(OLD.namespace_id, OLD.audience_id)"
).replace("NEW.namespace_id", "kb_statistics_key(NEW.namespace_id, NEW.audience_id)")

UPDATE_TRIGGER = """
DROP TRIGGER kb_chunk_postings_update ON kb_chunk;
CREATE TRIGGER kb_chunk_postings_update AFTER UPDATE ON kb_chunk
    FOR EACH ROW WHEN (OLD.search_vector IS DISTINCT FROM NEW.search_vector
                       OR OLD.namespace_id IS DISTINCT FROM NEW.namespace_id{audience})
    EXECUTE FUNCTION kb_chunk_postings_sync();
"""

FORWARD = (
    """
CREATE FUNCTION kb_statistics_key(namespace_id bigint, audience_id bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN audience_id IS NULL THEN namespace_id ELSE -audience_id END
$$;

CREATE FUNCTION kb_audience_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('kb.audience_writer', true) IS NOT DISTINCT FROM 'on' THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        NEW.audience_id := OLD.audience_id;
    ELSIF TG_TABLE_NAME = 'kb_document' THEN
        NEW.audience_id := (SELECT s.audience_id FROM kb_source s WHERE s.id = NEW.source_id);
    ELSIF TG_TABLE_NAME = 'kb_chunk' THEN
        NEW.audience_id := (SELECT d.audience_id FROM kb_document d WHERE d.id = NEW.document_id);
    ELSE
        NEW.audience_id := NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER kb_source_audience BEFORE INSERT OR UPDATE ON kb_source
    FOR EACH ROW EXECUTE FUNCTION kb_audience_guard();
CREATE TRIGGER kb_document_audience BEFORE INSERT OR UPDATE ON kb_document
    FOR EACH ROW EXECUTE FUNCTION kb_audience_guard();
CREATE TRIGGER kb_chunk_audience BEFORE INSERT OR UPDATE ON kb_chunk
    FOR EACH ROW EXECUTE FUNCTION kb_audience_guard();

-- a restricted audience's counts are a row of their own, keyed by minus its id
DO $$
DECLARE name text;
BEGIN
    FOR name IN SELECT conname FROM pg_constraint
                 WHERE conrelid = 'kb_namespace_stats'::regclass AND contype = 'f' LOOP
        EXECUTE format('ALTER TABLE kb_namespace_stats DROP CONSTRAINT %I', name);
    END LOOP;
END
$$;
"""
    + KEYED
    + UPDATE_TRIGGER.format(
        audience="\n                       OR OLD.audience_id IS DISTINCT FROM NEW.audience_id"
    )
)

BACKWARD = (
    """
SET LOCAL kb.audience_writer = 'on';
UPDATE kb_chunk SET audience_id = NULL WHERE audience_id IS NOT NULL;
DELETE FROM kb_namespace_stats WHERE namespace_id < 0;
"""
    + BEFORE
    + UPDATE_TRIGGER.format(audience="")
    + """
DROP TRIGGER kb_source_audience ON kb_source;
DROP TRIGGER kb_document_audience ON kb_document;
DROP TRIGGER kb_chunk_audience ON kb_chunk;
DROP FUNCTION kb_audience_guard();
DROP FUNCTION kb_statistics_key(bigint, bigint);
"""
)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("kb", "0048_person_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="audience_groups",
            field=models.ManyToManyField(
                blank=True,
                help_text="Only these groups read this document (with the namespace's curators and superusers), instead of its source's audience; empty: its source's.",
                related_name="+",
                to="auth.group",
                verbose_name="audience",
            ),
        ),
        migrations.AddField(
            model_name="source",
            name="audience_groups",
            field=models.ManyToManyField(
                blank=True,
                help_text="Only these groups read the source's documents (with the namespace's curators and superusers); empty: everyone who reads the namespace. A document with groups of its own is read by those instead.",
                related_name="+",
                to="auth.group",
                verbose_name="audience",
            ),
        ),
        migrations.CreateModel(
            name="Audience",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(editable=False, max_length=2000)),
                (
                    "groups",
                    models.ManyToManyField(
                        editable=False, related_name="kb_audiences", to="auth.group"
                    ),
                ),
                (
                    "namespace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="audiences",
                        to="kb.namespace",
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="chunk",
            name="audience",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                editable=False,
                help_text="Its document's audience, set by the database (NULL: open).",
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="kb.audience",
            ),
        ),
        migrations.AddField(
            model_name="document",
            name="audience",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                editable=False,
                help_text="Who reads it, kept by kb.audiences and the database (NULL: open).",
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="kb.audience",
            ),
        ),
        migrations.AddField(
            model_name="source",
            name="audience",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                editable=False,
                help_text="Kept by kb.audiences from audience_groups (NULL: open).",
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="kb.audience",
            ),
        ),
        migrations.AddConstraint(
            model_name="audience",
            constraint=models.UniqueConstraint(
                fields=("namespace", "key"), name="audience_unique_key"
            ),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
