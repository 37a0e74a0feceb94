"""Search and context endpoints. Thin: parse, check access, call the service, shape."""

from django.http import HttpRequest
from ninja import Query, Router

from kb.errors import AuthenticationRequired
from retrieval import presenters
from retrieval.eval_runner import run_suite
from retrieval.evals import parse_suite
from retrieval.curation import record_feedback
from retrieval.schemas import ContextIn, ContextOut, EvalRunIn, FeedbackIn, FeedbackOut, SearchIn, SearchOut
from retrieval.service import Filters, search

MAX_API_EVAL_CASES = 200
router = Router(tags=["search"])


def _search(request: HttpRequest, data: SearchIn) -> dict:
    request.auth.check(data.namespace)
    result = search(data.query, data.namespace, limit=data.limit, group=data.group,
                    filters=Filters(tuple(data.source_ids), tuple(data.document_ids)), caller="api")
    return presenters.search_payload(result, explain=data.explain)


@router.get("/search", response=SearchOut, summary="Search a namespace (query string)")
def search_get(request, params: Query[SearchIn]):
    return _search(request, params)


@router.post("/search", response=SearchOut, summary="Search a namespace (JSON body)")
def search_post(request, data: SearchIn):
    return _search(request, data)


@router.post("/feedback", response=FeedbackOut, summary="A reader's thumbs up or down on one result of a search")
def feedback(request, data: FeedbackIn):
    """Names the search by the `query_id` its response carried; voting again replaces the vote."""
    vote = record_feedback(request.auth, data.query_id, data.chunk_id, data.helpful)
    return {"query_id": vote.query_log_id, "chunk_id": vote.chunk_id, "document_id": vote.document_id,
            "helpful": vote.helpful}


@router.post("/context", response=ContextOut, summary="Retrieval as a delimited context block for an LLM")
def context(request, data: ContextIn):
    request.auth.check(data.namespace)
    result = search(data.query, data.namespace, limit=data.limit, caller="api")
    return presenters.context_payload(result, max_chars=data.max_chars)


@router.post("/evals/run", summary="Run an eval suite (the kb_eval JSON format) and return every check")
def run_eval(request, data: EvalRunIn):
    """Needs a token or a staff session. At most MAX_API_EVAL_CASES cases per request, each
    counted against the caller's rate limit as a search; larger suites run with `kb_eval`."""
    if request.auth.kind == "anonymous":
        raise AuthenticationRequired("Running evals needs an API token or a staff session: each case is a search.")
    suite = parse_suite(data.suite, namespace=data.namespace, max_cases=MAX_API_EVAL_CASES)
    for namespace in {case.namespace for case in suite.cases}:
        request.auth.check(namespace)
    request.auth.charge(len(suite.cases) - 1)  # each case is a search; the request itself was counted
    return run_suite(suite, principal=request.auth).as_dict()
