"""The product's exception hierarchy.

Every error a user or operator can meet derives from `KBError` and carries a stable `code`
(machine-readable, never reworded), a message safe to show, and optional `details`.
The API maps codes to HTTP statuses in one place (`kb/api.py`).

    KBError
    ├── ConfigurationError        KB_CONFIG_*        settings or environment are wrong
    │   └── EmbeddingDimensionMismatch
    ├── DatabaseUnavailable       KB_DB_UNAVAILABLE  the database cannot be started or reached
    ├── ValidationFailed          KB_INVALID_*       bad input from a user or a file
    ├── NotFound                  KB_NOT_FOUND
    ├── ingest.errors.IngestError INGEST_*           fetching, extracting, embedding
    └── retrieval.errors.SearchError SEARCH_*        query parsing, ranking parameters
"""

from __future__ import annotations

from typing import Any


class KBError(Exception):
    code = "KB_ERROR"
    http_status = 500

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details or {}

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class ConfigurationError(KBError):
    code = "KB_CONFIG_INVALID"


class EmbeddingDimensionMismatch(ConfigurationError):
    code = "KB_CONFIG_EMBEDDING_DIMENSION"


class DatabaseUnavailable(KBError):
    code = "KB_DB_UNAVAILABLE"
    http_status = 503


class ValidationFailed(KBError):
    code = "KB_INVALID_INPUT"
    http_status = 422


class NotFound(KBError):
    code = "KB_NOT_FOUND"
    http_status = 404


class AuthenticationRequired(KBError):
    code = "KB_AUTH_REQUIRED"
    http_status = 401


class Forbidden(KBError):
    code = "KB_FORBIDDEN"
    http_status = 403


class Conflict(KBError):
    code = "KB_CONFLICT"
    http_status = 409


class PayloadTooLarge(KBError):
    code = "KB_PAYLOAD_TOO_LARGE"
    http_status = 413


class RateLimited(KBError):
    code = "KB_RATE_LIMITED"
    http_status = 429


# --- capability and knowledge retrieval contracts (codes prefixed CG_) -------------------------

class RetrieverUnconfigured(KBError):
    """No capability or knowledge retriever backend is configured."""

    code = "CG_RETRIEVER_UNCONFIGURED"
    http_status = 503


class RetrieverFailed(KBError):
    """The backend raised or answered something unusable: an error, never an empty success."""

    code = "CG_RETRIEVER_FAILED"
    http_status = 502


class IndexStale(KBError):
    """The backend's evidence shows its index is behind the source; no answer from stale data."""

    code = "CG_INDEX_STALE"
    http_status = 409


class RevisionMismatch(KBError):
    """A revision in the request or the evidence does not match one the core can read."""

    code = "CG_REVISION_MISMATCH"
    http_status = 409


class BudgetExceeded(KBError):
    """The selected knowledge targets exceed the target-count or byte budget."""

    code = "CG_BUDGET_EXCEEDED"
    http_status = 413


class AccessDenied(KBError):
    """A backend tried to read a target it was not given, or used its access after the call."""

    code = "CG_ACCESS_DENIED"
    http_status = 403


def error_status(error: KBError) -> int:
    """The HTTP status of an error: what the API, the pages and the middleware answer with."""
    return error.http_status
