"""The JSON API: one NinjaAPI that adds each app's router, authenticates every call, and shapes
every error as {code, message, details} with its HTTP status. Wiring only: the endpoints live in
each app's `api.py`; the errors Django and ninja raise themselves are answered through the same
classes as ours (`kb/errors.py`), so one code always has one status."""

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer
from ninja.utils import check_csrf

from answers.api import router as answers_router
from capabilities.api import router as capabilities_router
from evaluation.api import router as evaluation_router
from ingest.api import router as ingest_router
from kb import jsonbody
from kb.auth import principal_for
from kb.database import database_away, database_away_error
from kb.errors import (
    AuthenticationRequired,
    CsrfFailed,
    KBError,
    NotFound,
    PayloadTooLarge,
    ValidationFailed,
    error_for_status,
    error_status,
)
from retrieval.api import router as retrieval_router


class TokenOrSession(HttpBearer):
    """Bearer token, staff session (CSRF-checked for writes) or anonymous (public reads)."""

    def __call__(self, request):
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if header and scheme.lower() == "bearer" and value.strip():
            return self.authenticate(request, value.strip())
        principal = principal_for(request, None)
        if (
            principal.kind in ("staff", "member")
            and request.method not in ("GET", "HEAD", "OPTIONS")
            and check_csrf(request)
        ):
            raise CsrfFailed(
                "CSRF check failed for a session-authenticated write; send the CSRF token "
                "or use an API token."
            )
        return principal

    def authenticate(self, request, token):
        return principal_for(request, token)


class StrictJsonParser(Parser):
    """JSON bodies read by `kb.jsonbody`: a lone surrogate or nesting past its depth is a 400 that
    says so, not an error deep in a search or a save."""

    def parse_body(self, request):
        return jsonbody.parse(request.body)


api = NinjaAPI(
    title="Knowledge base API",
    version="1",
    urls_namespace="api",
    auth=TokenOrSession(),
    parser=StrictJsonParser(),
)
api.add_router("/", retrieval_router)
api.add_router("/", ingest_router)
api.add_router("/", capabilities_router)
api.add_router("/", evaluation_router)
api.add_router("/", answers_router)


@api.exception_handler(KBError)
def kb_error(request, exc: KBError):
    response = api.create_response(request, exc.as_dict(), status=error_status(exc))
    if "retry_after_s" in exc.details:
        response["Retry-After"] = str(exc.details["retry_after_s"])
    return response


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def database_error(request, exc):
    """The database went away under the request: 503 KB_DB_UNAVAILABLE (with DEBUG on too, where
    ninja would answer a traceback); any other database error is re-raised as the bug it is."""
    if not database_away(exc):
        raise exc
    return kb_error(request, database_away_error())


@api.exception_handler(ValidationError)
def validation_error(request, exc: ValidationError):
    return kb_error(
        request, ValidationFailed("The request is not valid.", details={"errors": exc.errors})
    )


@api.exception_handler(AuthenticationError)
def authentication_error(request, exc):
    return kb_error(request, AuthenticationRequired("Authentication required."))


@api.exception_handler(HttpError)
def http_error(request, exc: HttpError):
    """ninja's own HttpError (the product raises its classes instead), by its status. ninja wraps
    whatever the parser raises in a 400 "Cannot parse request body"; ours says what was wrong."""
    if isinstance(exc.__cause__, KBError):
        return kb_error(request, exc.__cause__)
    return kb_error(request, error_for_status(exc.status_code)(str(exc)))


@api.exception_handler(Http404)
def not_found(request, exc):
    return kb_error(request, NotFound("Not found."))


@api.exception_handler(RequestDataTooBig)
def too_big(request, exc):
    return kb_error(request, PayloadTooLarge("The request body is too large."))
