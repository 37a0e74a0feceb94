"""The lexical channel: exact BM25 behind one interface (`lexical_search`), lexemes in, top k out.

One interface so a native BM25 engine could take its place. Two reads of the same postings, one
answer: **packed** lists (retrieval/posting_lists.py) ranked in memory, with MaxScore for a whole
namespace (`bm25.top_k_packed`) and the postings of chunks changed since the build read from the
table; or the **table** alone, summed in PostgreSQL (about 0.7 µs a posting, fine below the lists'
threshold). Both rank by score rounded to 1e-6, then chunk id; `kb_bench --lexical-agreement` checks
they agree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kb.replicas import read_connection
from retrieval import bm25, posting_lists, term_counts
from retrieval.channels import ChannelRow
from retrieval.query_words import RestoredWord, SplitWord, restore_accents, split_compounds
from retrieval.scope import Scope, named_where

FIRST_SCOPE_BATCH = (
    1000  # packed and scoped: best chunks checked against the scope first, then 16x more
)
SCORE_ORDER = "round(score * 1e6) DESC, chunk_id"  # sums in another order differ in the last bits


@dataclass(frozen=True)
class LexicalReport:
    """How the channel read its hits: what the explanation shows."""

    mode: str  # "packed" | "table"
    postings_read: int
    terms: tuple[str, ...]  # the query's lexemes the namespace holds
    changed_chunks: int = (
        0  # packed: chunks changed since the lists were built, read from the table
    )
    probed_terms: tuple[
        str, ...
    ] = ()  # packed: terms whose postings were only looked up for candidates
    candidates: int = 0  # packed, with probed terms: chunks completed by those lookups
    configurations: tuple[str, ...] = ()  # the text search configurations the query was lexed with
    accents_restored: tuple[
        RestoredWord, ...
    ] = ()  # words typed without accents, read as the text spells them
    compounds_split: tuple[SplitWord, ...] = ()  # compounds no passage holds, read as their parts


@dataclass(frozen=True)
class LexicalResult:
    rows: list[ChannelRow]  # best first, raw BM25
    report: LexicalReport


def lexical_channel(
    scope: Scope, lexemes: list[tuple[str, int]], k: int, statistics: "TermStatistics | None" = None
) -> list[ChannelRow]:
    return lexical_search(scope, lexemes, k, statistics).rows


def lexical_search(
    scope: Scope,
    lexemes: list[tuple[str, int]],
    k: int,
    statistics: "TermStatistics | None" = None,
    packed: bool = True,
    *,
    configurations: tuple[str, ...] = (),
    query: str = "",
) -> LexicalResult:
    """The BM25 top k: IDF from the namespace's document frequencies, TF saturation k1, length
    normalisation b; the query is an OR over its lexemes. `packed=False` reads the table even
    where packed lists exist (the benchmark's reference). `configurations`, those the lexemes
    were made with, are named in the report; with the `query` they were lexed from, words typed
    without accents are read as the namespace spells them (`term_statistics`)."""
    statistics = statistics or term_statistics(scope, lexemes, query, tuple(configurations))
    found = _search(scope, lexemes, k, statistics, packed)
    return LexicalResult(
        found.rows,
        dataclasses.replace(
            found.report,
            configurations=tuple(configurations),
            accents_restored=statistics.restored,
            compounds_split=statistics.split,
        ),
    )


def _search(
    scope: Scope,
    lexemes: list[tuple[str, int]],
    k: int,
    statistics: "TermStatistics | None",
    packed: bool,
) -> LexicalResult:
    if not lexemes or k <= 0:
        return LexicalResult([], LexicalReport("table", 0, ()))
    statistics = statistics or term_statistics(scope, lexemes)
    terms = tuple(t.lexeme for t in statistics.terms)
    if not terms:
        return LexicalResult([], LexicalReport("table", 0, ()))
    read = posting_lists.read(scope.namespace_id, list(terms)) if packed else None
    if read is None:
        return LexicalResult(
            _table(scope, statistics, k, scope.statistics_keys),
            LexicalReport("table", sum(t.document_frequency for t in statistics.terms), terms),
        )
    found = _packed(scope, statistics, k, read, terms)
    restricted = scope.statistics_keys[1:]
    if not restricted:
        return found
    # the audiences the reader reads are never packed: their postings come from the table, scored
    # with the same statistics, and the two lists merge as one ranking would order them
    rows = sorted(
        found.rows + _table(scope, statistics, k, restricted),
        key=lambda r: (-round(r.raw * 1e6), r.chunk_id),
    )
    return LexicalResult(rows[:k], found.report)


def _packed(scope: Scope, statistics, k: int, read, terms: tuple[str, ...]) -> LexicalResult:
    """The top k of the namespace's open chunks, from its packed lists."""
    weights = {t.lexeme: t.weight(statistics.chunk_count) for t in statistics.terms}
    if scope.source_ids or scope.document_ids:
        ids, scores = bm25.score_postings(
            read.packed, read.current, read.changed_ids, weights, statistics.average_length
        )
        return LexicalResult(
            _best_in_scope(scope, ids, scores, k),
            LexicalReport("packed", read.postings, terms, len(read.changed_ids)),
        )
    top = bm25.top_k_packed(
        read.packed, read.current, read.changed_ids, weights, statistics.average_length, k
    )
    rows = [
        ChannelRow(int(i), float(s))
        for i, s in zip(top.ids.tolist(), top.scores.tolist(), strict=True)
    ]
    return LexicalResult(
        rows,
        LexicalReport(
            "packed", read.postings, terms, len(read.changed_ids), top.probed_terms, top.candidates
        ),
    )


def _best_in_scope(scope: Scope, ids, scores, k: int) -> list[ChannelRow]:
    """The k best of the scored chunks that lie in the source or document scope, checked on the
    best FIRST_SCOPE_BATCH, then on 16 times as many, until k are found or every scored chunk
    was checked."""
    n = max(FIRST_SCOPE_BATCH, 4 * k)
    while True:
        best_ids, best_scores = bm25.best_first(ids, scores, n)
        inside = _in_scope(scope, best_ids.tolist())
        kept = [
            (i, s)
            for i, s in zip(best_ids.tolist(), best_scores.tolist(), strict=True)
            if i in inside
        ]
        if len(kept) >= k or len(best_ids) >= len(ids):
            return [ChannelRow(int(i), float(s)) for i, s in kept[:k]]
        n *= 16


def _in_scope(scope: Scope, chunk_ids: list[int]) -> set[int]:
    where, params = scope.where("c")
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT c.id FROM kb_chunk c WHERE c.id = ANY(%s) AND {where}", [chunk_ids, *params]
        )
        return {row[0] for row in cursor.fetchall()}


_IMPACT = (
    f"t.tf * {bm25.K1 + 1} / (t.tf + {bm25.K1} * (1 - {bm25.B} + {bm25.B} * t.doc_len / %(avgdl)s))"
)


def _table(
    scope: Scope, statistics: "TermStatistics", k: int, keys: tuple[int, ...]
) -> list[ChannelRow]:
    """Two statements in all: the statistics (counted before) and this one, which reads each
    term's postings once under each statistics key (`Scope.statistics_keys`: the namespace's open
    chunks, and each audience the reader reads), sums the weighted impacts per chunk and keeps
    the best k. Each term's postings are read through a LATERAL lookup of the primary key, so the
    planner cannot misjudge the term list and scan every posting of the namespace instead."""
    terms = statistics.terms
    join, scope_params = _scope_join(scope)
    sql = f"""
        WITH terms(lexeme, w) AS (SELECT * FROM unnest(%(lexemes)s::text[], %(weights)s::float8[]))
        SELECT chunk_id, score FROM (
            SELECT t.chunk_id, sum(q.w * {_IMPACT}) AS score
            FROM terms q CROSS JOIN unnest(%(keys)s::bigint[]) AS k(key)
            CROSS JOIN LATERAL (SELECT t.chunk_id, t.tf, t.doc_len FROM kb_chunk_term t
                                 WHERE t.namespace_id = k.key AND t.lexeme = q.lexeme) t {join}
            GROUP BY t.chunk_id) scored
        ORDER BY {SCORE_ORDER}
        LIMIT %(k)s"""
    params = {
        "lexemes": [t.lexeme for t in terms],
        "weights": [t.weight(statistics.chunk_count) for t in terms],
        "avgdl": statistics.average_length,
        "keys": list(keys),
        "k": k,
        **scope_params,
    }
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return [ChannelRow(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]


def _scope_join(scope: Scope) -> tuple[str, dict]:
    """A join restricting postings to the scope's sources or documents (none for a whole
    namespace)."""
    if not (scope.source_ids or scope.document_ids):
        return "", {}
    scope_sql, scope_params = named_where(scope, "c")
    return f"JOIN kb_chunk c ON c.id = t.chunk_id AND {scope_sql}", scope_params


@dataclass(frozen=True)
class TermStatistics:
    chunk_count: float
    average_length: float
    terms: list[bm25.Term]  # the query's lexemes the namespace holds, with their frequencies
    restored: tuple[
        RestoredWord, ...
    ] = ()  # words typed without accents, read as their accented spelling
    split: tuple[SplitWord, ...] = ()  # compounds no passage holds, read as their parts

    @property
    def read_as(self) -> tuple[str, ...]:
        """The lexemes the query's words were read as, where the namespace lacks their own."""
        return (
            *(word.lexeme for word in self.restored),
            *(part for word in self.split for part in word.lexemes),
        )

    @property
    def query_idf(self) -> float:
        """The sum of the query terms' weights: what a passage with every term once, at average
        length, scores (the ranker's measure of how much of the query a lexical hit covers)."""
        return sum(term.weight(self.chunk_count) for term in self.terms)


def term_statistics(
    scope: Scope, lexemes: list[tuple[str, int]], query: str = "", configs: tuple[str, ...] = ()
) -> TermStatistics:
    """The namespace's statistics for the query's lexemes. With the `query` and the `configs` it was
    lexed with, a word typed without accents whose stem the namespace lacks is read as the stem
    of its accented spelling, where the namespace holds that (`restore_accents`), and a compound
    whose stem it lacks as the two parts it holds (`split_compounds`); a stem read so that the
    query holds already counts once, as two configurations' alike lexemes do."""
    keys = scope.statistics_keys
    chunk_count, avgdl, terms = (
        term_counts.term_statistics(keys, lexemes) if lexemes else (0.0, 1.0, [])
    )
    unknown = {t.lexeme for t in terms if t.document_frequency == 0}
    restored = (
        restore_accents(scope.namespace_id, query, configs, unknown) if unknown and query else ()
    )
    unread = unknown - {word.typed_lexeme for word in restored}
    split = split_compounds(scope.namespace_id, query, configs, unread) if unread and query else ()
    if restored or split:
        readings = {word.typed_lexeme: (word.lexeme,) for word in restored} | {
            word.typed_lexeme: word.lexemes for word in split
        }
        merged: dict[str, int] = {}
        for lexeme, count in lexemes:
            for read in readings.get(lexeme, (lexeme,)):
                merged[read] = max(merged.get(read, 0), count)
        chunk_count, avgdl, terms = term_counts.term_statistics(keys, list(merged.items()))
    return TermStatistics(
        chunk_count, avgdl, [t for t in terms if t.document_frequency > 0], restored, split
    )
