"""A lexeme that losing its accents would leave empty keeps its characters, in French, Italian,
Portuguese, Romanian and Spanish (0035's folding), so lexing never writes an empty lexeme.

The `unaccent` dictionary drops every combining mark (U+0300 to U+0362 among others), and the
parser reads U+0345 COMBINING GREEK YPOGEGRAMMENI as a letter, which NFKC in `kb_fold` makes of
U+037A GREEK YPOGEGRAMMENI (the Spanish man page `iso_8859-7.7` lists it). Standing alone it was
a lexeme of marks only, folded to '', which PostgreSQL refuses ("syntax error in tsvector"): the
page could not be stored, and a query holding it failed. A lexeme of marks only has no letters to
lose its accents from, so it stays as written, as `kb.lookalikes.unaccented` leaves it in Python.

No stored passage is lexed again: every lexeme that folded to something folds as before, and a
passage holding one that did not could not be stored.
"""

import importlib

from django.db import migrations

UNACCENTING = importlib.import_module("kb.migrations.0035_romance_lexemes_lose_their_accents")
PREVIOUS = importlib.import_module("kb.migrations.0037_character_pairs_in_every_configuration")

# 0035's quoted lexeme without its accents, the lexeme itself when nothing would be left
_QUOTED = UNACCENTING._QUOTED.replace(
    "unaccent('unaccent'::regdictionary, lexeme)",
    "coalesce(nullif(unaccent('unaccent'::regdictionary, lexeme), ''), lexeme)",
)
assert _QUOTED != UNACCENTING._QUOTED

_UNACCENTED_AT = UNACCENTING.FUNCTIONS.index("CREATE OR REPLACE FUNCTION kb_unaccented")
_UNACCENTED = UNACCENTING.FUNCTIONS[
    _UNACCENTED_AT : UNACCENTING.FUNCTIONS.index("CREATE OR REPLACE FUNCTION kb_lex")
]
_QUERY = PREVIOUS.FUNCTIONS[PREVIOUS.FUNCTIONS.index("CREATE OR REPLACE FUNCTION kb_query") :]

FUNCTIONS = (_UNACCENTED + _QUERY).replace(UNACCENTING._QUOTED, _QUOTED)
PREVIOUS_FUNCTIONS = _UNACCENTED + _QUERY  # 0035's kb_unaccented, 0037's kb_query


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0044_answer_log"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS, PREVIOUS_FUNCTIONS),
    ]
