"""BM25 parameters, term weights and the document-frequency cache for the lexical channel:
pure, no SQL.

The channel computes each query term's weight (query term frequency × IDF) here from the
namespace's statistics, then PostgreSQL sums `weight · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`
over the postings in one pass.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

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
