"""Where a query's best passage stands among every passage of its namespace: the mean and spread
of the query's cosines to all of them, estimated from a fixed sample of the namespace's
embeddings that each process keeps, and from them the excess over chance
(`retrieval.fusion.meaning_excess`) that the query log keeps per search.

The vector channel reads only the nearest 100, which say how a passage compares with the others
near the query; how far the nearest stand from the namespace as a whole needs the rest. A sample
of SAMPLE_SIZE passages gives the mean and spread to within a few percent. A search never waits
for it: the first search of a namespace in a process starts reading it on a thread of its own
(a large namespace's sample reads every row of it, about a second at a million passages) and
logs no excess, nor do the searches until it is read. It is read again when the namespace has
grown or shrunk by REFRESH_SHARE (the old one serves meanwhile), and at most CACHED_NAMESPACES
are kept.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import numpy as np
from django.db import DatabaseError, connections

from kb.replicas import read_connection
from retrieval.fusion import meaning_excess

logger = logging.getLogger(__name__)

SAMPLE_SIZE = 1024
REFRESH_SHARE = 0.1
CACHED_NAMESPACES = 32

_samples: OrderedDict[int, tuple[int, np.ndarray]] = OrderedDict()  # namespace: (its passages then, unit rows)
_reading: set[int] = set()  # namespaces whose sample a thread is reading
_lock = threading.Lock()


def query_excess(namespace_id: int, passages: int, query_vector, top_cosine: float, *,
                 wait: bool = False) -> float | None:
    """The excess over chance of a query's best cosine in its namespace of `passages` passages;
    None when the namespace has too few embedded passages to tell, or (unless `wait`) while its
    sample is being read."""
    sample = namespace_sample(namespace_id, passages, wait=wait)
    if sample is None:
        return None
    query = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if norm == 0:
        return None
    cosines = sample @ (query / norm)
    return meaning_excess(top_cosine, float(cosines.mean()), float(cosines.std()), passages)


def namespace_sample(namespace_id: int, passages: int, *, wait: bool = False) -> np.ndarray | None:
    """Unit embeddings of up to SAMPLE_SIZE of the namespace's passages, spread over its ids:
    the kept one, or (`wait`) one read now; otherwise a thread starts reading it and the kept one,
    if any, serves meanwhile."""
    with _lock:
        cached = _samples.get(namespace_id)
        if cached is not None and abs(cached[0] - passages) <= REFRESH_SHARE * cached[0]:
            _samples.move_to_end(namespace_id)
            return _usable(cached[1])
        if not wait:
            if namespace_id not in _reading:
                _reading.add(namespace_id)
                threading.Thread(target=_read_in_background, args=(namespace_id, passages), daemon=True,
                                 name=f"kb-meaning-sample-{namespace_id}").start()
            return _usable(cached[1]) if cached is not None else None
    return _usable(_keep(namespace_id, passages, _read_sample(namespace_id, passages)))


def forget_samples() -> None:
    """Drop every kept sample, so the next search reads its namespace's passages again."""
    with _lock:
        _samples.clear()


def _usable(sample: np.ndarray) -> np.ndarray | None:
    return sample if len(sample) >= 3 else None


def _keep(namespace_id: int, passages: int, sample: np.ndarray) -> np.ndarray:
    with _lock:
        _samples[namespace_id] = (passages, sample)
        _samples.move_to_end(namespace_id)
        while len(_samples) > CACHED_NAMESPACES:
            _samples.popitem(last=False)
    return sample


def _read_in_background(namespace_id: int, passages: int) -> None:
    try:
        _keep(namespace_id, passages, _read_sample(namespace_id, passages))
    except DatabaseError as exc:  # the next search tries again
        logger.warning("namespace %s: its passages' sample was not read: %s", namespace_id, exc)
    finally:
        with _lock:
            _reading.discard(namespace_id)
        connections.close_all()  # this thread's own


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
