"""The JSON API: one NinjaAPI that adds each app's router, authenticates every call, and maps
every error to one shape, {code, message, details}, with its HTTP status."""

from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from ninja import NinjaAPI, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer
from ninja.utils import check_csrf

from capabilities.api import router as capabilities_router
from ingest.api import router as ingest_router
from kb import documents, namespaces
from kb.replicas import on_replica
from kb.auth import principal_for
from kb.errors import CsrfFailed, KBError, error_status
from kb.schemas import DocumentDetailOut, DocumentPageOut, DocumentTextOut, NamespaceListOut
from retrieval.api import router as retrieval_router

MAX_PAGE_SIZE = 100


class TokenOrSession(HttpBearer):
    """Bearer token, staff session (CSRF-checked for writes) or anonymous (public reads)."""

    def __call__(self, request):
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if header and scheme.lower() == "bearer" and value.strip():
            return self.authenticate(request, value.strip())
        principal = principal_for(request, None)
        if principal.kind in ("staff", "member") and request.method not in ("GET", "HEAD", "OPTIONS") \
                and check_csrf(request):
            raise CsrfFailed("CSRF check failed for a session-authenticated write; send the CSRF token "
                            "or use an API token.")
        return principal

    def authenticate(self, request, token):
        return principal_for(request, token)


api = NinjaAPI(title="Knowledge base API", version="1", urls_namespace="api", auth=TokenOrSession())
api.add_router("/", retrieval_router)
api.add_router("/", ingest_router)
api.add_router("/", capabilities_router)

documents_router = Router(tags=["documents"])


@documents_router.get("/documents", response=DocumentPageOut)
def list_documents(request, namespace: str | None = None, page: int = 1, page_size: int = 20):
    if page < 1 or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise HttpError(422, f"page must be >= 1 and page_size between 1 and {MAX_PAGE_SIZE}.")
    def read():
        queryset = documents.visible_documents(request.auth, namespace)
        start = (page - 1) * page_size
        return {"count": queryset.count(), "page": page, "page_size": page_size,
                "results": list(queryset[start:start + page_size])}

    return on_replica(read)


@documents_router.get("/documents/{document_id}", response=DocumentDetailOut)
def document_detail(request, document_id: int):
    def read():
        document = documents.get_document(request.auth, document_id)
        return {**{f: getattr(document, f) for f in ("id", "source_id", "ref", "title", "path", "media_type",
                                                      "byte_size", "created_at", "indexed_at")},
                "chunks": list(document.chunks.order_by("position"))}

    return on_replica(read)


@documents_router.get("/documents/{document_id}/text", response=DocumentTextOut)
def document_text(request, document_id: int, max_chars: int = 20000, offset: int = 0):
    """The text from character `offset`, at most `max_chars` of it; a cut closes with a marker
    and `next_offset` says where the next piece starts."""
    if not 1 <= max_chars <= 1_000_000:
        raise HttpError(422, "max_chars must be between 1 and 1000000.")
    return on_replica(lambda: documents.capped_text(documents.get_document(request.auth, document_id), max_chars,
                                                    offset))


@documents_router.get("/namespaces", response=NamespaceListOut, tags=["namespaces"],
                      summary="The namespaces the caller may read, with counts and freshness")
def list_namespaces(request):
    return on_replica(lambda: {"namespaces": namespaces.namespace_summaries(request.auth)})


api.add_router("/", documents_router)


def _error(request, status: int, code: str, message: str, details: dict | None = None):
    response = api.create_response(request, {"code": code, "message": message, "details": details or {}},
                                   status=status)
    if status == 429 and details and "retry_after_s" in details:
        response["Retry-After"] = str(details["retry_after_s"])
    return response


@api.exception_handler(KBError)
def kb_error(request, exc: KBError):
    return _error(request, error_status(exc), exc.code, exc.message, exc.details)


@api.exception_handler(ValidationError)
def validation_error(request, exc: ValidationError):
    return _error(request, 422, "KB_INVALID_INPUT", "The request is not valid.", {"errors": exc.errors})


@api.exception_handler(AuthenticationError)
def authentication_error(request, exc):
    return _error(request, 401, "KB_AUTH_REQUIRED", "Authentication required.")


@api.exception_handler(HttpError)
def http_error(request, exc: HttpError):
    code = {404: "KB_NOT_FOUND", 422: "KB_INVALID_INPUT", 413: "KB_PAYLOAD_TOO_LARGE"}.get(exc.status_code, "KB_ERROR")
    return _error(request, exc.status_code, code, str(exc))


@api.exception_handler(Http404)
def not_found(request, exc):
    return _error(request, 404, "KB_NOT_FOUND", "Not found.")


@api.exception_handler(RequestDataTooBig)
def too_big(request, exc):
    return _error(request, 413, "KB_PAYLOAD_TOO_LARGE", "The request body is too large.")
