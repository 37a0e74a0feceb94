"""What audiences cost search (`kb_bench --audiences`, issue #61): the corpus's search latency in
one run, first as it is, then with half its documents limited to one group (read by a reader
outside it and by one inside), then with every document limited to one of two groups (a reader of
one), and as it is again; the namespace is left as it was found.

Restricted documents keep their words' statistics apart (kb/migrations/0049_audiences.py): the
outsider reads the namespace's own statistics and lists (the open half), the insider the sum of
the namespace's and the audience's, whose postings are read from the table beside the packed
lists. The packed lists and the vector index are brought up to date after each change, as the
next ingest run would."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.contrib.auth.models import Group

from kb.audiences import audience_for, limit_documents
from kb.models import Chunk, Document, Namespace
from kb.signals import namespaces_changed

GROUPS = ("kb-bench-audience-a", "kb-bench-audience-b")


def audience_latency(namespace: str, latency: Callable[..., dict]) -> dict:
    """`latency(namespace, reach=...)`: the benchmark's own latency measurement (p50, p95, stages).
    Returns each configuration's measurement and the p95 of each against the unrestricted one."""
    space = Namespace.objects.get(slug=namespace)
    ids = list(Document.objects.filter(namespace=space).order_by("id").values_list("id", flat=True))
    a, b = (Group.objects.get_or_create(name=name)[0] for name in GROUPS)
    half, other = ids[::2], ids[1::2]
    report: dict = {"documents": len(ids), "restricted_documents": len(half)}
    try:
        report["open"] = latency(namespace)
        report["half_restricted"] = {
            "apply_s": _limit(space, half, [b.pk]),
            "restricted_chunks": Chunk.objects.filter(
                namespace=space, audience__isnull=False
            ).count(),
            "outside": latency(namespace),
            "inside": latency(namespace, reach=frozenset({audience_for(space.pk, [b.pk])})),
        }
        report["every_document"] = {
            "apply_s": _limit(space, other, [a.pk]),
            "inside_one": latency(namespace, reach=frozenset({audience_for(space.pk, [a.pk])})),
        }
    finally:
        report["restore_s"] = _limit(space, ids, [])
        Group.objects.filter(name__in=GROUPS).delete()
    report["open_again"] = latency(namespace)
    base = report["open"]["p95_ms"]
    report["p95_vs_open"] = {
        "half_restricted_outside": _ratio(report["half_restricted"]["outside"], base),
        "half_restricted_inside": _ratio(report["half_restricted"]["inside"], base),
        "every_document_inside_one": _ratio(report["every_document"]["inside_one"], base),
        "open_again": _ratio(report["open_again"], base),
    }
    return report


def _limit(space: Namespace, document_ids: list[int], group_ids: list[int]) -> float:
    """Seconds to limit the documents (and to bring the namespace's lists and index up to date)."""
    started = time.perf_counter()
    limit_documents(space.pk, document_ids, group_ids)
    namespaces_changed.send(sender=audience_latency, namespace_ids=[space.pk])  # as a run ends
    return round(time.perf_counter() - started, 2)


def _ratio(measured: dict, base: float) -> float | None:
    return round(measured["p95_ms"] / base, 3) if base else None
