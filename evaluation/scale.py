"""Build a large namespace for the latency scaling run: a benchmark corpus copied N times.

Copies are written in bulk, so the postings trigger does its real work, with the text perturbed and
each embedding moved by small noise: near neighbours, not exact duplicates. Embedding them for real
would take hours on a CPU and measure the model again, not the search.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from django.db import connection

from evaluation import search_parts as evaluate
from evaluation.copies import copy_documents
from kb.models import Namespace, Source

COPIES_SOURCE = (
    "scaled copies, recipe 2"  # named after the recipe, so a copy made by another is never reused
)


@dataclass(frozen=True)
class ScaledCopy:
    chunks: int
    copies_seconds: (
        float  # writing the copies this time (0 when the namespace was already that large)
    )
    index_seconds: float  # building its vector index this time (0 when it existed)
    index_state: str  # what ensure_namespace_index did: built, exists, ...
    lists_seconds: float  # building its packed posting lists this time (0 when they were current)
    lists_state: str  # what posting_lists.ensure did: built, current, ...


def build_scaled_copy(
    base_namespace: str,
    target_namespace: str,
    target_chunks: int,
    progress: Callable[[int, int], None] | None = None,
) -> ScaledCopy:
    base = Namespace.objects.get(slug=base_namespace)
    target, _ = Namespace.objects.get_or_create(
        slug=target_namespace, defaults={"title": "Latency scaling run"}
    )
    stale = Source.objects.filter(namespace=target).exclude(name=COPIES_SOURCE)
    if stale.exists():
        raise ValueError(
            f"namespace {target_namespace!r} holds copies made by another recipe "
            f"({stale.first().name!r}); delete the namespace and run again"
        )
    source, _ = Source.objects.get_or_create(
        namespace=target, name=COPIES_SOURCE, defaults={"kind": "text", "text": "scaled copies"}
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM kb_chunk WHERE namespace_id = %s", [base.id])
        per_copy = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM kb_chunk WHERE namespace_id = %s", [target.id])
        existing = cursor.fetchone()[0]
    copies = -(-target_chunks // per_copy)
    done = existing // per_copy if per_copy else 0
    started = time.perf_counter()
    for copy in range(done + 1, copies + 1):
        copy_documents(source.pk, base.id, target.id, marker=copy, drop_every=20 + copy % 7)
        if progress:
            progress(copy, copies)
    copies_seconds = time.perf_counter() - started
    started = time.perf_counter()
    index_state = evaluate.ensure_vector_index(target.id)
    index_seconds = time.perf_counter() - started
    started = time.perf_counter()
    lists_state = evaluate.ensure_posting_lists(target.id)
    lists_seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE kb_chunk")
        cursor.execute("ANALYZE kb_chunk_term")
        cursor.execute("SELECT count(*) FROM kb_chunk WHERE namespace_id = %s", [target.id])
        chunks = cursor.fetchone()[0]
    return ScaledCopy(
        chunks,
        round(copies_seconds, 1),
        round(index_seconds, 1) if index_state != "exists" else 0.0,
        index_state,
        round(lists_seconds, 1) if lists_state == "built" else 0.0,
        lists_state,
    )
