"""Search, context, feedback, document and namespace endpoints. Thin: parse, check access, call
the service, shape."""

from django.http import HttpRequest
from ninja import Query, Router

from kb.errors import ValidationFailed
from kb.identity.reads import Surface, record_restricted_reads
from kb.replicas import on_replica
from retrieval import documents, namespaces, presenters
from retrieval.curation import record_feedback
from retrieval.lookups import spelling_correction
from retrieval.schemas import (
    ContextIn,
    ContextOut,
    DocumentDetailOut,
    DocumentPageOut,
    DocumentTextOut,
    FeedbackIn,
    FeedbackOut,
    NamespaceListOut,
    SearchIn,
    SearchOut,
    SpellingIn,
    SpellingOut,
)
from retrieval.service import Filters, search

MAX_PAGE_SIZE = 100
MAX_PAGE = (
    1_000_000  # far past any namespace's end, and its offset stays inside PostgreSQL's bigint
)
router = Router(tags=["search"])


def _search(request: HttpRequest, data: SearchIn) -> dict:
    request.auth.check(data.namespace)
    result = search(
        data.query,
        data.namespace,
        limit=data.limit,
        group=data.group,
        filters=Filters(tuple(data.source_ids), tuple(data.document_ids)),
        caller="api",
        reach=request.auth.audiences,
    )
    return presenters.search_payload(result, explain=data.explain)


@router.get("/search", response=SearchOut, summary="Search a namespace (query string)")
def search_get(request, params: Query[SearchIn]):
    return _search(request, params)


@router.post("/search", response=SearchOut, summary="Search a namespace (JSON body)")
def search_post(request, data: SearchIn):
    return _search(request, data)


@router.get(
    "/spelling",
    response=SpellingOut,
    summary="Did you mean: the query respelt from the namespace's words",
)
def spelling(request, params: Query[SpellingIn]):
    """For a search with no or weak results, asked after them as the search page does, so the
    results never wait for it."""
    request.auth.check(params.namespace)
    correction = on_replica(
        lambda: spelling_correction(
            params.query,
            params.namespace,
            Filters(tuple(params.source_ids), tuple(params.document_ids)),
        )
    )
    return {"correction": correction}


@router.post(
    "/feedback",
    response=FeedbackOut,
    summary="A reader's thumbs up or down on one result of a search",
)
def feedback(request, data: FeedbackIn):
    """Names the search by the `query_id` its response carried; voting again replaces the vote."""
    vote = record_feedback(request.auth, data.query_id, data.chunk_id, data.helpful)
    return {
        "query_id": vote.query_log_id,
        "chunk_id": vote.chunk_id,
        "document_id": vote.document_id,
        "helpful": vote.helpful,
    }


@router.post(
    "/context", response=ContextOut, summary="Retrieval as a delimited context block for an LLM"
)
def context(request, data: ContextIn):
    request.auth.check(data.namespace)
    result = search(
        data.query, data.namespace, limit=data.limit, caller="api", reach=request.auth.audiences
    )
    return presenters.context_payload(result.hits, max_chars=data.max_chars)


# the documents and namespaces endpoints keep the operation ids clients were generated with
@router.get(
    "/documents", response=DocumentPageOut, tags=["documents"], operation_id="kb_api_list_documents"
)
def list_documents(request, namespace: str | None = None, page: int = 1, page_size: int = 20):
    if not 1 <= page <= MAX_PAGE or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValidationFailed(
            f"page must be between 1 and {MAX_PAGE} and page_size between 1 and {MAX_PAGE_SIZE}; "
            f"got page={page}, page_size={page_size}.",
            details={"page": page, "page_size": page_size},
        )

    def read():
        queryset = documents.visible_documents(request.auth, namespace)
        start = (page - 1) * page_size
        return {
            "count": queryset.count(),
            "page": page,
            "page_size": page_size,
            "results": list(queryset[start : start + page_size]),
        }

    return on_replica(read)


@router.get(
    "/documents/{document_id}",
    response=DocumentDetailOut,
    tags=["documents"],
    operation_id="kb_api_document_detail",
)
def document_detail(request, document_id: int):
    def read():
        document = documents.get_document(request.auth, document_id)
        return document, {
            **{
                f: getattr(document, f)
                for f in (
                    "id",
                    "source_id",
                    "ref",
                    "title",
                    "path",
                    "media_type",
                    "original_type",
                    "byte_size",
                    "language",
                    "created_at",
                    "indexed_at",
                )
            },
            "chunks": list(document.chunks.order_by("position")),
        }

    document, detail = on_replica(read)
    record_restricted_reads(request.auth, [document], Surface.API, request)
    return detail


@router.get(
    "/documents/{document_id}/text",
    response=DocumentTextOut,
    tags=["documents"],
    operation_id="kb_api_document_text",
)
def document_text(request, document_id: int, max_chars: int = 20000, offset: int = 0):
    """The text from character `offset`, at most `max_chars` of it; a cut closes with a marker
    and `next_offset` says where the next piece starts."""
    if not 1 <= max_chars <= 1_000_000:
        raise ValidationFailed("max_chars must be between 1 and 1000000.")
    document = on_replica(lambda: documents.get_document(request.auth, document_id))
    record_restricted_reads(request.auth, [document], Surface.API, request)
    return documents.capped_text(document, max_chars, offset)


@router.get(
    "/namespaces",
    response=NamespaceListOut,
    tags=["namespaces"],
    operation_id="kb_api_list_namespaces",
    summary="The namespaces the caller may read, with counts and freshness",
)
def list_namespaces(request):
    return on_replica(lambda: {"namespaces": namespaces.namespace_summaries(request.auth)})
