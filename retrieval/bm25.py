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
    ids, scores = _summed(packed, weights, avgdl)
    if len(changed_ids) and len(ids):
        keep = ~np.isin(ids, changed_ids)
        ids, scores = ids[keep], scores[keep]
    fresh_ids, fresh_scores = _summed(current, weights, avgdl)
    return np.concatenate([ids, fresh_ids]), np.concatenate([scores, fresh_scores])


def _summed(postings, weights: dict[str, float], avgdl: float) -> tuple[np.ndarray, np.ndarray]:
    """Sum each chunk's weighted impacts over the terms: (distinct chunk ids, their sums)."""
    if not postings:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    ids = np.concatenate([p.chunk_ids for p in postings])
    scores = np.concatenate([weights[p.lexeme] * (p.tfs * (K1 + 1) / (p.tfs + K1 * (1 - B + B * p.lengths / avgdl)))
                             for p in postings])
    if not len(ids):
        return ids, scores
    low, high = int(ids.min()), int(ids.max())
    if high - low <= 4 * len(ids) + 1024:  # dense ids (a namespace ingested in bulk): sum into one array
        sums = np.bincount(ids - low, weights=scores, minlength=high - low + 1)
        present = np.bincount(ids - low, minlength=high - low + 1) > 0
        found = np.flatnonzero(present)
        return found + low, sums[found]
    found, where = np.unique(ids, return_inverse=True)
    return found, np.bincount(where, weights=scores, minlength=len(found))


def best_first(ids: np.ndarray, scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The `n` best (ids, scores), best first, in the order the SQL channel ranks: score rounded
    to 1e-6 descending (sums in another order differ in the last bits), then chunk id. Every id
    tied with the n-th is kept, so a caller that filters the prefix never loses one to a tie."""
    if not len(ids):
        return ids, scores
    rounded = np.floor(scores * 1e6 + 0.5)
    if n < len(ids):
        kth = np.partition(-rounded, n - 1)[n - 1]
        chosen = np.flatnonzero(-rounded <= kth)
        ids, scores, rounded = ids[chosen], scores[chosen], rounded[chosen]
    order = np.lexsort((ids, -rounded))
    return ids[order], scores[order]
