"""Estimate the mean and spread of a query's cosines to every passage of its namespace.

The vector channel reads only the nearest 100; how far they stand from the namespace as a whole
needs a sample (SAMPLE_SIZE passages, within a few percent), kept per process. A search never waits
for it: the first search of a namespace starts reading it on a thread (about a second at a million
passages) and logs no excess until it is read. It is read again after the namespace grew or shrank
by REFRESH_SHARE; at most CACHED_NAMESPACES are kept.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
from django.db import connections

from kb.replicas import on_replica, read_connection
from retrieval import model_reading
from retrieval.agreement import Reading
from retrieval.breadth import meaning_excess

logger = logging.getLogger(__name__)

SAMPLE_SIZE = 1024
REFRESH_SHARE = 0.1
CACHED_NAMESPACES = 32

_samples: OrderedDict[int, Sample] = OrderedDict()
_reading: set[int] = set()  # namespaces whose sample a thread is reading
_lock = threading.Lock()


class Sample(NamedTuple):
    """What is kept of a namespace: the passages its searches counted when it was read, how many
    are embedded, unit rows of the sampled ones, and how well the model reads the namespace,
    measured on its headings (`retrieval.model_reading`; None where that decides nothing or too
    few tell)."""

    passages: int
    embedded: int
    rows: np.ndarray
    agreement: Reading | None


def query_excess(
    namespace_id: int, passages: int, query_vector, top_cosine: float, *, wait: bool = False
) -> float | None:
    """The excess over chance of a query's best cosine in its namespace (`passages`: the count a
    search reads with the namespace, which says when the sample is stale); None when the
    namespace has too few embedded passages to tell, or (unless `wait`) while its sample is read."""
    read = namespace_sample(namespace_id, passages, wait=wait)
    if read is None:
        return None
    embedded, sample, _ = read
    query = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if norm == 0 or sample.shape[1] != query.shape[-1]:
        return None
    cosines = sample @ (query / norm)
    return meaning_excess(top_cosine, float(cosines.mean()), float(cosines.std()), embedded)


def namespace_agreement(namespace_id: int, passages: int, *, wait: bool = False) -> Reading | None:
    """How well the meaning model reads the namespace (`retrieval.model_reading`), kept with its
    sample; None while (unless `wait`) it is read, or where it decides nothing or too few tell."""
    read = namespace_sample(namespace_id, passages, wait=wait)
    return read[2] if read is not None else None


def namespace_sample(
    namespace_id: int, passages: int, *, wait: bool = False
) -> tuple[int, np.ndarray, Reading | None] | None:
    """How many passages of the namespace are embedded, unit embeddings of up to SAMPLE_SIZE of
    them, spread over its ids, and how well the model reads it: the kept ones, or
    (`wait`) read now unless the kept ones are usable; otherwise a thread starts reading them and
    the kept ones, if any, serve meanwhile. `passages` (the namespace's own count, read with it by
    every search) says when they are stale."""
    with _lock:
        cached = _samples.get(namespace_id)
        fresh = (
            cached is not None
            and abs(cached.passages - passages) <= REFRESH_SHARE * cached.passages
        )
        if fresh and (not wait or _usable(cached) is not None):
            _samples.move_to_end(namespace_id)
            return _usable(cached)
        if not wait:
            if namespace_id not in _reading:
                _reading.add(namespace_id)
                threading.Thread(
                    target=_read_in_background,
                    args=(namespace_id, passages),
                    daemon=True,
                    name=f"kb-meaning-sample-{namespace_id}",
                ).start()
            return _usable(cached) if cached is not None else None
    return _usable(_keep(namespace_id, passages, *_read_sample(namespace_id)))


def forget_samples() -> None:
    """Drop every kept sample, so the next search reads its namespace's passages again."""
    with _lock:
        _samples.clear()


def _usable(kept: Sample) -> tuple[int, np.ndarray, Reading | None] | None:
    return (kept.embedded, kept.rows, kept.agreement) if len(kept.rows) >= 3 else None


def _keep(
    namespace_id: int, passages: int, embedded: int, sample: np.ndarray, agreed: Reading | None
) -> Sample:
    kept = Sample(passages, embedded, sample, agreed)
    with _lock:
        _samples[namespace_id] = kept
        _samples.move_to_end(namespace_id)
        while len(_samples) > CACHED_NAMESPACES:
            _samples.popitem(last=False)
    return kept


def _read_in_background(namespace_id: int, passages: int) -> None:
    try:
        _keep(namespace_id, passages, *on_replica(lambda: _read_sample(namespace_id)))
    except (
        Exception
    ) as exc:  # a thread's failure is logged, whatever it is; the next search tries again
        logger.warning("namespace %s: its passages' sample was not read: %s", namespace_id, exc)
    finally:
        with _lock:
            _reading.discard(namespace_id)
        connections.close_all()  # this thread's own


def _forget_in_child() -> None:
    """A forked child has none of its parent's reader threads: nothing is being read for it."""
    global _lock
    _lock = threading.Lock()
    _reading.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _read_sample(namespace_id: int) -> tuple[int, np.ndarray, Reading | None]:
    """How many of the namespace's passages are embedded, every step-th of them by id, and how
    well the model reads the namespace (`retrieval.model_reading`)."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM kb_chunk WHERE namespace_id = %s AND embedding IS NOT NULL",
            [namespace_id],
        )
        embedded = cursor.fetchone()[0]
        step = max(
            1, -(-embedded // SAMPLE_SIZE)
        )  # at most SAMPLE_SIZE, spread over the namespace's ids
        cursor.execute(
            "SELECT embedding::real[] FROM kb_chunk WHERE namespace_id = %s AND embedding IS NOT "
            "NULL AND id %% %s = 0 LIMIT %s",
            [namespace_id, step, SAMPLE_SIZE],
        )
        rows = [row[0] for row in cursor.fetchall()]
    if not rows:
        return embedded, np.zeros((0, 0), dtype=np.float32), None
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (
        embedded,
        matrix / np.where(norms == 0, 1, norms),
        model_reading.measure(namespace_id, embedded),
    )
