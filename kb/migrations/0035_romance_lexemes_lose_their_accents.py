"""In French, Italian, Portuguese, Romanian and Spanish, each lexeme loses its accents after it is
stemmed, so a word typed without them meets the word the text spells with them.

People often type these languages without accents. Their Snowball stemmers keep accents in the
stems (French "réseau" is `réseau`, "exécuter" `exécut`; Spanish "contraseña" `contraseñ`), so
"reseau", "executer" and "contrasena" met nothing. The stemmer still reads the text as written,
accents and all, which it needs: folding the text before stemming (PostgreSQL's documented
`unaccent` recipe) was measured and rejected, because the French stemmer then reads "à" as the
word `a`, "données" as `donne` and "manière" as `manier`, and the French handbook's questions as
written lost 0.022 nDCG@10. Folding each stem afterwards only joins lexemes that differ by their
accents. The folding is the `unaccent` dictionary (PostgreSQL contrib, a trusted extension), named
by a constant that the function bodies bind when they are created, so a restored dump finds it
whatever its search path. The functions are declared immutable around it, as stored search vectors
need: should a PostgreSQL upgrade change the dictionary's rules, the passages of these languages
must be lexed again (docs/deployment.md, "Upgrades"). Measured in docs/languages.md ("What is folded").

Every passage in these configurations whose lexemes change is lexed again in place, as 0032 did:
its generated search vector is recomputed, and the postings trigger keeps the namespace's BM25
statistics exact in the same statement. That is most of them, inside the migration's transaction:
5,943 passages (683,682 postings) took 4.8 s here, so a million take about 14 minutes, during
which writes to those passages wait.
"""

import importlib

from django.db import migrations

PREVIOUS = importlib.import_module("kb.migrations.0032_lexing_folds_like_queries")

UNACCENTED_CONFIGS = ("french", "italian", "portuguese", "romanian", "spanish")
_IN = ", ".join(f"'{config}'" for config in UNACCENTED_CONFIGS)
# a lexeme without its accents, written as tsvector or tsquery input: quoted, quotes and backslashes doubled
_QUOTED = (
    "'''' || replace(replace(unaccent('unaccent'::regdictionary, lexeme), '\\', '\\\\'), '''', '''''')"
    " || ''''"
)

FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION kb_unaccented(lexemes tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(string_agg({_QUOTED} || ':' || array_to_string(positions, ','), ' '), '')::tsvector
          FROM unnest(lexemes));

CREATE OR REPLACE FUNCTION kb_lex(config text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN config = 'cjk' THEN to_tsvector('simple'::regconfig, kb_cjk_pairs(kb_fold(coalesce(body, ''))))
            WHEN config IN ({_IN}) THEN kb_unaccented(to_tsvector(config::regconfig, kb_fold(coalesce(body, ''))))
            ELSE to_tsvector(config::regconfig, kb_fold(coalesce(body, ''))) END;

CREATE OR REPLACE FUNCTION kb_query(config text, body text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN config = 'cjk' THEN plainto_tsquery('simple'::regconfig, kb_cjk_pairs(kb_fold(coalesce(body, ''))))
            WHEN config IN ({_IN}) THEN (SELECT coalesce(string_agg({_QUOTED}, ' & '), '')::tsquery
                                           FROM unnest(to_tsvector(config::regconfig, kb_fold(coalesce(body, '')))))
            ELSE plainto_tsquery(config::regconfig, kb_fold(coalesce(body, ''))) END;
"""

_LEX_AT = PREVIOUS.FUNCTIONS.index("CREATE OR REPLACE FUNCTION kb_lex")
PREVIOUS_FUNCTIONS = (
    PREVIOUS.FUNCTIONS[_LEX_AT:] + "\nDROP FUNCTION kb_unaccented(tsvector);\n"
)  # 0032's

# a passage whose stored vector the functions lex otherwise: the update recomputes it, the trigger follows
RELEX_UNACCENTED = f"""
UPDATE kb_chunk SET search_config = search_config
 WHERE search_config IN ({_IN}) AND search_vector IS DISTINCT FROM kb_search_vector(search_config, title, text);
"""


def require_unaccent(apps, schema_editor):
    """Stop migrate with instructions when the server cannot provide the unaccent dictionary."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'unaccent'")
        if cursor.fetchone() is None:
            raise RuntimeError(
                "This PostgreSQL server has no unaccent extension, which text search in French, Italian, "
                "Portuguese, Romanian and Spanish needs. Install PostgreSQL's contrib modules on the server "
                "(Debian/Ubuntu ship them in postgresql-<major>, others in postgresql-contrib; managed "
                "services: enable 'unaccent'), or unset DATABASE_URL to use the embedded server, which ships it."
            )


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0034_namespace_relexing"),
    ]

    operations = [
        migrations.RunPython(require_unaccent, migrations.RunPython.noop),
        # never dropped going back: the server may have had it before, for other uses
        migrations.RunSQL("CREATE EXTENSION IF NOT EXISTS unaccent", migrations.RunSQL.noop),
        migrations.RunSQL(FUNCTIONS + RELEX_UNACCENTED, PREVIOUS_FUNCTIONS + RELEX_UNACCENTED),
    ]
