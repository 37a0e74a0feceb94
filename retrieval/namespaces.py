"""What a caller may read, summarised: its namespaces and their sources, with counts and
freshness (the last successful ingest run). For the API's /namespaces and the MCP tools.
Each namespace says why the caller reads it (`access`): a member's own namespaces are "member",
the public ones it reads without a membership "public"."""

from __future__ import annotations

from django.db.models import Count, Max

from kb.audiences import document_filter
from kb.auth import Principal
from kb.models import Document, IngestRun, NamespaceStats, Source

MAX_SOURCES = 500


UNDETERMINED = "und"


def namespace_summaries(principal: Principal) -> list[dict]:
    namespaces = list(principal.readable_namespaces().order_by("slug"))
    ids = [n.pk for n in namespaces]
    documents = dict(
        Document.objects.filter(document_filter(principal.audiences), namespace_id__in=ids)
        .values_list("namespace_id")
        .annotate(n=Count("id"))
    )
    sources = dict(
        Source.objects.filter(document_filter(principal.audiences), namespace_id__in=ids)
        .values_list("namespace_id")
        .annotate(n=Count("id"))
    )
    chunks = dict(
        NamespaceStats.objects.filter(namespace_id__in=ids).values_list(
            "namespace_id", "chunk_count"
        )
    )
    fresh = dict(
        IngestRun.objects.filter(source__namespace_id__in=ids, status=IngestRun.Status.SUCCEEDED)
        .values_list("source__namespace_id")
        .annotate(at=Max("finished_at"))
    )
    return [
        {
            "slug": n.slug,
            "title": n.title or n.slug,
            "description": n.description,
            "is_public": n.is_public,
            "access": principal.access(n),
            "sources": sources.get(n.pk, 0),
            "documents": documents.get(n.pk, 0),
            "chunks": chunks.get(n.pk, 0),
            "last_success_at": fresh.get(n.pk),
            "language": n.language,
            "document_languages": _named(n.document_languages),
        }
        for n in namespaces
    ]


def _named(document_languages: dict[str, int]) -> dict[str, int]:
    """Documents per language, those whose language was not detected (too short, unsure) under
    "und", ISO 639's code for undetermined, rather than an empty key."""
    named = {language or UNDETERMINED: 0 for language in document_languages}
    for language, count in document_languages.items():
        named[language or UNDETERMINED] += count
    return named


def source_summaries(principal: Principal, namespaces: list[str] | None = None) -> list[dict]:
    """The sources of the readable namespaces (or of those of `namespaces` it may read), at
    most MAX_SOURCES, with their document counts and last successful run."""
    queryset = Source.objects.filter(
        document_filter(principal.audiences), namespace__in=principal.readable_namespaces()
    )
    if namespaces:
        queryset = queryset.filter(namespace__slug__in=namespaces)
    rows = list(
        queryset.select_related("namespace").order_by("namespace__slug", "name", "id")[:MAX_SOURCES]
    )
    ids = [s.pk for s in rows]
    documents = dict(
        Document.objects.filter(document_filter(principal.audiences), source_id__in=ids)
        .values_list("source_id")
        .annotate(n=Count("id"))
    )
    fresh = dict(
        IngestRun.objects.filter(source_id__in=ids, status=IngestRun.Status.SUCCEEDED)
        .values_list("source_id")
        .annotate(at=Max("finished_at"))
    )
    return [
        {
            "id": s.pk,
            "namespace": s.namespace.slug,
            "name": s.name,
            "kind": s.kind,
            "enabled": s.enabled,
            "documents": documents.get(s.pk, 0),
            "last_run_status": s.last_run_status,
            "last_run_at": s.last_run_at,
            "last_success_at": fresh.get(s.pk),
        }
        for s in rows
    ]
