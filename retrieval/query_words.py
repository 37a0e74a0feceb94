"""How a query's words are read for the words channel (retrieval/lexical.py): the lexemes
PostgreSQL's
parser gives them in the namespace's text search configurations, and, where the namespace holds
no passage with a word's own stem, the stem of its accented spelling (`restore_accents`) or the
two parts of a compound (`split_compounds`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kb.languages import DEFAULT_CONFIG, query_configs
from kb.lookalikes import accent_blind
from kb.replicas import read_connection
from kb.spellings import ACCENTS, COMPOUND_LINKS, accented_spellings, compound_splits
from retrieval import term_counts
from retrieval.query import WORD_RE, find_identifiers

MAX_QUERY_LEXEMES = 64


def query_lexemes(text: str, configs: tuple[str, ...] | list[str] = ()) -> list[tuple[str, int]]:
    """The query's lexemes with their counts in query order (the first 64), as PostgreSQL's
    parser reads them with each of `configs` (the namespace's: the configurations its passages
    are lexed with; the default one when it has none yet), through `kb_lex` as the passages are.
    A lexeme that two configurations give alike counts once. Built with to_tsvector, never
    to_tsquery, so no input can raise a tsquery syntax error."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT t.lexeme, max(coalesce(array_length(t.positions, 1), 1)) "
            "FROM unnest(%s::text[]) AS cfg(name), unnest(kb_lex(cfg.name, %s)) AS t "
            "GROUP BY t.lexeme ORDER BY min(t.positions[1]), t.lexeme LIMIT %s",
            [list(configs) or [DEFAULT_CONFIG], text, MAX_QUERY_LEXEMES],
        )
        return [(lexeme, int(count)) for lexeme, count in cursor.fetchall()]


def namespace_configs(namespace_id: int, query: str = "") -> tuple[str, ...]:
    """The text search configurations a namespace's queries (this `query`) are lexed with
    (`query_configs`)."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT language, passage_configs::text, document_languages::text, relexing FROM "
            "kb_namespace WHERE id = %s",
            [namespace_id],
        )
        row = cursor.fetchone()
    return (
        lexing_configs(row[0], json.loads(row[1]), json.loads(row[2]), query, row[3])
        if row
        else (DEFAULT_CONFIG,)
    )


def lexing_configs(
    language: str,
    passage_configs: dict[str, int],
    document_languages: dict[str, int],
    query: str,
    relexing: bool,
    identifiers: tuple[str, ...] | None = None,
) -> tuple[str, ...]:
    """`query_configs` for a query as search reads it: one naming an identifier is not placed in one
    language. `identifiers`: the query's, when the caller has found them already."""
    named = find_identifiers(query) if identifiers is None else identifiers
    return query_configs(
        language, passage_configs, document_languages, query, relexing, placeable=not named
    )


@dataclass(frozen=True)
class RestoredWord:
    """A word typed without accents whose own stem no passage holds, read as the stem of an
    accented spelling that passages do hold."""

    typed: str  # "distribucion"
    typed_lexeme: str  # `distribucion`: the stemmer recognises "-ción" only accented
    spelling: str  # "distribución": the spelling lexed, which may be no word ("extremités")
    lexeme: str  # `distribu`
    written: str = ""  # the word as the namespace's text writes it ("distribución", "extrémités")


@dataclass(frozen=True)
class SplitWord:
    """A compound whose own stem no passage holds, read as its two parts, which passages do hold."""

    typed: str  # "uhrzeit"
    typed_lexeme: str  # `uhrzeit`
    parts: tuple[str, str]  # ("uhr", "zeit"): the word cut in two, a linking letter left out
    lexemes: tuple[str, str]  # (`uhr`, `zeit`)


MAX_SPLIT_WORDS = 8  # compounds split per query
MAX_COMPOUND_LETTERS = (
    64  # a longer run of letters is not cut: bounds the parts lexed (about 2 a letter)
)


def split_compounds(
    namespace_id: int, query: str, configs: tuple[str, ...], unknown: set[str]
) -> tuple[SplitWord, ...]:
    """The query's compounds read as the two parts that passages hold (`compound_splits`).

    German "Uhrzeit" in a manual that writes "Uhr" and "Zeit" but never "Uhrzeit" is read as both.
    Only the query is split, and only a word whose stem is `unknown` in every one of `configs`: a
    compound the text holds is found as written. Where several cuts qualify, the one whose parts
    most passages hold (`choose_split`). Part frequencies are counted, not cached: most are no word
    of the namespace's.
    """
    splitting = [config for config in configs if config in COMPOUND_LINKS]
    words = [word for word in dict.fromkeys(WORD_RE.findall(query.lower())) if _compoundable(word)]
    words = words[:MAX_QUERY_LEXEMES]
    if not splitting or not words or not unknown:
        return ()
    pairs = [(word, config) for word in words for config in configs]
    stem_of = dict(zip(pairs, _stems(pairs), strict=True))
    # no passage holds the word in any configuration, nor is it a stopword in one
    compounds = [
        word for word in words if all(stem_of[(word, config)] in unknown for config in configs)
    ]
    compounds = compounds[:MAX_SPLIT_WORDS]
    options = {
        (word, config): compound_splits(word, config) for word in compounds for config in splitting
    }
    parts = list(
        dict.fromkeys(
            (part, config)
            for (_, config), splits in options.items()
            for split in splits
            for part in split
        )
    )
    if not parts:
        return ()
    part_lexeme = dict(zip(parts, _stems(parts), strict=True))
    counted = term_counts.count_terms(
        namespace_id, sorted({lexeme for lexeme in part_lexeme.values() if lexeme})
    )
    frequency = counted[3] if counted else {}
    read: dict[
        str, SplitWord
    ] = {}  # per typed stem: "uhrzeit" and "uhrzeiten" are one word to the namespace
    for word in compounds:
        chosen = choose_split(
            [
                (split, (part_lexeme[(split[0], config)], part_lexeme[(split[1], config)]), config)
                for config in splitting
                for split in options[(word, config)]
            ],
            frequency,
        )
        if chosen:
            split, lexemes, config = chosen
            read.setdefault(
                stem_of[(word, config)], SplitWord(word, stem_of[(word, config)], split, lexemes)
            )
    return tuple(read.values())


def choose_split(
    options: list[tuple[tuple[str, str], tuple[str | None, str | None], str]],
    frequency: dict[str, int],
) -> tuple[tuple[str, str], tuple[str, str], str] | None:
    """Of a word's cuts ((head, tail), their lexemes, the configuration), the one whose two parts
    the most passages hold: the greatest geometric mean of their document frequencies (Koehn and
    Knight 2003), the first on a tie; None when no cut has both parts in a passage. Pure."""
    best, best_score = None, 0.0
    for split, lexemes, config in options:
        if not (lexemes[0] and lexemes[1]):
            continue  # a part that is a stopword
        score = (frequency.get(lexemes[0], 0) * frequency.get(lexemes[1], 0)) ** 0.5
        if score > best_score:
            best, best_score = (split, (lexemes[0], lexemes[1]), config), score
    return best


def _compoundable(word: str) -> bool:
    """Letters of the Latin script only (the languages that write compounds as one word write in
    it), and few enough of them to cut."""
    return (
        word.isalpha()
        and len(word) <= MAX_COMPOUND_LETTERS
        and all(letter <= "\u024f" for letter in word)
    )


def _stems(pairs: list[tuple[str, str]]) -> list[str | None]:
    """Each (word, configuration)'s first lexeme as `kb_lex` reads it (None for a stopword), in
    order. One statement."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT (tsvector_to_array(kb_lex(t.config, t.word)))[1] "
            "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(word, config, n) ORDER BY t.n",  # noqa: E501
            [[word for word, _ in pairs], [config for _, config in pairs]],
        )
        return [row[0] for row in cursor.fetchall()]


MAX_RESTORED_WORDS = 8  # words respelt per query: bounds the spellings lexed (at most 264 a word)


def restore_accents(
    namespace_id: int, query: str, configs: tuple[str, ...], unknown: set[str]
) -> tuple[RestoredWord, ...]:
    """The query's words typed without accents, read as their likeliest accented spelling's stem.

    Spanish "distribucion" stems to `distribucion`, which no passage holds, where "distribución"
    stems to `distribu`. Only words whose stem is `unknown` are tried; the spelling that puts back
    the fewest accents and that the most passages hold wins.
    """
    folding = [config for config in configs if config in ACCENTS]
    words = [word for word in dict.fromkeys(WORD_RE.findall(query.lower())) if word.isascii()][
        :MAX_QUERY_LEXEMES
    ]
    if not folding or not words or not unknown:
        return ()
    pairs = [(word, config) for config in folding for word in words]
    respelt = [
        (word, config, stem)
        for (word, config), stem in zip(pairs, _stems(pairs), strict=True)
        if stem in unknown
    ][:MAX_RESTORED_WORDS]
    spellings = [
        (index, accents, spelt)
        for index, (word, config, _) in enumerate(respelt)
        for accents, spelt in accented_spellings(word, config)
    ]
    if not spellings:
        return ()
    read = _stems([(spelt, respelt[index][1]) for index, _, spelt in spellings])
    options = [
        (index, accents, spelt, lexeme)
        for (index, accents, spelt), lexeme in zip(spellings, read, strict=True)
        if lexeme and lexeme != respelt[index][2]
    ]
    if not options:
        return ()
    lexemes = [(lexeme, 1) for lexeme in dict.fromkeys(option[3] for option in options)]
    _, _, counted = term_counts.term_statistics(namespace_id, lexemes)
    frequency = {term.lexeme: term.document_frequency for term in counted}
    best: dict[str, tuple] = {}  # per unknown stem: (accents, -passages, lexeme, spelling, typed)
    for index, accents, spelt, lexeme in options:
        word, _, stem = respelt[index]
        key = (accents, -frequency.get(lexeme, 0), lexeme, spelt, word)
        if frequency.get(lexeme) and (stem not in best or key < best[stem]):
            best[stem] = key
    written = _written(namespace_id, {choice[2]: choice[4] for choice in best.values()})
    return tuple(
        RestoredWord(
            typed=choice[4],
            typed_lexeme=stem,
            spelling=choice[3],
            lexeme=choice[2],
            written=written.get(choice[2], ""),
        )
        for stem, choice in best.items()
    )


WRITTEN_FROM = 20  # passages read per restored word for the word as the text writes it


def _written(namespace_id: int, typed_by_lexeme: dict[str, str]) -> dict[str, str]:
    """Per lexeme, the typed word as the namespace's text writes it with its accents
    ("extrémités" for "extremites"), found in the first WRITTEN_FROM passages holding the lexeme;
    absent when none of them holds it (they hold other words of the stem). The spelling the
    restoration lexed can be no word at all ("extremités" has the fewest accents giving
    `extrem`)."""
    texts = passages_holding(namespace_id, list(typed_by_lexeme), WRITTEN_FROM)
    written = {}
    for lexeme, typed in typed_by_lexeme.items():
        found = re.search(accent_blind(typed), texts.get(lexeme) or "", re.IGNORECASE)
        if found:
            written[lexeme] = found.group(0).lower()
    return written


def passages_holding(namespace_id: int, lexemes: list[str], limit: int) -> dict[str, str]:
    """Per lexeme, the text of up to `limit` of the namespace's passages holding it, joined by a
    space (a lexeme no passage holds is absent): where a stem's words are read as the text writes
    them. One statement."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT r.lexeme, string_agg(c.text, ' ') FROM unnest(%s::text[]) AS r(lexeme) CROSS "
            "JOIN LATERAL (SELECT c.text FROM kb_chunk_term t JOIN kb_chunk c ON c.id = t.chunk_id "
            "WHERE t.namespace_id = %s AND t.lexeme = r.lexeme LIMIT %s) c GROUP BY r.lexeme",
            [lexemes, int(namespace_id), limit],
        )
        return dict(cursor.fetchall())
