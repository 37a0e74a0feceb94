"""The lexical channel: exact BM25 behind one interface (`lexical_search`: lexemes in, the top k
chunks with their raw BM25 and a report of how they were read out), so a native BM25 engine could
take its place on a server that has one.

Two ways to read the same postings, one answer:
- **packed**, when the namespace has packed posting lists (retrieval/posting_lists.py: every namespace
  of at least KB_POSTING_LISTS_MIN_CHUNKS chunks, built when an ingest run ends): each query
  term's postings arrive as two binary arrays (chunk offsets, frequencies; the chunks' lengths
  come from the namespace's array, kept per process), with the current postings of the chunks changed
  since the build from the table, and are ranked in memory: MaxScore over whole terms for a whole
  namespace (bm25.top_k_packed: the common terms are only looked up for the chunks that could
  still reach the top k), every posting scored for a source or document scope;
- **table** otherwise: one statement reads each term's postings from `kb_chunk_term` and sums
  the scores per chunk in PostgreSQL (about 0.7 µs a posting: fine below the lists' threshold).
Both rank by score rounded to 1e-6, then chunk id; `kb_bench --lexical-agreement` measures that
they agree and what each costs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass

from kb.languages import ACCENTS, COMPOUND_LINKS, DEFAULT_CONFIG, accented_spellings, compound_splits, query_configs
from kb.lookalikes import accent_blind
from kb.replicas import read_connection
from retrieval import bm25, posting_lists
from retrieval.channels import ChannelRow, Scope, named_where
from retrieval.query import WORD_RE, find_identifiers

MAX_QUERY_LEXEMES = 64
FIRST_SCOPE_BATCH = 1000  # packed and scoped: best chunks checked against the scope first, then 16x more
SCORE_ORDER = "round(score * 1e6) DESC, chunk_id"  # sums in another order differ in the last bits


@dataclass(frozen=True)
class LexicalReport:
    """How the channel read its hits: what the explanation shows."""

    mode: str  # "packed" | "table"
    postings_read: int
    terms: tuple[str, ...]  # the query's lexemes the namespace holds
    changed_chunks: int = 0  # packed: chunks changed since the lists were built, read from the table
    probed_terms: tuple[str, ...] = ()  # packed: terms whose postings were only looked up for candidates
    candidates: int = 0  # packed, with probed terms: chunks completed by those lookups
    configurations: tuple[str, ...] = ()  # the text search configurations the query was lexed with
    accents_restored: tuple["RestoredWord", ...] = ()  # words typed without accents, read as the text spells them
    compounds_split: tuple["SplitWord", ...] = ()  # compounds no passage holds, read as their parts


@dataclass(frozen=True)
class LexicalResult:
    rows: list[ChannelRow]  # best first, raw BM25
    report: LexicalReport


def lexical_channel(scope: Scope, lexemes: list[tuple[str, int]], k: int,
                    statistics: "TermStatistics | None" = None) -> list[ChannelRow]:
    return lexical_search(scope, lexemes, k, statistics).rows


def lexical_search(scope: Scope, lexemes: list[tuple[str, int]], k: int,
                   statistics: "TermStatistics | None" = None, packed: bool = True, *,
                   configurations: tuple[str, ...] = (), query: str = "") -> LexicalResult:
    """The BM25 top k: IDF from the namespace's document frequencies, TF saturation k1, length
    normalisation b; the query is an OR over its lexemes. `packed=False` reads the table even
    where packed lists exist (the benchmark's reference). `configurations`, those the lexemes
    were made with, are named in the report; with the `query` they were lexed from, words typed
    without accents are read as the namespace spells them (`term_statistics`)."""
    statistics = statistics or term_statistics(scope, lexemes, query, tuple(configurations))
    found = _search(scope, lexemes, k, statistics, packed)
    return LexicalResult(found.rows, dataclasses.replace(found.report, configurations=tuple(configurations),
                                                         accents_restored=statistics.restored,
                                                         compounds_split=statistics.split))


def _search(scope: Scope, lexemes: list[tuple[str, int]], k: int, statistics: "TermStatistics | None",
            packed: bool) -> LexicalResult:
    if not lexemes or k <= 0:
        return LexicalResult([], LexicalReport("table", 0, ()))
    statistics = statistics or term_statistics(scope, lexemes)
    terms = tuple(t.lexeme for t in statistics.terms)
    if not terms:
        return LexicalResult([], LexicalReport("table", 0, ()))
    read = posting_lists.read(scope.namespace_id, list(terms)) if packed else None
    if read is None:
        return LexicalResult(_table(scope, statistics, k),
                             LexicalReport("table", sum(t.document_frequency for t in statistics.terms), terms))
    weights = {t.lexeme: t.weight(statistics.chunk_count) for t in statistics.terms}
    if scope.source_ids or scope.document_ids:
        ids, scores = bm25.score_postings(read.packed, read.current, read.changed_ids, weights,
                                          statistics.average_length)
        return LexicalResult(_best_in_scope(scope, ids, scores, k),
                             LexicalReport("packed", read.postings, terms, len(read.changed_ids)))
    top = bm25.top_k_packed(read.packed, read.current, read.changed_ids, weights, statistics.average_length, k)
    rows = [ChannelRow(int(i), float(s)) for i, s in zip(top.ids.tolist(), top.scores.tolist(), strict=True)]
    return LexicalResult(rows, LexicalReport("packed", read.postings, terms, len(read.changed_ids),
                                             top.probed_terms, top.candidates))


def _best_in_scope(scope: Scope, ids, scores, k: int) -> list[ChannelRow]:
    """The k best of the scored chunks that lie in the source or document scope, checked on the
    best FIRST_SCOPE_BATCH, then on 16 times as many, until k are found or every scored chunk
    was checked."""
    n = max(FIRST_SCOPE_BATCH, 4 * k)
    while True:
        best_ids, best_scores = bm25.best_first(ids, scores, n)
        inside = _in_scope(scope, best_ids.tolist())
        kept = [(i, s) for i, s in zip(best_ids.tolist(), best_scores.tolist(), strict=True) if i in inside]
        if len(kept) >= k or len(best_ids) >= len(ids):
            return [ChannelRow(int(i), float(s)) for i, s in kept[:k]]
        n *= 16


def _in_scope(scope: Scope, chunk_ids: list[int]) -> set[int]:
    where, params = scope.where("c")
    with read_connection().cursor() as cursor:
        cursor.execute(f"SELECT c.id FROM kb_chunk c WHERE c.id = ANY(%s) AND {where}", [chunk_ids, *params])
        return {row[0] for row in cursor.fetchall()}


_IMPACT = f"t.tf * {bm25.K1 + 1} / (t.tf + {bm25.K1} * (1 - {bm25.B} + {bm25.B} * t.doc_len / %(avgdl)s))"


def _table(scope: Scope, statistics: "TermStatistics", k: int) -> list[ChannelRow]:
    """Two statements in all: the statistics (counted before) and this one, which reads each
    term's postings once, sums the weighted impacts per chunk and keeps the best k. Each term's
    postings are read through a LATERAL lookup of the primary key, so the planner cannot misjudge
    the term list and scan every posting of the namespace instead."""
    terms = statistics.terms
    join, scope_params = _scope_join(scope)
    sql = f"""
        WITH terms(lexeme, w) AS (SELECT * FROM unnest(%(lexemes)s::text[], %(weights)s::float8[]))
        SELECT chunk_id, score FROM (
            SELECT t.chunk_id, sum(q.w * {_IMPACT}) AS score
            FROM terms q CROSS JOIN LATERAL (SELECT t.chunk_id, t.tf, t.doc_len FROM kb_chunk_term t
                                             WHERE t.namespace_id = %(ns)s AND t.lexeme = q.lexeme) t {join}
            GROUP BY t.chunk_id) scored
        ORDER BY {SCORE_ORDER}
        LIMIT %(k)s"""
    params = {"lexemes": [t.lexeme for t in terms], "weights": [t.weight(statistics.chunk_count) for t in terms],
              "avgdl": statistics.average_length, "ns": scope.namespace_id, "k": k, **scope_params}
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return [ChannelRow(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]


def _scope_join(scope: Scope) -> tuple[str, dict]:
    """A join restricting postings to the scope's sources or documents (none for a whole namespace)."""
    if not (scope.source_ids or scope.document_ids):
        return "", {}
    scope_sql, scope_params = named_where(scope, "c")
    return f"JOIN kb_chunk c ON c.id = t.chunk_id AND {scope_sql}", scope_params


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
    """The text search configurations a namespace's queries (this `query`) are lexed with (`query_configs`)."""
    with read_connection().cursor() as cursor:
        cursor.execute("SELECT language, passage_configs::text, document_languages::text, relexing FROM kb_namespace"
                       " WHERE id = %s", [namespace_id])
        row = cursor.fetchone()
    return lexing_configs(row[0], json.loads(row[1]), json.loads(row[2]), query, row[3]) if row else (DEFAULT_CONFIG,)


def lexing_configs(language: str, passage_configs: dict[str, int], document_languages: dict[str, int], query: str,
                   relexing: bool, identifiers: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """`query_configs` for a query as search reads it: one naming an identifier is not placed in one
    language. `identifiers`: the query's, when the caller has found them already."""
    named = find_identifiers(query) if identifiers is None else identifiers
    return query_configs(language, passage_configs, document_languages, query, relexing, placeable=not named)


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


@dataclass(frozen=True)
class TermStatistics:
    chunk_count: float
    average_length: float
    terms: list[bm25.Term]  # the query's lexemes the namespace holds, with their frequencies
    restored: tuple[RestoredWord, ...] = ()  # words typed without accents, read as their accented spelling
    split: tuple[SplitWord, ...] = ()  # compounds no passage holds, read as their parts

    @property
    def read_as(self) -> tuple[str, ...]:
        """The lexemes the query's words were read as, where the namespace lacks their own."""
        return (*(word.lexeme for word in self.restored), *(part for word in self.split for part in word.lexemes))

    @property
    def query_idf(self) -> float:
        """The sum of the query terms' weights: what a passage with every term once, at average
        length, scores (the ranker's measure of how much of the query a lexical hit covers)."""
        return sum(term.weight(self.chunk_count) for term in self.terms)


def term_statistics(scope: Scope, lexemes: list[tuple[str, int]], query: str = "",
                    configs: tuple[str, ...] = ()) -> TermStatistics:
    """The namespace's statistics for the query's lexemes. With the `query` and the `configs` it was
    lexed with, a word typed without accents whose stem the namespace lacks is read as the stem
    of its accented spelling, where the namespace holds that (`restore_accents`), and a compound
    whose stem it lacks as the two parts it holds (`split_compounds`); a stem read so that the
    query holds already counts once, as two configurations' alike lexemes do."""
    chunk_count, avgdl, terms = _term_statistics(scope.namespace_id, lexemes) if lexemes else (0.0, 1.0, [])
    unknown = {t.lexeme for t in terms if t.document_frequency == 0}
    restored = restore_accents(scope.namespace_id, query, configs, unknown) if unknown and query else ()
    unread = unknown - {word.typed_lexeme for word in restored}
    split = split_compounds(scope.namespace_id, query, configs, unread) if unread and query else ()
    if restored or split:
        readings = {word.typed_lexeme: (word.lexeme,) for word in restored} | \
            {word.typed_lexeme: word.lexemes for word in split}
        merged: dict[str, int] = {}
        for lexeme, count in lexemes:
            for read in readings.get(lexeme, (lexeme,)):
                merged[read] = max(merged.get(read, 0), count)
        chunk_count, avgdl, terms = _term_statistics(scope.namespace_id, list(merged.items()))
    return TermStatistics(chunk_count, avgdl, [t for t in terms if t.document_frequency > 0], restored, split)


MAX_SPLIT_WORDS = 8  # compounds split per query
MAX_COMPOUND_LETTERS = 64  # a longer run of letters is not cut: bounds the parts lexed (about 2 a letter)


def split_compounds(namespace_id: int, query: str, configs: tuple[str, ...],
                    unknown: set[str]) -> tuple[SplitWord, ...]:
    """The query's compounds, in a configuration whose language writes compounds as one word
    (`kb.languages.COMPOUND_LINKS`), each read as the two parts (`compound_splits`) that passages
    hold; where several cuts qualify, the one whose parts the most passages hold (`choose_split`).
    German "Uhrzeit" in a manual that writes "Uhr" and "Zeit" but never "Uhrzeit" is read as both.
    Only the query is split, and only a word whose stem in every one of `configs` is `unknown` to
    the namespace: a compound the text holds is found as written. A word of Latin letters only, at
    most MAX_COMPOUND_LETTERS; the first MAX_SPLIT_WORDS such words. Three statements: the words'
    stems, the parts' stems, and those stems' document frequencies (counted, not cached: most
    parts are no word of the namespace's)."""
    splitting = [config for config in configs if config in COMPOUND_LINKS]
    words = [word for word in dict.fromkeys(WORD_RE.findall(query.lower())) if _compoundable(word)]
    words = words[:MAX_QUERY_LEXEMES]
    if not splitting or not words or not unknown:
        return ()
    pairs = [(word, config) for word in words for config in configs]
    stem_of = dict(zip(pairs, _stems(pairs), strict=True))
    # no passage holds the word in any configuration, nor is it a stopword in one
    compounds = [word for word in words if all(stem_of[(word, config)] in unknown for config in configs)]
    compounds = compounds[:MAX_SPLIT_WORDS]
    options = {(word, config): compound_splits(word, config) for word in compounds for config in splitting}
    parts = list(dict.fromkeys((part, config) for (_, config), splits in options.items()
                               for split in splits for part in split))
    if not parts:
        return ()
    part_lexeme = dict(zip(parts, _stems(parts), strict=True))
    counted = _count_terms(namespace_id, sorted({lexeme for lexeme in part_lexeme.values() if lexeme}))
    frequency = counted[3] if counted else {}
    read: dict[str, SplitWord] = {}  # per typed stem: "uhrzeit" and "uhrzeiten" are one word to the namespace
    for word in compounds:
        chosen = choose_split([(split, (part_lexeme[(split[0], config)], part_lexeme[(split[1], config)]), config)
                               for config in splitting for split in options[(word, config)]], frequency)
        if chosen:
            split, lexemes, config = chosen
            read.setdefault(stem_of[(word, config)], SplitWord(word, stem_of[(word, config)], split, lexemes))
    return tuple(read.values())


def choose_split(options: list[tuple[tuple[str, str], tuple[str | None, str | None], str]],
                 frequency: dict[str, int]) -> tuple[tuple[str, str], tuple[str, str], str] | None:
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
    return word.isalpha() and len(word) <= MAX_COMPOUND_LETTERS and all(letter <= "\u024f" for letter in word)


def _stems(pairs: list[tuple[str, str]]) -> list[str | None]:
    """Each (word, configuration)'s first lexeme as `kb_lex` reads it (None for a stopword), in order. One statement."""
    with read_connection().cursor() as cursor:
        cursor.execute("SELECT (tsvector_to_array(kb_lex(t.config, t.word)))[1] "
                       "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(word, config, n) ORDER BY t.n",
                       [[word for word, _ in pairs], [config for _, config in pairs]])
        return [row[0] for row in cursor.fetchall()]


MAX_RESTORED_WORDS = 8  # words respelt per query: bounds the spellings lexed (at most 264 a word)


def restore_accents(namespace_id: int, query: str, configs: tuple[str, ...],
                    unknown: set[str]) -> tuple[RestoredWord, ...]:
    """The query's words typed without accents, in a configuration whose stems lose theirs
    (`kb.languages.ACCENTS`), whose stem is `unknown` to the namespace, each read as the stem of
    its accented spelling (`accented_spellings`) that puts back the fewest accents and that the
    most passages hold. Spanish "distribucion" stems to `distribucion`, which no passage holds,
    where "distribución" stems to `distribu`. Four statements: the typed words' stems (the first
    MAX_QUERY_LEXEMES words), the spellings of the first MAX_RESTORED_WORDS whose stem is unknown,
    the document frequencies of the stems those give, and a few passages holding each stem read,
    for the word as the text writes it (`_written`)."""
    folding = [config for config in configs if config in ACCENTS]
    words = [word for word in dict.fromkeys(WORD_RE.findall(query.lower())) if word.isascii()][:MAX_QUERY_LEXEMES]
    if not folding or not words or not unknown:
        return ()
    pairs = [(word, config) for config in folding for word in words]
    respelt = [(word, config, stem) for (word, config), stem in zip(pairs, _stems(pairs), strict=True)
               if stem in unknown][:MAX_RESTORED_WORDS]
    spellings = [(index, accents, spelt) for index, (word, config, _) in enumerate(respelt)
                 for accents, spelt in accented_spellings(word, config)]
    if not spellings:
        return ()
    read = _stems([(spelt, respelt[index][1]) for index, _, spelt in spellings])
    options = [(index, accents, spelt, lexeme) for (index, accents, spelt), lexeme in zip(spellings, read, strict=True)
               if lexeme and lexeme != respelt[index][2]]
    if not options:
        return ()
    _, _, counted = _term_statistics(namespace_id, [(lexeme, 1) for lexeme in dict.fromkeys(o[3] for o in options)])
    frequency = {term.lexeme: term.document_frequency for term in counted}
    best: dict[str, tuple] = {}  # per unknown stem: (accents, -passages, lexeme, spelling, typed)
    for index, accents, spelt, lexeme in options:
        word, _, stem = respelt[index]
        key = (accents, -frequency.get(lexeme, 0), lexeme, spelt, word)
        if frequency.get(lexeme) and (stem not in best or key < best[stem]):
            best[stem] = key
    written = _written(namespace_id, {choice[2]: choice[4] for choice in best.values()})
    return tuple(RestoredWord(typed=choice[4], typed_lexeme=stem, spelling=choice[3], lexeme=choice[2],
                              written=written.get(choice[2], ""))
                 for stem, choice in best.items())


WRITTEN_FROM = 20  # passages read per restored word for the word as the text writes it


def _written(namespace_id: int, typed_by_lexeme: dict[str, str]) -> dict[str, str]:
    """Per lexeme, the typed word as the namespace's text writes it with its accents
    ("extrémités" for "extremites"), found in the first WRITTEN_FROM passages holding the lexeme;
    absent when none of them holds it (they hold other words of the stem). The spelling the
    restoration lexed can be no word at all ("extremités" has the fewest accents giving `extrem`)."""
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
        cursor.execute("SELECT r.lexeme, string_agg(c.text, ' ') FROM unnest(%s::text[]) AS r(lexeme) "
                       "CROSS JOIN LATERAL (SELECT c.text FROM kb_chunk_term t JOIN kb_chunk c ON c.id = t.chunk_id "
                       "WHERE t.namespace_id = %s AND t.lexeme = r.lexeme LIMIT %s) c GROUP BY r.lexeme",
                       [lexemes, int(namespace_id), limit])
        return dict(cursor.fetchall())


# document frequencies already counted, per namespace generation (see bm25.DocumentFrequencyCache)
DOCUMENT_FREQUENCIES = bm25.DocumentFrequencyCache()


def _term_statistics(namespace_id: int, lexemes: list[tuple[str, int]]) -> tuple[float, float, list[bm25.Term]]:
    """The namespace's chunk count and average length, and each lexeme's document frequency.

    Frequencies are counted from the postings' primary key (so no counter row is shared between
    writers) and cached per generation of the namespace's postings: a lexeme is counted again
    only after the namespace changed. The counts and the statistics row always come from one
    snapshot: when the generation moved since the cached counts, every lexeme is recounted."""
    words = [lexeme for lexeme, _ in lexemes]
    cached_generation, known = DOCUMENT_FREQUENCIES.lookup(namespace_id, words)
    statistics = _count_terms(namespace_id, [word for word in words if word not in known])
    if statistics is not None and statistics[2] != cached_generation and known:
        known = {}
        statistics = _count_terms(namespace_id, words)
    if statistics is None:
        return 0.0, 1.0, []
    chunk_count, avgdl, generation, counted = statistics
    DOCUMENT_FREQUENCIES.store(namespace_id, generation, counted)
    frequencies = {**known, **counted}
    return chunk_count, avgdl, [bm25.Term(lexeme, qtf, frequencies[lexeme]) for lexeme, qtf in lexemes]


def _count_terms(namespace_id: int, words: list[str]) -> tuple[float, float, int, dict[str, int]] | None:
    """(chunk count, average length, generation, {word: document frequency}) of a namespace in
    one statement, or None when it has never held a chunk. Where the namespace's packed lists
    hold every change (none recorded since the build), a frequency is the list's length plus the
    term's postings in newer chunks; otherwise it is counted from the postings' primary key."""
    namespace = int(namespace_id)
    counted = f"(SELECT count(*) FROM kb_chunk_term t WHERE t.namespace_id = {namespace} AND t.lexeme = q.lexeme"
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""WITH b AS (SELECT max_chunk_id FROM kb_posting_list_build WHERE namespace_id = {namespace}
                             AND NOT EXISTS (SELECT 1 FROM kb_posting_list_changed WHERE namespace_id = {namespace}))
                SELECT s.chunk_count, greatest(s.total_len / nullif(s.chunk_count, 0), 1), s.generation,
                       ARRAY(SELECT CASE WHEN b.max_chunk_id IS NULL THEN {counted})
                                    ELSE coalesce((SELECT l.postings FROM kb_posting_list l
                                                   WHERE l.namespace_id = {namespace} AND l.lexeme = q.lexeme), 0)
                                         + {counted} AND t.chunk_id > b.max_chunk_id) END
                             FROM unnest(%s::text[]) WITH ORDINALITY AS q(lexeme, i) LEFT JOIN b ON true
                             ORDER BY q.i)
                FROM kb_namespace_stats s WHERE s.namespace_id = {namespace}""",
            [words],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    chunk_count, avgdl, generation, counts = row
    return float(chunk_count), float(avgdl), int(generation), dict(zip(words, map(int, counts), strict=False))
