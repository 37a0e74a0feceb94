"""Passages are folded before they are lexed exactly as queries are (`retrieval.query.normalise_query`),
so a passage always meets a query pasted from it.

Queries were NFKC-normalised, print look-alikes folded (kb/lookalikes.py) and invisible format
characters (Unicode category Cf: zero-width spaces and joiners, soft hyphens, direction marks)
dropped; passages were lexed as stored. A Japanese passage's fullwidth `ＡＰＩ` was the lexeme
`ａｐｉ` while its query gave `api`, and a Persian word with a zero-width non-joiner (most Persian
sentences hold one) never matched itself. `kb_fold` does the same steps in the database, inside
`kb_lex` and `kb_query`; the stored text is unchanged (readers see what the document says). The
look-alikes are folded again after NFKC, which makes some (`½` becomes `1⁄2`), so folding twice
(a query: in Python, then in `kb_query`) gives what folding once does.

Two gaps of the character-pair split close with it: the katakana middle dot (`テスト・ケース`) is a
separator, not a character of a pair, and Han characters beyond the Basic Multilingual Plane
(`𠮷`) are paired like the others.

Every passage whose lexemes change is lexed again in place; finding them lexes every passage once
(10,676 passages in 1.5 s here, so about 2.5 minutes a million). Its generated search vector is
recomputed and the postings trigger replaces its postings and the namespace's BM25 statistics in
the same statement, so they stay exact.
"""

import importlib

from django.db import migrations

PREVIOUS = importlib.import_module("kb.migrations.0029_language_functions_restorable")

# Unicode category Cf (format characters; Unicode 14), as `normalise_query` drops them
FORMAT_CHARACTERS = (
    r"\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
# kb/lookalikes.py's one-character folds (its ligatures are NFKC's own)
LOOKALIKES_FROM = "\u2212\u2010\u2011\u2043\ufe63\uff0d\u02dc\u223c\uff5e\u2215\u2044\u2217\u02c6"
LOOKALIKES_TO = "------~~~//*^"
# Han, kana and Hangul, without the katakana middle dot (U+30FB), with the supplementary Han planes
CJK = (
    r"\u3040-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
    r"\U00020000-\U0003134f"
)

# 0029's character-pair split, its class changed
_PAIRS_AT = PREVIOUS.FUNCTIONS.index("CREATE OR REPLACE FUNCTION kb_cjk_pairs")
CJK_PAIRS = (
    PREVIOUS.FUNCTIONS[_PAIRS_AT : PREVIOUS.FUNCTIONS.index("CREATE OR REPLACE FUNCTION kb_lex")]
    .replace(PREVIOUS.CJK, CJK)
    .strip()
)

FUNCTIONS = rf"""
CREATE OR REPLACE FUNCTION kb_fold(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN translate(normalize(translate(regexp_replace(body, '[{FORMAT_CHARACTERS}]+', '', 'g'),
                                     '{LOOKALIKES_FROM}', '{LOOKALIKES_TO}'), NFKC),
                 '{LOOKALIKES_FROM}', '{LOOKALIKES_TO}');

{CJK_PAIRS}
CREATE OR REPLACE FUNCTION kb_lex(config text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN config = 'cjk' THEN to_tsvector('simple'::regconfig, kb_cjk_pairs(kb_fold(coalesce(body, ''))))
            ELSE to_tsvector(config::regconfig, kb_fold(coalesce(body, ''))) END;

CREATE OR REPLACE FUNCTION kb_query(config text, body text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN config = 'cjk' THEN plainto_tsquery('simple'::regconfig, kb_cjk_pairs(kb_fold(coalesce(body, ''))))
            ELSE plainto_tsquery(config::regconfig, kb_fold(coalesce(body, ''))) END;
"""

PREVIOUS_FUNCTIONS = (
    PREVIOUS.FUNCTIONS + "\nDROP FUNCTION kb_fold(text);\n"
)  # kb_lex no longer needs it

# a row whose stored vector the functions above would lex otherwise: the update recomputes the
# generated column, and the postings trigger follows
RELEX_CHANGED = """
UPDATE kb_chunk SET search_config = search_config
 WHERE search_vector IS DISTINCT FROM kb_search_vector(search_config, title, text);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0031_posting_list_lengths_per_namespace"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS + RELEX_CHANGED, PREVIOUS_FUNCTIONS + RELEX_CHANGED),
    ]
