"""BM25 parameters and term weights for the lexical channel: pure, no SQL.

The channel computes each query term's weight (query term frequency × IDF) here from the
namespace's statistics, then PostgreSQL sums `weight · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`
over the postings in one pass.
"""

from __future__ import annotations

import math
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
