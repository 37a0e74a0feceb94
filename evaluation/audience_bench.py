"""Measure what audiences cost search (`kb_bench --audiences`); the namespace is left as found.

The corpus is searched as it is, with half its documents limited to one group (read by an outsider
and by a member), and with every document limited to one of two groups. Restricted documents keep
their words' statistics apart (kb/migrations/0049_audiences.py), so an insider's reads add the
audience's postings from the table beside the packed lists.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.contrib.auth.models import Group

from kb.audiences import audience_for, limit_documents
from kb.models import Chunk, Document, Namespace
from kb.signals import namespaces_changed

GROUPS = ("kb-bench-audience-a", "kb-bench-audience-b")


ROUNDS = 2  # each configuration measured this often, alternating, its best p95 kept


def audience_latency(namespace: str, latency: Callable[..., dict], rounds: int = ROUNDS) -> dict:
    """`latency(namespace, reach=...)`: the benchmark's own latency measurement (p50, p95, stages).
    The configurations are measured in turn, `rounds` times over, so a machine whose load drifts
    weighs on each alike; each one's best p95 is compared with the open namespace's."""
    space = Namespace.objects.get(slug=namespace)
    ids = list(Document.objects.filter(namespace=space).order_by("id").values_list("id", flat=True))
    a, b = (Group.objects.get_or_create(name=name)[0] for name in GROUPS)
    half, other = ids[::2], ids[1::2]
    report: dict = {"documents": len(ids), "restricted_documents": len(half), "rounds": []}
    try:
        for _ in range(rounds):
            measured = {"open": latency(namespace)}
            measured["apply_half_s"] = _limit(space, half, [b.pk])
            measured["restricted_chunks"] = Chunk.objects.filter(
                namespace=space, audience__isnull=False
            ).count()
            measured["half_restricted_outside"] = latency(namespace)
            measured["half_restricted_inside"] = latency(
                namespace, reach=frozenset({audience_for(space.pk, [b.pk])})
            )
            measured["apply_every_s"] = _limit(space, other, [a.pk])
            measured["every_document_inside_one"] = latency(
                namespace, reach=frozenset({audience_for(space.pk, [a.pk])})
            )
            measured["restore_s"] = _limit(space, ids, [])
            report["rounds"].append(measured)
    finally:
        _limit(space, ids, [])
        Group.objects.filter(name__in=GROUPS).delete()
    best = {
        name: min(r[name]["p95_ms"] for r in report["rounds"])
        for name in CONFIGURATIONS
        if all(name in r for r in report["rounds"])
    }
    report["best_p95_ms"] = best
    report["p95_vs_open"] = {
        name: round(p95 / best["open"], 3) if best.get("open") else None
        for name, p95 in best.items()
        if name != "open"
    }
    return report


CONFIGURATIONS = (
    "open",
    "half_restricted_outside",
    "half_restricted_inside",
    "every_document_inside_one",
)


def _limit(space: Namespace, document_ids: list[int], group_ids: list[int]) -> float:
    """Seconds to limit the documents (and to bring the namespace's lists and index up to date)."""
    started = time.perf_counter()
    limit_documents(space.pk, document_ids, group_ids)
    namespaces_changed.send(sender=audience_latency, namespace_ids=[space.pk])  # as a run ends
    return round(time.perf_counter() - started, 2)
