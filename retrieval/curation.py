"""What readers look for, for curators: the query report, reader feedback, and votes as judgements.

The query log row and per result at most one vote (helpful or not, with no user) are deleted after
KB_QUERY_RETENTION_DAYS (`prune_queries`). ORM reads and writes in one place; views and API are
thin.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Max, Q
from django.db.models.functions import Lower, Trim
from django.utils import timezone

from kb.audiences import document_filter, reads
from kb.auth import Principal, require_readable
from kb.embedding.embedders import strong_cosine
from kb.errors import NotFound
from kb.models import Chunk, Namespace, QueryFeedback, QueryLog
from retrieval import querylog
from retrieval.errors import FeedbackNotAResult

REPORT_ROWS = 20
PERIODS = (1, 7, 30, 90)


def record_feedback(
    principal: Principal, query_id: int, chunk_id: int, helpful: bool
) -> QueryFeedback:
    """One reader's vote on one result of a logged search; voting again changes it. A search
    the caller may not read answers like one that does not exist."""
    missing = NotFound(f"No logged search {query_id}.")
    querylog.flush()  # a search of this process moments ago may still be queued
    # or of another process, written within a moment; another tenant's search is waited for as long
    # as a missing one (the same statements, the same time), so the answer's time is no oracle
    log = querylog.wait_for(query_id, namespaces=principal.readable_namespaces())
    if log is None:
        raise missing
    require_readable(principal, log.namespace.slug, missing)
    document_id, audience_id = Chunk.objects.filter(pk=chunk_id).values_list(
        "document_id", "audience_id"
    ).first() or (0, None)  # a passage deleted since still takes its vote
    if chunk_id not in log.result_ids or not reads(principal.audiences, audience_id):
        raise FeedbackNotAResult(
            f"Result {chunk_id} is not one of search {query_id}'s results.",
            details={"query_id": query_id, "chunk_id": chunk_id},
        )
    feedback, _ = QueryFeedback.objects.update_or_create(
        query_log=log, chunk_id=chunk_id, defaults={"helpful": helpful, "document_id": document_id}
    )
    return feedback


@dataclass(frozen=True)
class QueryRow:
    query: str  # normalised: trimmed, lower case
    count: int
    previous: int  # the same query in the period before
    zero: int  # searches that returned nothing
    weak: int  # searches none of whose results was a strong match (retrieval.hits.StrongMatch)
    helpful: int
    unhelpful: int
    latest_id: int

    @property
    def trend(self) -> str:
        if not self.previous:
            return "new"
        change = (self.count - self.previous) / self.previous
        return f"{change:+.0%}"


def query_report(namespace: Namespace, days: int, *, now: datetime | None = None) -> dict:
    """Top, zero-result and weak queries of one namespace in the last `days` days, each with
    its count, the previous period's count and the votes its results got."""
    now = now or timezone.now()
    start, previous_start = now - timedelta(days=days), now - timedelta(days=2 * days)
    logs = QueryLog.objects.filter(namespace=namespace).annotate(normalised=Lower(Trim("query")))
    current = (
        logs.filter(created_at__gte=start)
        .values("normalised")
        .annotate(
            count=Count("id", distinct=True),
            zero=Count("id", filter=Q(result_ids=[]), distinct=True),
            weak=Count(
                "id",
                distinct=True,
                filter=(
                    Q(strong=False)
                    | Q(result_ids=[])
                    | Q(strong=None, top_cosine__lt=strong_cosine())
                ),
            ),  # logged before `strong` was recorded
            helpful=Count("feedback", filter=Q(feedback__helpful=True), distinct=True),
            unhelpful=Count("feedback", filter=Q(feedback__helpful=False), distinct=True),
            latest_id=Max("id"),
        )
    )
    before = dict(
        logs.filter(created_at__gte=previous_start, created_at__lt=start)
        .values("normalised")
        .annotate(count=Count("id"))
        .values_list("normalised", "count")
    )
    rows = [
        QueryRow(
            r["normalised"],
            r["count"],
            before.get(r["normalised"], 0),
            r["zero"],
            r["weak"],
            r["helpful"],
            r["unhelpful"],
            r["latest_id"],
        )
        for r in current
    ]
    rows.sort(key=lambda r: (-r.count, r.query))
    searches = logs.filter(created_at__gte=start).count()
    return {
        "days": days,
        "searches": searches,
        "previous_searches": logs.filter(
            created_at__gte=previous_start, created_at__lt=start
        ).count(),
        "top": rows[:REPORT_ROWS],
        "zero": [r for r in rows if r.zero][:REPORT_ROWS],
        "weak": [r for r in rows if r.weak and not r.zero][:REPORT_ROWS],
        "voted": [r for r in rows if r.helpful or r.unhelpful][:REPORT_ROWS],
    }


def query_results(log: QueryLog, reach: frozenset[int] | None = frozenset()) -> list[dict]:
    """The documents a logged search returned, in order, with the votes they got: of those,
    only the ones a reader of `reach` (`kb.audiences`) may read, since whoever searched may have
    read more."""
    votes = {f.chunk_id: f.helpful for f in log.feedback.all()}
    chunks = {
        c.pk: c
        for c in Chunk.objects.filter(
            document_filter(reach, "document__"), pk__in=log.result_ids
        ).select_related("document")
    }
    seen, results = set(), []
    for chunk_id in log.result_ids:
        chunk = chunks.get(chunk_id)
        if chunk is None or chunk.document_id in seen:
            continue
        seen.add(chunk.document_id)
        document_votes = [
            votes[c]
            for c in log.result_ids
            if c in votes and c in chunks and chunks[c].document_id == chunk.document_id
        ]
        results.append(
            {
                "ref": chunk.document.ref,
                "title": chunk.document.title or chunk.document.ref,
                "helpful": any(document_votes),
                "unhelpful": bool(document_votes) and not any(document_votes),
            }
        )
    return results


def judged_from_feedback(results: list[dict]) -> tuple[list[str], list[str]]:
    """(relevant, irrelevant) refs of one logged search's results (`query_results`), as one click
    judges them: the documents readers found useful, else the top result; those found not useful."""
    helpful = [r["ref"] for r in results if r["helpful"]]
    relevant = helpful or [r["ref"] for r in results if not r["unhelpful"]][:1]
    return relevant, [r["ref"] for r in results if r["unhelpful"] and r["ref"] not in relevant]


def prune_queries(days: int, *, now: datetime | None = None) -> int:
    """Delete query log rows (and so their feedback) older than `days` days; return how many."""
    cutoff = (now or timezone.now()) - timedelta(days=days)
    _, per_model = QueryLog.objects.filter(created_at__lt=cutoff).delete()
    return per_model.get(QueryLog._meta.label, 0)
