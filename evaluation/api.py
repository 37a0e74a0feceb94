"""The eval endpoint: run a suite sent in the request. Thin: parse, check access, run, shape."""

from ninja import Router

from evaluation.runner import run_suite
from evaluation.schemas import EvalRunIn
from evaluation.suites import MAX_CASES_PER_REQUEST, parse_suite
from kb.errors import AuthenticationRequired

router = Router(tags=["search"])  # where /api/docs has always listed it


@router.post(
    "/evals/run",
    summary="Run an eval suite (the kb_eval JSON format) and return every check",
    operation_id="retrieval_api_run_eval",
)  # the id clients were generated with
def run_eval(request, data: EvalRunIn):
    """Needs a token or a staff session. At most MAX_CASES_PER_REQUEST cases per request, each
    counted against the caller's rate limit as a search; larger suites run with `kb_eval`."""
    if request.auth.kind == "anonymous":
        raise AuthenticationRequired(
            "Running evals needs an API token or a staff session: each case is a search."
        )
    suite = parse_suite(data.suite, namespace=data.namespace, max_cases=MAX_CASES_PER_REQUEST)
    for namespace in {case.namespace for case in suite.cases}:
        request.auth.check(namespace)
    request.auth.charge(
        len(suite.cases) - 1
    )  # each case is a search; the request itself was counted
    return run_suite(suite, principal=request.auth).as_dict()
