"""The lexical channel: BM25 over the trigger-maintained postings (`kb_chunk_term`), behind one
interface (`lexical_search`: lexemes in, the top k chunks with their raw BM25 and a report of how
they were found out), so a native BM25 engine could take its place on a server that has one.

**Exact** when the query's terms have at most `budget` postings in all (every small and
medium namespace, and rare-word queries anywhere): each term's postings are read once and the
scores summed per chunk.

**Pruned** otherwise, when the common terms beyond the budget hold more postings than pruning
costs (each chunk completed costs about COMPLETION_COST_IN_POSTINGS postings read): exact BM25's
top k without reading the common terms' postings in full.
1. The rarest terms are read in full, rarest first, while their postings fit the budget (the
   rarest always is). The best `candidates` chunks by that partial score are completed with
   the common terms; the k-th full score among them, θ, is a score the top k must reach.
2. A chunk no rare term matches scores only through the common terms, so if each of its common
   terms' impacts is below ι = θ / (the common terms' weights), it scores below θ. Only the
   common terms' postings with an impact of at least ι are read, through the postings' impact
   index (lexeme, tf, length): for each term frequency, the lengths short enough to reach ι at
   the namespace's current average length, shortest first, at most IMPACT_BUCKET_POSTINGS.
3. The FIRST_COMMON chunks those postings score highest are completed; θ rises to the k-th
   score of all completed so far.
4. Every other chunk that could still reach θ is completed, the most promising first, up to
   `candidates` of each kind: rare-term matches outside the best (ceiling: partial score, what
   step 2 read of it, ι × the weight of the common terms it did not show), by partial score plus
   what step 2 read; and common-term matches (ceiling: what step 2 read, ι × the rest), by
   that ceiling.
The result is provably exact BM25's top k (the report's `guaranteed`) when step 4 left no chunk
that could reach θ and step 2 cut no range; otherwise the report counts what was left open.
"Completed" means the chunk's other terms looked up by the postings' (chunk, lexeme) index:
one index descent a chunk. `kb_bench --lexical-agreement` measures agreement and cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb.models import SEARCH_CONFIG  # the one text search configuration: the stored tsvectors use it
from kb.replicas import read_connection
from retrieval import bm25
from retrieval.channels import ChannelRow, Scope, named_where

MAX_QUERY_LEXEMES = 64
CANDIDATES_PER_RESULT = 20  # pruned mode: candidates completed per chunk asked for...
COMPLETION_COST_IN_POSTINGS = 15  # measured: completing a chunk costs about what reading 15 postings does
MIN_CANDIDATES = 2000  # ...and at least this many (primary-key lookups are cheap; a low θ is not)
IMPACT_TF_STEPS = 32  # term frequencies the impact index is read at one by one; above, every posting
FIRST_COMMON = 500  # the chunks the common terms' postings score highest, completed first to raise θ
IMPACT_BUCKET_POSTINGS = 2000  # the most postings read per common term and term frequency, highest impact first
SCORE_ORDER = "round(score * 1e6) DESC, chunk_id"  # sums in another order differ in the last bits


@dataclass(frozen=True)
class LexicalReport:
    """How the channel found its hits: what the explanation shows."""

    mode: str  # "exact" | "pruned"
    postings_read: int  # postings read: the full terms', and the common terms' above the impact floor
    full_terms: tuple[str, ...]  # the terms read in full
    probed_terms: tuple[str, ...]  # pruned: the common terms, read only above the impact floor
    candidates: int  # pruned: chunks completed with every term
    guaranteed: bool  # the hits are provably exact BM25's top k
    impact_floor: float = 0.0  # pruned: ι, the least impact of a common term's posting read
    left_open: int = 0  # pruned: chunks that could still reach the top k but were not completed
    full_buckets: int = 0  # pruned: (term, frequency) ranges cut at IMPACT_BUCKET_POSTINGS


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
    full before the common terms are pruned (None: every term read in full)."""
    empty = LexicalResult([], LexicalReport("exact", 0, (), (), 0, True))
    if not lexemes or k <= 0:
        return empty
    statistics = statistics or term_statistics(scope, lexemes)
    if not statistics.terms:
        return empty
    full, probed = plan_terms(statistics.terms, budget)
    candidates = max(MIN_CANDIDATES, CANDIDATES_PER_RESULT * k)
    if sum(t.document_frequency for t in probed) < COMPLETION_COST_IN_POSTINGS * candidates:
        full, probed = list(statistics.terms), []  # pruning would cost more than reading them
    read = sum(t.document_frequency for t in full)
    if not probed:
        rows = _exact(scope, statistics, k)
        return LexicalResult(rows, LexicalReport("exact", read, tuple(t.lexeme for t in full), (), 0, True))
    return _pruned(scope, statistics, full, probed, k, candidates)


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
        SELECT chunk_id, score FROM (
            SELECT t.chunk_id, sum(q.w * {_IMPACT}) AS score
            FROM terms q {_postings(join)}
            GROUP BY t.chunk_id) scored
        ORDER BY {SCORE_ORDER}
        LIMIT %(k)s"""
    params = {"lexemes": [t.lexeme for t in terms], "weights": [t.weight(statistics.chunk_count) for t in terms],
              "avgdl": statistics.average_length, "ns": scope.namespace_id, "k": k, **scope_params}
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return [ChannelRow(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]


def _pruned(scope: Scope, statistics: "TermStatistics", full: list[bm25.Term], probed: list[bm25.Term], k: int,
            candidates: int) -> LexicalResult:
    """The four steps of the module docstring in one statement: the top k, and a report of what
    was read and completed to find them."""
    n = statistics.chunk_count
    probe_weight = sum(t.weight(n) for t in probed)
    join, scope_params = _scope_join(scope)

    def completed(chunks: str) -> str:
        """`chunks` (chunk_id, score so far) with the common terms' contributions added: each
        chunk's postings of those terms by the postings' (chunk, lexeme) index, one descent a chunk
        (a LATERAL lookup, so the planner never reads the common terms' postings whole instead)."""
        return (f"SELECT x.chunk_id, x.score + c.score AS score FROM ({chunks}) x CROSS JOIN LATERAL "
                f"(SELECT coalesce(sum(q.w * {_IMPACT}), 0) AS score FROM kb_chunk_term t JOIN probe_terms q "
                "ON q.lexeme = t.lexeme WHERE t.chunk_id = x.chunk_id AND t.lexeme = ANY(%(probe)s::text[])) c")

    k1, b = bm25.K1, bm25.B
    impact_read = ("CROSS JOIN LATERAL (SELECT t.chunk_id, t.tf, t.doc_len FROM kb_chunk_term t "
                   "WHERE t.namespace_id = %(ns)s AND t.lexeme = q.lexeme AND {condition} "
                   "ORDER BY t.doc_len LIMIT %(bucket)s) t")
    sql = f"""
        WITH full_terms(lexeme, w) AS (SELECT * FROM unnest(%(full)s::text[], %(full_w)s::float8[])),
        probe_terms(lexeme, w) AS (SELECT * FROM unnest(%(probe)s::text[], %(probe_w)s::float8[])),
        partial AS MATERIALIZED (
            SELECT t.chunk_id, sum(q.w * {_IMPACT}) AS score,
                   row_number() OVER (ORDER BY sum(q.w * {_IMPACT}) DESC, t.chunk_id) AS rank
            FROM full_terms q {_postings(join)}
            GROUP BY t.chunk_id),
        best AS MATERIALIZED ({completed("SELECT chunk_id, score FROM partial WHERE rank <= %(candidates)s")}),
        theta AS MATERIALIZED (
            SELECT coalesce((SELECT score FROM best ORDER BY {SCORE_ORDER} OFFSET %(k)s - 1 LIMIT 1), 0) AS score),
        floor AS MATERIALIZED (SELECT greatest(theta.score / %(probe_weight)s, 1e-9) AS iota FROM theta),
        lengths AS MATERIALIZED (
            SELECT v::real AS tf,
                   %(avgdl)s / ({k1} * {b}) * (v * ({k1 + 1} / floor.iota - 1) - {k1} * (1 - {b})) AS max_len
            FROM floor, generate_series(1, {IMPACT_TF_STEPS}) AS v
            WHERE floor.iota < {k1 + 1}),
        impact_postings AS MATERIALIZED (
            SELECT t.chunk_id, q.lexeme, l.tf AS bucket, q.w * {_IMPACT} AS c, q.w
            FROM probe_terms q CROSS JOIN lengths l
            {impact_read.format(condition="t.tf = l.tf AND t.doc_len <= l.max_len")} {join}
            WHERE l.max_len >= 0
            UNION ALL
            SELECT t.chunk_id, q.lexeme, 0, q.w * {_IMPACT} AS c, q.w
            FROM probe_terms q CROSS JOIN floor
            {impact_read.format(condition=f"t.tf > {IMPACT_TF_STEPS}")} {join}
            WHERE floor.iota < {k1 + 1}),
        seen AS MATERIALIZED (
            SELECT h.chunk_id, sum(h.c) AS seen, sum(h.w) AS seen_w FROM impact_postings h GROUP BY h.chunk_id),
        common_seen AS MATERIALIZED (
            SELECT s.* FROM seen s WHERE s.chunk_id NOT IN (SELECT chunk_id FROM partial)),
        common_first AS MATERIALIZED ({completed(
            "SELECT chunk_id, 0::float8 AS score FROM common_seen ORDER BY seen DESC, chunk_id LIMIT %(first)s")}),
        theta_after AS MATERIALIZED (
            SELECT coalesce((SELECT score FROM (SELECT * FROM best UNION ALL SELECT * FROM common_first) s
                             ORDER BY {SCORE_ORDER} OFFSET %(k)s - 1 LIMIT 1), 0) AS score),
        contenders AS MATERIALIZED (
            SELECT p.chunk_id, p.score, p.score + coalesce(s.seen, 0) AS known
            FROM partial p LEFT JOIN seen s USING (chunk_id), floor, theta_after
            WHERE p.rank > %(candidates)s AND p.score + least(%(ceiling)s, coalesce(s.seen, 0)
                  + floor.iota * (%(probe_weight)s - coalesce(s.seen_w, 0))) >= theta_after.score),
        contenders_done AS MATERIALIZED ({completed(
            "SELECT chunk_id, score FROM contenders ORDER BY known DESC, chunk_id LIMIT %(candidates)s")}),
        common_only AS MATERIALIZED (
            SELECT s.chunk_id, s.seen + floor.iota * (%(probe_weight)s - s.seen_w) AS ceiling
            FROM common_seen s, floor, theta_after
            WHERE s.seen + floor.iota * (%(probe_weight)s - s.seen_w) >= theta_after.score
              AND s.chunk_id NOT IN (SELECT chunk_id FROM common_first)),
        common_done AS MATERIALIZED ({completed(
            "SELECT chunk_id, 0::float8 AS score FROM common_only "
            "ORDER BY ceiling DESC, chunk_id LIMIT %(candidates)s")}),
        ranked AS (
            SELECT * FROM best UNION ALL SELECT * FROM common_first UNION ALL SELECT * FROM contenders_done
            UNION ALL SELECT * FROM common_done)
        SELECT chunk_id, score,
               (SELECT count(*) FROM contenders) AS contenders,
               (SELECT count(*) FROM common_only) AS common_only,
               (SELECT count(*) FROM (SELECT 1 FROM impact_postings GROUP BY lexeme, bucket
                                      HAVING count(*) >= %(bucket)s) full_buckets) AS full_buckets,
               (SELECT count(*) FROM impact_postings) AS common_postings,
               (SELECT count(*) FROM ranked) AS completed,
               (SELECT iota FROM floor) AS iota
        FROM (SELECT * FROM ranked ORDER BY {SCORE_ORDER} LIMIT %(k)s) top
        ORDER BY {SCORE_ORDER}"""
    params = {"full": [t.lexeme for t in full], "full_w": [t.weight(n) for t in full],
              "probe": [t.lexeme for t in probed], "probe_w": [t.weight(n) for t in probed],
              "avgdl": statistics.average_length, "ns": scope.namespace_id, "k": k, "candidates": candidates,
              "bucket": IMPACT_BUCKET_POSTINGS, "first": FIRST_COMMON,
              "ceiling": probe_weight * (k1 + 1), "probe_weight": probe_weight, **scope_params}
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    contenders, common_only, full_buckets, common_postings, completed, iota = fetched[0][2:] if fetched else (
        0, 0, 0, 0, 0, 0.0)
    left = max(0, contenders - candidates) + max(0, common_only - candidates)
    return LexicalResult([ChannelRow(row[0], float(row[1])) for row in fetched], LexicalReport(
        "pruned", sum(t.document_frequency for t in full) + int(common_postings), tuple(t.lexeme for t in full),
        tuple(t.lexeme for t in probed), int(completed), not left and not full_buckets, round(float(iota), 4),
        int(left), int(full_buckets)))


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
