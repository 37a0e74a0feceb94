"""BM25 parameters, term weights, in-memory scoring of packed postings and the document-frequency
cache for the lexical channel: pure, no SQL.

The channel computes each query term's weight (query term frequency × IDF) here from the
namespace's statistics; then `weight · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))` is summed
over the postings, by PostgreSQL for the postings table or here for packed lists.
"""

from __future__ import annotations

import dataclasses
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
    """Document frequencies already counted, per namespace, for one generation of its postings.

    The generation is the stamp the postings trigger renews on every change (kb/migrations/0011).
    Counting a common term's postings is most of the statistics cost in a large namespace, and a
    namespace changes far less often than it is searched. Only the latest generation is kept; past
    `max_terms` counts in all, the cache starts afresh (a recount costs one query a few ms).
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


def score_postings(
    packed, current, changed_ids: np.ndarray, weights: dict[str, float], avgdl: float
) -> tuple[np.ndarray, np.ndarray]:
    """Every matched chunk's BM25 score from postings held as arrays (retrieval/posting_lists.py):
    (chunk ids, scores), unordered. `packed` postings of chunks in `changed_ids` are ignored;
    `current` holds those chunks' postings as they are now, and those of newer chunks."""
    ids, scores = _summed(packed, weights, avgdl, excluded=changed_ids)
    fresh_ids, fresh_scores = _summed(current, weights, avgdl)
    return np.concatenate([ids, fresh_ids]), np.concatenate([scores, fresh_scores])


def _impacts(tfs: np.ndarray, lengths: np.ndarray, weight: float, avgdl: float) -> np.ndarray:
    """weight · tf·(k1+1) / (tf + k1·(1 − b) + k1·b·len/avglen) for each posting, in float64,
    with two new arrays (the postings of a common term are millions: passes over memory count)."""
    denominator = lengths.astype(np.float64)  # native float64 first: arithmetic on the
    denominator *= K1 * B / avgdl  # big-endian views themselves is slower
    denominator += K1 * (1 - B)
    impacts = tfs.astype(np.float64)
    denominator += impacts
    impacts *= weight * (K1 + 1)
    impacts /= denominator
    return impacts


def _summed(
    postings, weights: dict[str, float], avgdl: float, excluded: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sum each chunk's weighted impacts over the terms: (distinct chunk ids, their sums), the
    chunks in `excluded` left out. The terms' postings share one id base."""
    if not postings:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    base = postings[0].base
    ids = np.concatenate([p.chunk_ids for p in postings]).astype(np.int64)
    scores = np.concatenate(
        [_impacts(p.tfs, p.lengths_at(), weights[p.lexeme], avgdl) for p in postings]
    )
    if not len(ids):
        return ids, scores
    low, high = int(ids.min()), int(ids.max())
    if (
        high - low <= 4 * len(ids) + 1024
    ):  # dense ids (a namespace ingested in bulk): sum into one array
        sums = np.bincount(ids - low, weights=scores, minlength=high - low + 1)
        if excluded is not None and len(excluded):
            inside = excluded - base - low
            sums[inside[(inside >= 0) & (inside < len(sums))]] = 0
        found = np.flatnonzero(
            sums > 0
        )  # every impact is positive (IDF and frequencies are), so sum > 0: matched
        return found + (low + base), sums[found]
    found, where = np.unique(ids, return_inverse=True)
    sums = np.bincount(where, weights=scores, minlength=len(found))
    if excluded is not None and len(excluded):
        keep = ~np.isin(found, excluded - base)
        found, sums = found[keep], sums[keep]
    return found + base, sums


@dataclass(frozen=True)
class PackedTopK:
    ids: np.ndarray  # best first
    scores: np.ndarray
    scored_terms: tuple[str, ...]  # every posting of these terms was scored
    probed_terms: tuple[str, ...]  # these terms' postings were looked up for the candidates only
    candidates: int  # chunks completed with the probed terms


PROBE_COST_IN_POSTINGS = (
    3  # measured: a binary search for one chunk in one list costs about three postings scored
)


def top_k_packed(
    packed, current, changed_ids: np.ndarray, weights: dict[str, float], avgdl: float, k: int
) -> PackedTopK:
    """Exact BM25's k best over packed postings, without scoring every posting (MaxScore).

    A term adds at most its bound to any chunk (its weight times the impact of its largest frequency
    at its shortest length). Terms are scored whole, highest bound first; θ is the k-th best
    complete score so far. Once the remaining bounds sum below θ, only chunks already found can
    still reach the top k, and those are completed by binary search in the remaining lists, unless
    that would cost more than scoring them whole (PROBE_COST_IN_POSTINGS). `current` (chunks changed
    or newer, from the table) is scored whole; `packed` postings of chunks in `changed_ids` are
    ignored.
    """
    base = packed[0].base if packed else 0
    fresh_ids, fresh_scores = _summed(current, weights, avgdl)
    terms = [p for p in packed if len(p.chunk_ids)]
    span = max([int(p.chunk_ids[-1]) + 1 for p in terms] or [0])
    if not terms or (len(fresh_ids) and int(fresh_ids.min()) < base):
        ids, scores = score_postings(packed, current, changed_ids, weights, avgdl)
        top_ids, top_scores = best_first(ids, scores, k)
        return PackedTopK(top_ids[:k], top_scores[:k], tuple(p.lexeme for p in packed), (), 0)
    bound = {
        p.lexeme: weights[p.lexeme] * impact(float(p.tfs.max()), p.shortest(), avgdl) for p in terms
    }
    terms.sort(key=lambda p: (-bound[p.lexeme], p.lexeme))
    excluded = changed_ids - base
    excluded = excluded[(excluded >= 0) & (excluded < span)]
    universe = None
    if (
        span > 32 * sum(len(p.chunk_ids) for p in terms) + 1024
    ):  # ids spread thin: number the chunks matched
        universe = np.unique(np.concatenate([p.chunk_ids for p in terms]).astype(np.int64))
        terms = [
            dataclasses.replace(
                p,
                chunk_ids=np.searchsorted(universe, p.chunk_ids.astype(np.int64)),
                lengths=p.lengths_at(),
                length_of=None,
            )  # few postings: align their lengths
            for p in terms
        ]
        where = np.minimum(np.searchsorted(universe, excluded), len(universe) - 1)
        excluded, span = where[universe[where] == excluded], len(universe)
    partial = np.zeros(span)
    rest = sum(bound.values())
    candidates, scored, best, looked_up = None, 0, np.empty(0, np.int64), 0
    for scored, term in enumerate(terms, start=1):
        offsets = term.chunk_ids.astype(np.int64)
        partial[offsets] += _impacts(term.tfs, term.lengths_at(), weights[term.lexeme], avgdl)
        partial[excluded] = 0  # a list holds a chunk once per term, so += adds each posting
        rest -= bound[term.lexeme]
        remaining = terms[scored:]
        if not remaining:
            break
        best = _best_partial(
            partial, np.concatenate([best, offsets]), k
        )  # k distinct chunks, the best known
        known = np.concatenate(
            [_completed_above(partial, best, remaining, weights, avgdl, bound)[1], fresh_scores]
        )
        if len(known) < k:
            continue
        theta = float(
            np.partition(known, len(known) - k)[len(known) - k]
        )  # k chunks reach it: a floor
        if rest >= theta - 1e-6:
            continue  # a chunk only the other terms match could still reach the top k
        touched = _touched(partial)
        reachable = touched[partial[touched] + rest >= theta - 1e-6]
        if len(reachable) * len(remaining) * PROBE_COST_IN_POSTINGS <= sum(
            len(t.chunk_ids) for t in remaining
        ):
            candidates = reachable
            break
    probed = terms[scored:] if candidates is not None else []
    if candidates is None:
        candidates, completed = _touched(partial), None
    else:
        looked_up = len(candidates)
        candidates, completed = _completed_above(
            partial, candidates, probed, weights, avgdl, bound, theta
        )
    scores = np.concatenate([partial[candidates] if completed is None else completed, fresh_scores])
    ids = np.concatenate(
        [(candidates if universe is None else universe[candidates]) + base, fresh_ids]
    )
    top_ids, top_scores = best_first(ids, scores, k)
    return PackedTopK(
        top_ids[:k],
        top_scores[:k],
        tuple(t.lexeme for t in terms[: len(terms) - len(probed)]),
        tuple(t.lexeme for t in probed),
        looked_up if probed else 0,
    )


def _completed_above(
    partial: np.ndarray,
    candidates: np.ndarray,
    terms,
    weights: dict[str, float],
    avgdl: float,
    bound: dict[str, float],
    theta: float = -np.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates' partial scores plus their postings in `terms` (highest bound first), found
    by binary search in the lists (sorted by chunk), dropping after each term those whose score
    so far plus the bounds of the terms left falls below θ: (offsets, scores)."""
    scores = partial[candidates]
    rest = sum(bound[t.lexeme] for t in terms)
    for term in terms:
        rest -= bound[term.lexeme]
        lists = (
            term.chunk_ids.astype(np.int32) if len(candidates) > 1000 else term.chunk_ids
        )  # native: faster search
        where = np.minimum(np.searchsorted(lists, candidates.astype(lists.dtype)), len(lists) - 1)
        hit = np.flatnonzero(lists[where] == candidates)
        if len(hit):
            scores[hit] += _impacts(
                term.tfs[where[hit]], term.lengths_at(where[hit]), weights[term.lexeme], avgdl
            )
        keep = scores + rest >= theta - 1e-6
        candidates, scores = candidates[keep], scores[keep]
    return candidates, scores


def _touched(partial: np.ndarray) -> np.ndarray:
    """The chunks (offsets, ascending) with a partial score: those the scored terms matched,
    less the changed ones (zeroed)."""
    return np.flatnonzero(partial > 0)


def _best_partial(partial: np.ndarray, offsets: np.ndarray, k: int) -> np.ndarray:
    """Up to k distinct chunks among `offsets` (which may repeat one) with the best partial
    scores."""
    if len(offsets) > 2 * k:  # a chunk is at most twice in the best 2k: they hold k distinct ones
        offsets = offsets[np.argpartition(-partial[offsets], 2 * k - 1)[: 2 * k]]
    offsets = np.unique(offsets)
    offsets = offsets[partial[offsets] > 0]
    if len(offsets) > k:
        offsets = offsets[np.argpartition(-partial[offsets], k - 1)[:k]]
    return offsets


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
