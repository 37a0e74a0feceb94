"""BM25 parameters, term weights, in-memory scoring of packed postings and the document-frequency
cache for the lexical channel: pure, no SQL.

The channel computes each query term's weight (query term frequency × IDF) here from the
namespace's statistics; then `weight · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))` is summed
over the postings, by PostgreSQL for the postings table or here for packed lists.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

K1 = 0.9  # Anserini/Pyserini defaults, not tuned to any corpus
B = 0.4


@dataclass(frozen=True)
class Term:
    lexeme: str
    query_tf: int
    document_frequency: int

    def weight(self, chunk_count: float) -> float:
        """Query term frequency times the BM25 IDF (the Lucene form, never negative)."""
        df = self.document_frequency
        return self.query_tf * math.log(1 + (chunk_count - df + 0.5) / (df + 0.5))


def impact(tf: float, length: float, avgdl: float) -> float:
    """A term's saturated, length-normalised frequency in one text: what the lexical channel's
    SQL computes per posting, for rankings done in memory (the capability index)."""
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl))


class DocumentFrequencyCache:
    """Document frequencies already counted, per namespace, valid for one generation of its
    postings (the stamp the postings trigger renews on every change, kb/migrations/0011).

    Counting a common term's postings is most of the statistics cost in a large namespace, and
    queries share their common terms; a namespace changes far less often than it is searched.
    A namespace keeps only its latest generation; when all namespaces together would hold more
    than `max_terms` counts, the cache starts afresh (a recount costs one query a few ms).
    """

    def __init__(self, max_terms: int = 50_000):
        self.max_terms = max_terms
        self._entries: dict[int, tuple[int, dict[str, int]]] = {}
        self._lock = threading.Lock()

    def lookup(self, namespace_id: int, lexemes: list[str]) -> tuple[int | None, dict[str, int]]:
        """The generation the cached counts belong to (None when nothing is cached) and the
        counts known for `lexemes` at that generation."""
        with self._lock:
            generation, counts = self._entries.get(namespace_id, (None, {}))
            return generation, {lexeme: counts[lexeme] for lexeme in lexemes if lexeme in counts}

    def clear(self) -> None:
        """Forget every count (a benchmark's cold pass)."""
        with self._lock:
            self._entries.clear()

    def store(self, namespace_id: int, generation: int, counts: dict[str, int]) -> None:
        with self._lock:
            cached_generation, cached = self._entries.pop(namespace_id, (None, {}))
            merged = {**cached, **counts} if cached_generation == generation else dict(counts)
            held = sum(len(other) for _, other in self._entries.values())
            if held + len(merged) > self.max_terms:
                self._entries.clear()
                merged = dict(counts)
            self._entries[namespace_id] = (generation, merged)


def score_postings(packed, current, changed_ids: np.ndarray, weights: dict[str, float],
                   avgdl: float) -> tuple[np.ndarray, np.ndarray]:
    """Every matched chunk's BM25 score from postings held as arrays (kb/posting_lists.py):
    (chunk ids, scores), unordered. `packed` postings of chunks in `changed_ids` are ignored;
    `current` holds those chunks' postings as they are now, and those of newer chunks."""
    ids, scores = _summed(packed, weights, avgdl, excluded=changed_ids)
    fresh_ids, fresh_scores = _summed(current, weights, avgdl)
    return np.concatenate([ids, fresh_ids]), np.concatenate([scores, fresh_scores])


def _impacts(postings, weight: float, avgdl: float) -> np.ndarray:
    """weight · tf·(k1+1) / (tf + k1·(1 − b) + k1·b·len/avglen) for each posting, in float64,
    with two new arrays (the postings of a common term are millions: passes over memory count)."""
    denominator = postings.lengths.astype(np.float64)  # native float64 first: arithmetic on the
    denominator *= K1 * B / avgdl                         # big-endian views themselves is slower
    denominator += K1 * (1 - B)
    impacts = postings.tfs.astype(np.float64)
    denominator += impacts
    impacts *= weight * (K1 + 1)
    impacts /= denominator
    return impacts


def _summed(postings, weights: dict[str, float], avgdl: float,
            excluded: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sum each chunk's weighted impacts over the terms: (distinct chunk ids, their sums), the
    chunks in `excluded` left out. The terms' postings share one id base."""
    if not postings:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    base = postings[0].base
    ids = np.concatenate([p.chunk_ids for p in postings]).astype(np.int64)
    scores = np.concatenate([_impacts(p, weights[p.lexeme], avgdl) for p in postings])
    if not len(ids):
        return ids, scores
    low, high = int(ids.min()), int(ids.max())
    if high - low <= 4 * len(ids) + 1024:  # dense ids (a namespace ingested in bulk): sum into one array
        sums = np.bincount(ids - low, weights=scores, minlength=high - low + 1)
        if excluded is not None and len(excluded):
            inside = excluded - base - low
            sums[inside[(inside >= 0) & (inside < len(sums))]] = 0
        found = np.flatnonzero(sums > 0)  # every impact is positive (IDF and frequencies are), so sum > 0: matched
        return found + (low + base), sums[found]
    found, where = np.unique(ids, return_inverse=True)
    sums = np.bincount(where, weights=scores, minlength=len(found))
    if excluded is not None and len(excluded):
        keep = ~np.isin(found, excluded - base)
        found, sums = found[keep], sums[keep]
    return found + base, sums


def best_first(ids: np.ndarray, scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The `n` best (ids, scores), best first, in the order the SQL channel ranks: score rounded
    to 1e-6 descending (sums in another order differ in the last bits), then chunk id. Every id
    tied with the n-th is kept, so a caller that filters the prefix never loses one to a tie."""
    if n < len(ids):  # first by the raw score, keeping every score that could round to the n-th's
        kth = np.partition(scores, len(scores) - n)[len(scores) - n]
        chosen = np.flatnonzero(scores >= kth - 1e-6)
        ids, scores = ids[chosen], scores[chosen]
    rounded = np.floor(scores * 1e6 + 0.5)
    if n < len(ids):
        kth = np.partition(-rounded, n - 1)[n - 1]
        chosen = np.flatnonzero(-rounded <= kth)
        ids, scores, rounded = ids[chosen], scores[chosen], rounded[chosen]
    order = np.lexsort((ids, -rounded))
    return ids[order], scores[order]
