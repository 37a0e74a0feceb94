"""Spelling corrections drawn from a namespace's own vocabulary, for the no-results state.

A word is misspelt when none of its stems occurs in the namespace (CJK pairs are not corrected). The
correction is the nearest lexeme by edit distance (1 up to seven letters, else 2; same first letter,
which bounds the candidates to one index range of `kb_chunk_term`), or the longest lexeme that
begins the stem (`shorter_stems`), or else a stem of a spelling one edit from the typed word
(`one_edit`): a typo can change how the stemmer cuts a word. It is shown as the namespace's own text
spells it ("policy" for `polici`).
"""

from __future__ import annotations

import string
from collections.abc import Collection, Mapping

from kb.languages import SEGMENTED
from kb.lookalikes import plain_letters
from kb.replicas import read_connection
from retrieval.query import WORD_RE
from retrieval.query_words import namespace_configs, passages_holding

MAX_WORDS = 12  # a longer query is not corrected: it is prose, not a mistyped search
MAX_CANDIDATES = 20000
SURFACE_FROM = 5  # passages read for the way the text writes a correction
NEAR_KEPT = 5  # stems at the nearest distance whose written words are compared with what was typed


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edit distance of `a` and `b` counting a swap of neighbouring letters as one edit (optimal
    string alignment), or `limit + 1` once it must exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def allowed_distance(word: str) -> int:
    """One edit for words of up to seven letters, two for longer ones: a second edit on a short
    word reaches a different word ("crawler" -> "caller") more often than the intended one."""
    return 1 if len(word) <= 7 else 2


def closest(stem: str, candidates: list[tuple[str, int]], keep: int = 1) -> list[str]:
    """The candidate lexemes nearest to `stem` within its allowed distance, at most `keep`, all at
    that one distance, most frequent first: stems near alike ("engn" is one edit from both `eng`
    and `engin`) are told apart by how the text writes them, against what was typed."""
    limit = allowed_distance(stem)
    scored = sorted(
        (distance, -frequency, lexeme)
        for lexeme, frequency in candidates
        if 0 < (distance := edit_distance(stem, lexeme, limit)) <= limit
    )
    return [lexeme for distance, _, lexeme in scored if distance == scored[0][0]][:keep]


def shorter_stems(stem: str) -> list[str]:
    """The beginnings of `stem` a stemmer may have cut it to, longest first: at least four letters
    and half the stem. A word typed without its accent can keep a suffix the stemmer strips only
    accented (Portuguese "configuracao" stems to `configuraca`, "configuração" to `configur`;
    French "securite" to `securit`, "sécurité" to `secur`), so the known stem begins the typed
    one."""
    return [stem[:end] for end in range(len(stem) - 1, max(4, (len(stem) + 1) // 2) - 1, -1)]


def one_edit(word: str) -> list[str]:
    """The spellings one edit from `word`, its first letter kept (as corrections keep it): a
    letter deleted, two neighbours swapped, one replaced or one inserted, from the Latin letters
    when the word is written in them, and the word's own letters."""
    letters = sorted(
        set(word) | (set(string.ascii_lowercase) if all(c <= "\u024f" for c in word) else set())
    )
    head, tail = word[0], word[1:]
    found = {head + tail[:i] + tail[i + 1 :] for i in range(len(tail))}
    found |= {head + tail[:i] + tail[i + 1] + tail[i] + tail[i + 2 :] for i in range(len(tail) - 1)}
    found |= {head + tail[:i] + c + tail[i + 1 :] for i in range(len(tail)) for c in letters}
    found |= {head + tail[:i] + c + tail[i:] for i in range(len(tail) + 1) for c in letters}
    found.discard(word)
    return sorted(found)


def _apart(typed: str, word: str) -> tuple[int, int]:
    """How far a correction is from what was typed: accents aside first, then as written."""
    return edit_distance(plain_letters(typed), plain_letters(word), 99), edit_distance(
        typed, word, 99
    )


def surface_form(
    lexeme: str, typed: str, text: str, stems: Mapping[str, Collection[str]] | None = None
) -> str:
    """The word of `text` of `lexeme`'s family nearest to what was typed: one that stems to it
    (`stems`: each word's lexemes as the namespace lexes it, `_stems_of`; the stemmer may change a
    word's end, so "policy" is `polici`) or one that starts with it, accents aside (Romance
    lexemes are unaccented); the lexeme itself when no word is either."""
    words = {w.lower() for w in WORD_RE.findall(text)}
    stem = plain_letters(lexeme)
    spelt = {
        w for w in words if lexeme in (stems or {}).get(w, ()) or plain_letters(w).startswith(stem)
    }
    if not spelt:
        return lexeme
    return min(spelt, key=lambda w: (*_apart(typed, w), len(w), w))


def _stems_of(cursor, texts: Mapping[str, str], configs: list[str]) -> dict[str, set[str]]:
    """The lexemes of each word of `texts` that may stem to the lexeme it is keyed by (it shares
    the lexeme's first letters but two, accents aside), in each of `configs`. One statement."""
    words: set[str] = set()
    for lexeme, text in texts.items():
        start = plain_letters(lexeme)[: max(2, len(lexeme) - 2)]
        words |= {
            w.lower() for w in WORD_RE.findall(text) if plain_letters(w.lower()).startswith(start)
        }
    if not words:
        return {}
    cursor.execute(
        "SELECT w, tsvector_to_array(kb_lex(c, w)) FROM unnest(%s::text[]) AS q(w), "
        "unnest(%s::text[]) AS k(c)",
        [sorted(words), configs],
    )
    stems: dict[str, set[str]] = {}
    for word, lexemes in cursor.fetchall():
        stems.setdefault(word, set()).update(lexemes)
    return stems


def _known_near(cursor, namespace_id: int, word: str, configs: list[str]) -> list[str]:
    """The namespace's lexemes that spellings one edit from `word` stem to, the NEAR_KEPT held by
    the most passages first (counted up to MAX_CANDIDATES postings). Two statements."""
    cursor.execute(
        "SELECT DISTINCT l FROM unnest(%s::text[]) AS q(w), unnest(%s::text[]) AS k(c), "
        "unnest(tsvector_to_array(kb_lex(c, w))) AS l",
        [one_edit(word), configs],
    )
    stems = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT lexeme, count(*) FROM (SELECT lexeme FROM kb_chunk_term WHERE namespace_id = %s "
        "AND lexeme = ANY(%s) LIMIT %s) t GROUP BY lexeme ORDER BY count(*) DESC, lexeme LIMIT %s",
        [namespace_id, stems, MAX_CANDIDATES, NEAR_KEPT],
    )
    return [row[0] for row in cursor.fetchall()]


def correct_query(namespace_id: int, query: str) -> str | None:
    """The query with each misspelt word replaced by the namespace's nearest word, or None when
    no word needs (or finds) a correction."""
    words = WORD_RE.findall(query)
    if not words or len(words) > MAX_WORDS:
        return None
    configs = [
        c for c in namespace_configs(namespace_id, query) if c != SEGMENTED
    ]  # as the channel lexes it
    if not configs:
        return None
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT w, tsvector_to_array(kb_lex(c, w)) FROM unnest(%s::text[]) WITH ORDINALITY AS "
            "q(w, n), unnest(%s::text[]) WITH ORDINALITY AS k(c, m) ORDER BY n, m",
            [[w.lower() for w in words], configs],
        )
        stems: dict[
            str, list[str]
        ] = {}  # each word's stem per configuration, the one of most passages first
        for word, lexemes in cursor.fetchall():
            if lexemes:
                stems.setdefault(word, []).append(lexemes[0])
        if not stems:
            return None
        cursor.execute(
            "SELECT DISTINCT lexeme FROM kb_chunk_term WHERE namespace_id = %s AND lexeme = ANY(%s)",  # noqa: E501
            [namespace_id, list({stem for found in stems.values() for stem in found})],
        )
        known = {row[0] for row in cursor.fetchall()}
        replacements: dict[str, str] = {}
        for word, found in stems.items():
            stem = found[0]
            if known.intersection(found) or len(stem) < 3:
                continue
            limit = allowed_distance(stem)
            first, after = stem[0], chr(ord(stem[0]) + 1)
            cursor.execute(
                "SELECT lexeme, count(*) FROM (SELECT lexeme FROM kb_chunk_term WHERE namespace_id "
                "= %s AND lexeme >= %s AND lexeme < %s AND length(lexeme) BETWEEN %s AND %s LIMIT "
                "%s) t GROUP BY lexeme",
                [namespace_id, first, after, len(stem) - limit, len(stem) + limit, MAX_CANDIDATES],
            )
            near = closest(stem, cursor.fetchall(), NEAR_KEPT)
            cursor.execute(
                "SELECT b.lexeme FROM unnest(%s::text[]) WITH ORDINALITY AS b(lexeme, n) WHERE "
                "EXISTS (SELECT 1 FROM kb_chunk_term t WHERE t.namespace_id = %s AND t.lexeme = "
                "b.lexeme) ORDER BY b.n LIMIT 1",
                [shorter_stems(stem), namespace_id],
            )  # one probe a beginning
            begins = cursor.fetchone()
            lexemes = list(dict.fromkeys(found for found in (*near, begins and begins[0]) if found))
            respelt = not lexemes
            if respelt:
                lexemes = _known_near(cursor, namespace_id, word, configs)
            texts = passages_holding(namespace_id, lexemes, SURFACE_FROM) if lexemes else {}
            stems_of = _stems_of(cursor, texts, configs)
            surfaces = [
                surface_form(lexeme, word, texts.get(lexeme) or lexeme, stems_of)
                for lexeme in lexemes
            ]
            if respelt:  # a stem one edit away can be another word's ("neurlaation": `neural`)
                surfaces = [
                    surface
                    for surface in surfaces
                    if _apart(word, surface)[0] <= allowed_distance(word)
                ]
            if surfaces:
                replacements[word] = min(surfaces, key=lambda surface: _apart(word, surface))
    if not replacements:
        return None
    return WORD_RE.sub(lambda m: _cased(replacements.get(m.group(0).lower()), m.group(0)), query)


def _cased(replacement: str | None, typed: str) -> str:
    """The correction in the typed word's case: UPPER, Capitalised or as the text spells it."""
    if replacement is None:
        return typed
    if typed.isupper() and len(typed) > 1:
        return replacement.upper()
    if typed[0].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement
