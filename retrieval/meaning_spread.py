"""Where a query's best passage stands among every passage of its namespace: the mean and spread
of the query's cosines to all of them, estimated from a fixed sample of the namespace's
embeddings that each process keeps, and from them the excess over chance
(`retrieval.fusion.meaning_excess`) that the query log keeps per search.

The vector channel reads only the nearest 100, which say how a passage compares with the others
near the query; how far the nearest stand from the namespace as a whole needs the rest. A sample
of SAMPLE_SIZE passages gives the mean and spread to within a few percent; it is read again when
the namespace has grown or shrunk by REFRESH_SHARE, and at most CACHED_NAMESPACES are kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from kb.replicas import read_connection
from retrieval.fusion import meaning_excess

SAMPLE_SIZE = 1024
REFRESH_SHARE = 0.1
CACHED_NAMESPACES = 32

_samples: OrderedDict[int, tuple[int, np.ndarray]] = OrderedDict()  # namespace: (its passages then, unit rows)
_lock = threading.Lock()


def query_excess(namespace_id: int, passages: int, query_vector, top_cosine: float) -> float | None:
    """The excess over chance of a query's best cosine in its namespace of `passages` passages,
    or None when the namespace has too few embedded passages to tell."""
    sample = namespace_sample(namespace_id, passages)
    if sample is None:
        return None
    query = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if norm == 0:
        return None
    cosines = sample @ (query / norm)
    return meaning_excess(top_cosine, float(cosines.mean()), float(cosines.std()), passages)


def namespace_sample(namespace_id: int, passages: int) -> np.ndarray | None:
    """Unit embeddings of up to SAMPLE_SIZE of the namespace's passages, spread over its ids."""
    with _lock:
        cached = _samples.get(namespace_id)
        if cached is not None and abs(cached[0] - passages) <= REFRESH_SHARE * cached[0]:
            _samples.move_to_end(namespace_id)
            return cached[1]
    sample = _read_sample(namespace_id, passages)
    with _lock:
        _samples[namespace_id] = (passages, sample)
        _samples.move_to_end(namespace_id)
        while len(_samples) > CACHED_NAMESPACES:
            _samples.popitem(last=False)
    return sample if len(sample) >= 3 else None


def forget_samples() -> None:
    """Drop every kept sample, so the next search reads its namespace's passages again."""
    with _lock:
        _samples.clear()


def _read_sample(namespace_id: int, passages: int) -> np.ndarray:
    step = max(1, -(-passages // SAMPLE_SIZE))  # every step-th id: at most SAMPLE_SIZE, spread over the namespace
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT embedding::real[] FROM kb_chunk WHERE namespace_id = %s AND embedding IS NOT NULL"
            " AND id %% %s = 0 LIMIT %s", [namespace_id, step, SAMPLE_SIZE])
        rows = [row[0] for row in cursor.fetchall()]
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)
