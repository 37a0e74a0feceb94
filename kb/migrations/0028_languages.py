"""Each passage is lexed in its own language.

`kb_search_vector(config, title, text)` replaces the fixed `english` expression of
`kb_chunk.search_vector`; `kb_lex` is the one place a configuration name becomes lexemes (the
query side calls it too), and `cjk` splits runs of Chinese, Japanese and Korean characters into
overlapping pairs (linear: each character beside the next, never a substring at an offset,
which costs the offset in a multibyte text) before `simple`
reads them. Every existing passage gets `english`, so its tsvector is the same value as before
and its postings and BM25 statistics stay exact: the column is re-added, which rewrites the table
without firing the postings triggers, and nothing in it changes.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import migrations, models
from django.db.models import Func

CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"

FUNCTIONS = rf"""
CREATE OR REPLACE FUNCTION kb_cjk_pairs(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT coalesce(string_agg(
         CASE WHEN m[1] IS NULL THEN m[2]
              WHEN length(m[1]) = 1 THEN m[1]
              ELSE (SELECT string_agg(pair, ' ' ORDER BY i)
                      FROM (SELECT i, ch || lead(ch) OVER (ORDER BY i) AS pair
                              FROM unnest(string_to_array(m[1], NULL)) WITH ORDINALITY AS u(ch, i)) AS pairs
                     WHERE pair IS NOT NULL)
         END, ' ' ORDER BY n), '')
  FROM regexp_matches(body, '([{CJK}]+)|([^{CJK}]+)', 'g') WITH ORDINALITY AS t(m, n)
$$;

CREATE OR REPLACE FUNCTION kb_lex(config text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE WHEN config = 'cjk' THEN to_tsvector('simple'::regconfig, kb_cjk_pairs(coalesce(body, '')))
            ELSE to_tsvector(config::regconfig, coalesce(body, '')) END
$$;

CREATE OR REPLACE FUNCTION kb_query(config text, body text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE WHEN config = 'cjk' THEN plainto_tsquery('simple'::regconfig, kb_cjk_pairs(coalesce(body, '')))
            ELSE plainto_tsquery(config::regconfig, coalesce(body, '')) END
$$;

CREATE OR REPLACE FUNCTION kb_search_vector(config text, title text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT setweight(kb_lex(config, title), 'A') || setweight(kb_lex(config, body), 'D')
$$;
"""

DROP_FUNCTIONS = """
DROP FUNCTION kb_search_vector(text, text, text);
DROP FUNCTION kb_query(text, text);
DROP FUNCTION kb_lex(text, text);
DROP FUNCTION kb_cjk_pairs(text);
"""

# the update trigger's WHEN names search_vector, so it goes while the column is re-added
DROP_UPDATE_TRIGGER = "DROP TRIGGER kb_chunk_postings_update ON kb_chunk;"
CREATE_UPDATE_TRIGGER = """
CREATE TRIGGER kb_chunk_postings_update AFTER UPDATE ON kb_chunk
    FOR EACH ROW WHEN (OLD.search_vector IS DISTINCT FROM NEW.search_vector
                       OR OLD.namespace_id IS DISTINCT FROM NEW.namespace_id)
    EXECUTE FUNCTION kb_chunk_postings_sync();
"""

RELEX_IN_ENGLISH = "UPDATE kb_chunk SET search_config = 'english' WHERE search_config <> 'english';"


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0027_chunk_embedding_runtime"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.AddField(
            model_name="namespace",
            name="language",
            field=models.CharField(
                choices=[
                    ("auto", "Detect each document's language"),
                    ("arabic", "Arabic"),
                    ("cjk", "Chinese, Japanese, Korean (character pairs)"),
                    ("danish", "Danish"),
                    ("dutch", "Dutch"),
                    ("english", "English"),
                    ("finnish", "Finnish"),
                    ("french", "French"),
                    ("german", "German"),
                    ("greek", "Greek"),
                    ("hungarian", "Hungarian"),
                    ("indonesian", "Indonesian"),
                    ("irish", "Irish"),
                    ("italian", "Italian"),
                    ("lithuanian", "Lithuanian"),
                    ("nepali", "Nepali"),
                    ("norwegian", "Norwegian"),
                    ("portuguese", "Portuguese"),
                    ("romanian", "Romanian"),
                    ("russian", "Russian"),
                    ("simple", "None: words as written, no stemming"),
                    ("spanish", "Spanish"),
                    ("swedish", "Swedish"),
                    ("tamil", "Tamil"),
                    ("turkish", "Turkish"),
                ],
                default="auto",
                max_length=16,
                help_text="How words are found: each document in its own detected language, or one language "
                "for all.",
            ),
        ),
        migrations.AddField(
            model_name="namespace",
            name="document_languages",
            field=models.JSONField(
                blank=True,
                default=dict,
                editable=False,
                help_text="How many of its documents are in each detected language (ISO 639-1; "
                "'' not named).",
            ),
        ),
        migrations.AddField(
            model_name="document",
            name="language",
            field=models.CharField(
                blank=True,
                max_length=8,
                help_text="The language detected in the text (ISO 639-1), empty when too "
                "short or unsure.",
            ),
        ),
        migrations.AddField(
            model_name="chunk",
            name="search_config",
            field=models.CharField(
                choices=[
                    ("arabic", "arabic"),
                    ("cjk", "cjk"),
                    ("danish", "danish"),
                    ("dutch", "dutch"),
                    ("english", "english"),
                    ("finnish", "finnish"),
                    ("french", "french"),
                    ("german", "german"),
                    ("greek", "greek"),
                    ("hungarian", "hungarian"),
                    ("indonesian", "indonesian"),
                    ("irish", "irish"),
                    ("italian", "italian"),
                    ("lithuanian", "lithuanian"),
                    ("nepali", "nepali"),
                    ("norwegian", "norwegian"),
                    ("portuguese", "portuguese"),
                    ("romanian", "romanian"),
                    ("russian", "russian"),
                    ("simple", "simple"),
                    ("spanish", "spanish"),
                    ("swedish", "swedish"),
                    ("tamil", "tamil"),
                    ("turkish", "turkish"),
                ],
                default="english",
                max_length=16,
                help_text="The text search configuration the passage is lexed with (kb/languages.py).",
            ),
        ),
        migrations.RunSQL(DROP_UPDATE_TRIGGER, CREATE_UPDATE_TRIGGER),
        migrations.RemoveIndex(model_name="chunk", name="chunk_search_vector_gin"),
        migrations.RemoveField(model_name="chunk", name="search_vector"),
        migrations.AddField(
            model_name="chunk",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=Func(
                    "search_config",
                    "title",
                    "text",
                    function="kb_search_vector",
                    output_field=SearchVectorField(),
                ),
                output_field=SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="chunk",
            index=GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
        ),
        migrations.RunSQL(CREATE_UPDATE_TRIGGER, DROP_UPDATE_TRIGGER),
        # going back: every passage is lexed in English again while the trigger still keeps its
        # postings (and the namespace's statistics) in step; the re-added column then holds the same value
        migrations.RunSQL(migrations.RunSQL.noop, RELEX_IN_ENGLISH),
    ]
