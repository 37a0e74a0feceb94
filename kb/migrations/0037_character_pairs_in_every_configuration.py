"""Han, kana and Hangul are split into character pairs in every text search configuration, not
only in `cjk`, so a Korean, Japanese or Chinese passage is found in a page detected as another
language.

A page's configuration follows the language detected for the whole page, and partly translated
manuals are common: the Korean Debian FAQ (`debian-faq-ko`) holds two chapters detected as
English whose headings and some paragraphs are Korean. Lexed in `english`, "패키지를 보류하는 3가지
방법" was the lexemes `패키지를`, `보류하는`, … while a Korean query is lexed in pairs (`패키`, `키지`,
…), so no Korean query could reach those passages by their words. Now every configuration pairs
the runs of those scripts first, as `cjk` does, and lexes the rest of the text as before; text
without them is lexed exactly as before (the pairing only runs when the text holds one).

Each passage outside `cjk` whose text or title holds such a character is lexed again in place:
its generated search vector is recomputed, and the postings trigger replaces its postings and the
namespace's BM25 statistics in the same statement, so they stay exact. Every passage outside `cjk`
is scanned by a regular expression to find them (0.2 s for 23,009 passages here, about 9 s a
million), and only those are lexed again (153 here).
"""

import importlib

from django.db import migrations

FOLDING = importlib.import_module("kb.migrations.0032_lexing_folds_like_queries")
PREVIOUS = importlib.import_module("kb.migrations.0035_romance_lexemes_lose_their_accents")

CJK = FOLDING.CJK
_IN = PREVIOUS._IN
_QUOTED = PREVIOUS._QUOTED

FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION kb_paired(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN body ~ '[{CJK}]' THEN kb_cjk_pairs(body) ELSE body END;

CREATE OR REPLACE FUNCTION kb_lex(config text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN config = 'cjk' THEN to_tsvector('simple'::regconfig, kb_cjk_pairs(kb_fold(coalesce(body, ''))))
            WHEN config IN ({_IN}) THEN
                 kb_unaccented(to_tsvector(config::regconfig, kb_paired(kb_fold(coalesce(body, '')))))
            ELSE to_tsvector(config::regconfig, kb_paired(kb_fold(coalesce(body, '')))) END;

CREATE OR REPLACE FUNCTION kb_query(config text, body text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN config = 'cjk' THEN plainto_tsquery('simple'::regconfig, kb_cjk_pairs(kb_fold(coalesce(body, ''))))
            WHEN config IN ({_IN}) THEN (SELECT coalesce(string_agg({_QUOTED}, ' & '), '')::tsquery
                                           FROM unnest(to_tsvector(config::regconfig,
                                                                   kb_paired(kb_fold(coalesce(body, ''))))))
            ELSE plainto_tsquery(config::regconfig, kb_paired(kb_fold(coalesce(body, '')))) END;
"""

_LEX_AT = PREVIOUS.FUNCTIONS.index("CREATE OR REPLACE FUNCTION kb_lex")
PREVIOUS_FUNCTIONS = PREVIOUS.FUNCTIONS[_LEX_AT:] + "\nDROP FUNCTION kb_paired(text);\n"  # 0035's

# a passage outside `cjk` holding one of those characters, whose stored vector the functions lex otherwise
RELEX_PAIRED = f"""
UPDATE kb_chunk SET search_config = search_config
 WHERE search_config <> 'cjk' AND (text ~ '[{CJK}]' OR title ~ '[{CJK}]')
   AND search_vector IS DISTINCT FROM kb_search_vector(search_config, title, text);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0036_language_choices_order"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS + RELEX_PAIRED, PREVIOUS_FUNCTIONS + RELEX_PAIRED),
    ]
