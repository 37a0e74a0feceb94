"""A namespace's BM25 statistics for a query's lexemes: its chunk count, average length and each
lexeme's document frequency, counted from the postings and cached per generation of them.

Counts are kept per statistics key (kb/migrations/0049_audiences.py): the namespace's own id
holds its open documents', minus an audience's id that audience's restricted documents'. A
reader's statistics are the sum over the keys it reads, so a restricted document's words weigh
in the statistics of its audience's readers only."""

from __future__ import annotations

from kb.replicas import read_connection
from retrieval import bm25

# document frequencies already counted, per namespace generation (see bm25.DocumentFrequencyCache)
DOCUMENT_FREQUENCIES = bm25.DocumentFrequencyCache()


def term_statistics(
    keys: int | tuple[int, ...], lexemes: list[tuple[str, int]]
) -> tuple[float, float, list[bm25.Term]]:
    """The chunk count, average length and document frequencies of the chunks filed under
    `keys` (`Scope.statistics_keys`, or a namespace's id: its open chunks): their sums, as if
    one collection held them."""
    if isinstance(keys, int):
        keys = (keys,)
    if len(keys) == 1:
        return keyed_statistics(keys[0], lexemes)
    chunks, total, frequencies = 0.0, 0.0, {lexeme: 0 for lexeme, _ in lexemes}
    for key in keys:
        count, average, terms = keyed_statistics(key, lexemes)
        chunks, total = chunks + count, total + count * average
        for term in terms:
            frequencies[term.lexeme] += term.document_frequency
    if not chunks:
        return 0.0, 1.0, []
    return (
        chunks,
        max(total / chunks, 1.0),
        [bm25.Term(lexeme, qtf, frequencies[lexeme]) for lexeme, qtf in lexemes],
    )


def keyed_statistics(
    namespace_id: int, lexemes: list[tuple[str, int]]
) -> tuple[float, float, list[bm25.Term]]:
    """The chunk count and average length, and each lexeme's document frequency.

    Frequencies are counted from the postings' primary key (so no counter row is shared between
    writers) and cached per generation of the namespace's postings: a lexeme is counted again
    only after the namespace changed. The counts and the statistics row always come from one
    snapshot: when the generation moved since the cached counts, every lexeme is recounted."""
    words = [lexeme for lexeme, _ in lexemes]
    cached_generation, known = DOCUMENT_FREQUENCIES.lookup(namespace_id, words)
    statistics = count_terms(namespace_id, [word for word in words if word not in known])
    if statistics is not None and statistics[2] != cached_generation and known:
        known = {}
        statistics = count_terms(namespace_id, words)
    if statistics is None:
        return 0.0, 1.0, []
    chunk_count, avgdl, generation, counted = statistics
    DOCUMENT_FREQUENCIES.store(namespace_id, generation, counted)
    frequencies = {**known, **counted}
    return (
        chunk_count,
        avgdl,
        [bm25.Term(lexeme, qtf, frequencies[lexeme]) for lexeme, qtf in lexemes],
    )


def count_terms(
    namespace_id: int, words: list[str]
) -> tuple[float, float, int, dict[str, int]] | None:
    """(chunk count, average length, generation, {word: document frequency}) of a namespace in
    one statement, or None when it has never held a chunk. Where the namespace's packed lists
    hold every change (none recorded since the build), a frequency is the list's length plus the
    term's postings in newer chunks; otherwise it is counted from the postings' primary key."""
    namespace = int(namespace_id)
    counted = (
        f"(SELECT count(*) FROM kb_chunk_term t WHERE t.namespace_id = {namespace} AND "
        "t.lexeme = q.lexeme"
    )
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
                FROM kb_namespace_stats s WHERE s.namespace_id = {namespace}""",  # noqa: E501
            [words],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    chunk_count, avgdl, generation, counts = row
    return (
        float(chunk_count),
        float(avgdl),
        int(generation),
        dict(zip(words, map(int, counts), strict=False)),
    )
