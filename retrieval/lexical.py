"""The lexical channel: BM25 over the trigger-maintained postings (`kb_chunk_term`), behind one
interface (`lexical_search`: lexemes in, the top k chunks with their raw BM25 and a report of how
they were found out), so a native BM25 engine could take its place on a server that has one.

**Exact** when the query's terms have at most `budget` postings in all (every small and
medium namespace, and rare-word queries anywhere): each term's postings are read once and the
scores summed per chunk.

**Bounded** otherwise, so a query's cost stops growing with the corpus:
1. the rarest terms are read in full, rarest first, while their postings fit the budget (the
   rarest always is): they find the candidates, with partial scores;
2. the best `candidates` of them by partial score get the other, common terms' contributions
   by primary-key lookups (candidates × common terms probes, not the common terms' postings);
3. the top k by that full score are returned.
A chunk only the common terms match, or one outside the candidates, can be missed; it could
score at most its partial score plus each common term's weight × (k1 + 1), and the report says
whether the returned list is provably the exact one (`guaranteed`). How close it is in
practice is measured by `kb_bench --lexical-agreement` (README, "What scales how").
"""

from __future__ import annotations

from dataclasses import dataclass

from kb.models import SEARCH_CONFIG  # the one text search configuration: the stored tsvectors use it
from kb.replicas import read_connection
from retrieval import bm25
from retrieval.channels import ChannelRow, Scope, named_where

MAX_QUERY_LEXEMES = 64
CANDIDATES_PER_RESULT = 20  # bounded mode: candidates completed per chunk asked for...
MIN_CANDIDATES = 2000  # ...and at least this many (primary-key lookups are cheap; missed chunks are not)


@dataclass(frozen=True)
class LexicalReport:
    """How the channel found its hits: what the explanation shows."""

    mode: str  # "exact" | "bounded"
    postings_read: int  # postings of the terms read in full
    full_terms: tuple[str, ...]  # the terms read in full
    probed_terms: tuple[str, ...]  # bounded: the common terms looked up for the candidates only
    candidates: int  # bounded: the candidates completed with the common terms
    guaranteed: bool  # the hits are provably exact BM25's top k


@dataclass(frozen=True)
class LexicalResult:
    rows: list[ChannelRow]  # best first, raw BM25
    report: LexicalReport


def plan_terms(terms: list[bm25.Term], budget: int | None) -> tuple[list[bm25.Term], list[bm25.Term]]:
    """(terms read in full, terms only probed): the rarest first while their postings fit the
    budget, the rarest always. Pure. Without a budget every term is read in full."""
    if budget is None:
        return list(terms), []
    ordered = sorted(terms, key=lambda t: (t.document_frequency, t.lexeme))
    full, probed, total = [], [], 0
    for term in ordered:
        if not full or total + term.document_frequency <= budget:
            full.append(term)
            total += term.document_frequency
        else:
            probed.append(term)
    return full, probed


def lexical_channel(scope: Scope, lexemes: list[tuple[str, int]], k: int,
                    statistics: "TermStatistics | None" = None, budget: int | None = None) -> list[ChannelRow]:
    return lexical_search(scope, lexemes, k, statistics, budget).rows


def lexical_search(scope: Scope, lexemes: list[tuple[str, int]], k: int,
                   statistics: "TermStatistics | None" = None, budget: int | None = None) -> LexicalResult:
    """The BM25 top k: IDF from the namespace's document frequencies, TF saturation k1, length
    normalisation b; the query is an OR over its lexemes. `budget`: the most postings read in
    full (None: exact, whatever it costs)."""
    empty = LexicalResult([], LexicalReport("exact", 0, (), (), 0, True))
    if not lexemes or k <= 0:
        return empty
    statistics = statistics or term_statistics(scope, lexemes)
    if not statistics.terms:
        return empty
    full, probed = plan_terms(statistics.terms, budget)
    read = sum(t.document_frequency for t in full)
    if not probed:
        rows = _exact(scope, statistics, k)
        return LexicalResult(rows, LexicalReport("exact", read, tuple(t.lexeme for t in full), (), 0, True))
    candidates = max(MIN_CANDIDATES, CANDIDATES_PER_RESULT * k)
    rows, kth_partial = _bounded(scope, statistics, full, probed, k, candidates)
    ceiling = kth_partial + sum(t.weight(statistics.chunk_count) for t in probed) * (bm25.K1 + 1)
    guaranteed = len(rows) == k and rows[-1].raw >= ceiling
    return LexicalResult(rows, LexicalReport("bounded", read, tuple(t.lexeme for t in full),
                                             tuple(t.lexeme for t in probed), candidates, guaranteed))


_IMPACT = f"t.tf * {bm25.K1 + 1} / (t.tf + {bm25.K1} * (1 - {bm25.B} + {bm25.B} * t.doc_len / %(avgdl)s))"


def _postings(join: str) -> str:
    """Each term's postings (`q.lexeme`) as `t`, read through a LATERAL lookup of the primary key."""
    return ("CROSS JOIN LATERAL (SELECT t.chunk_id, t.tf, t.doc_len FROM kb_chunk_term t "
            f"WHERE t.namespace_id = %(ns)s AND t.lexeme = q.lexeme) t {join}")


def _exact(scope: Scope, statistics: "TermStatistics", k: int) -> list[ChannelRow]:
    """Two statements in all: the statistics (counted before) and this one, which reads each
    term's postings once, sums the weighted impacts per chunk and keeps the best k. Each term's
    postings are read through a LATERAL lookup, so the planner cannot misjudge the term list and
    scan every posting of the namespace instead."""
    terms = statistics.terms
    join, scope_params = _scope_join(scope)
    sql = f"""
        WITH terms(lexeme, w) AS (SELECT * FROM unnest(%(lexemes)s::text[], %(weights)s::float8[]))
        SELECT t.chunk_id, sum(q.w * {_IMPACT}) AS score
        FROM terms q {_postings(join)}
        GROUP BY t.chunk_id
        ORDER BY score DESC, t.chunk_id
        LIMIT %(k)s"""
    params = {"lexemes": [t.lexeme for t in terms], "weights": [t.weight(statistics.chunk_count) for t in terms],
              "avgdl": statistics.average_length, "ns": scope.namespace_id, "k": k, **scope_params}
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return [ChannelRow(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]


def _bounded(scope: Scope, statistics: "TermStatistics", full: list[bm25.Term], probed: list[bm25.Term], k: int,
             candidates: int) -> tuple[list[ChannelRow], float]:
    """The top k of the best `candidates` by the full terms, completed by the probed terms; and
    the lowest partial score among those candidates (0 when there were fewer)."""
    n = statistics.chunk_count
    join, scope_params = _scope_join(scope)
    sql = f"""
        WITH full_terms(lexeme, w) AS (SELECT * FROM unnest(%(full)s::text[], %(full_w)s::float8[])),
        probe_terms(lexeme, w) AS (SELECT * FROM unnest(%(probe)s::text[], %(probe_w)s::float8[])),
        partial AS MATERIALIZED (
            SELECT t.chunk_id, sum(q.w * {_IMPACT}) AS score
            FROM full_terms q {_postings(join)}
            GROUP BY t.chunk_id
            ORDER BY score DESC, t.chunk_id
            LIMIT %(candidates)s),
        completed AS (
            SELECT p.chunk_id, sum(q.w * {_IMPACT}) AS score
            FROM partial p CROSS JOIN probe_terms q
            JOIN kb_chunk_term t ON t.namespace_id = %(ns)s AND t.lexeme = q.lexeme AND t.chunk_id = p.chunk_id
            GROUP BY p.chunk_id)
        SELECT p.chunk_id, p.score + coalesce(c.score, 0) AS score,
               (SELECT CASE WHEN count(*) < %(candidates)s THEN 0 ELSE min(score) END FROM partial) AS floor
        FROM partial p LEFT JOIN completed c USING (chunk_id)
        ORDER BY score DESC, p.chunk_id
        LIMIT %(k)s"""
    params = {"full": [t.lexeme for t in full], "full_w": [t.weight(n) for t in full],
              "probe": [t.lexeme for t in probed], "probe_w": [t.weight(n) for t in probed],
              "avgdl": statistics.average_length, "ns": scope.namespace_id, "k": k, "candidates": candidates,
              **scope_params}
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    floor = float(fetched[0][2]) if fetched else 0.0
    return [ChannelRow(chunk_id, float(score)) for chunk_id, score, _ in fetched], floor


def _scope_join(scope: Scope) -> tuple[str, dict]:
    """A join restricting postings to the scope's sources or documents (none for a whole namespace)."""
    if not (scope.source_ids or scope.document_ids):
        return "", {}
    scope_sql, scope_params = named_where(scope, "c")
    return f"JOIN kb_chunk c ON c.id = t.chunk_id AND {scope_sql}", scope_params


def query_lexemes(text: str) -> list[tuple[str, int]]:
    """The query's lexemes with their counts in query order (the first 64), as PostgreSQL's
    parser reads them. Built with to_tsvector, never to_tsquery, so no input can raise a tsquery
    syntax error."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT t.lexeme, coalesce(array_length(t.positions, 1), 1) "
            "FROM unnest(to_tsvector(%s::regconfig, %s)) AS t ORDER BY t.positions[1], t.lexeme LIMIT %s",
            [SEARCH_CONFIG, text, MAX_QUERY_LEXEMES],
        )
        return [(lexeme, int(count)) for lexeme, count in cursor.fetchall()]


@dataclass(frozen=True)
class TermStatistics:
    chunk_count: float
    average_length: float
    terms: list[bm25.Term]  # the query's lexemes the namespace holds, with their frequencies

    @property
    def query_idf(self) -> float:
        """The sum of the query terms' weights: what a passage with every term once, at average
        length, scores (the ranker's measure of how much of the query a lexical hit covers)."""
        return sum(term.weight(self.chunk_count) for term in self.terms)


def term_statistics(scope: Scope, lexemes: list[tuple[str, int]]) -> TermStatistics:
    chunk_count, avgdl, terms = _term_statistics(scope.namespace_id, lexemes) if lexemes else (0.0, 1.0, [])
    return TermStatistics(chunk_count, avgdl, [t for t in terms if t.document_frequency > 0])


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
    one statement, or None when it has never held a chunk."""
    namespace = int(namespace_id)
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""SELECT s.chunk_count, greatest(s.total_len / nullif(s.chunk_count, 0), 1), s.generation,
                       ARRAY(SELECT (SELECT count(*) FROM kb_chunk_term t
                                     WHERE t.namespace_id = {namespace} AND t.lexeme = q.lexeme)
                             FROM unnest(%s::text[]) WITH ORDINALITY AS q(lexeme, i) ORDER BY q.i)
                FROM kb_namespace_stats s WHERE s.namespace_id = {namespace}""",
            [words],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    chunk_count, avgdl, generation, counts = row
    return float(chunk_count), float(avgdl), int(generation), dict(zip(words, map(int, counts)))
