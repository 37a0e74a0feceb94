"""The product's exception hierarchy.

Every error a user or operator can meet derives from `KBError` and carries a stable `code`
(machine-readable, never reworded), a message safe to show, and optional `details`. Each code is
its own class with its own `http_status`; `error_status` is the one mapping to HTTP. The apps
define their own errors (ingest/errors.py, retrieval/errors.py, retrieval/evals.py); every class,
code and status is listed in the README's "Error codes" table, which tests/test_error_codes.py
keeps complete.
"""

from __future__ import annotations

from typing import Any


class KBError(Exception):
    code = "KB_ERROR"
    http_status = 500

    def __init__(self, message: str, *, details: dict[str, Any] | None = None):
        """Each stable code is its own class (`code`, `http_status`); a code is never passed in."""
        super().__init__(message)
        self.message = message
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


class TokenInvalid(AuthenticationRequired):
    """An API token that is unknown or revoked."""

    code = "KB_TOKEN_INVALID"
    http_status = 401


class CsrfFailed(Forbidden):
    """A session-authenticated write without a valid CSRF token."""

    code = "KB_CSRF_FAILED"
    http_status = 403


class DataDirLocked(DatabaseUnavailable):
    """The embedded server's data folder is held by a process that is not PostgreSQL."""

    code = "KB_DB_DATA_DIR_LOCKED"
    http_status = 503


class NamespaceUnknown(NotFound):
    """A definition names a namespace that does not exist."""

    code = "KB_NAMESPACE_UNKNOWN"
    http_status = 404


class DefinitionInvalid(ValidationFailed):
    """A capability provider definition that does not validate."""

    code = "CG_DEFINITION_INVALID"
    http_status = 422


class UnknownCapability(NotFound):
    """A capability id no provider of the caller's has."""

    code = "CG_UNKNOWN_CAPABILITY"
    http_status = 404


class TargetUnknown(ValidationFailed):
    """A knowledge target whose source or document does not exist or is not ingested."""

    code = "CG_TARGET_UNKNOWN"
    http_status = 422


class UnknownProvider(NotFound):
    """A provider id that does not exist for the caller."""

    code = "CG_UNKNOWN_PROVIDER"
    http_status = 404


class AccessClosed(AccessDenied):
    """A backend used its access object after the retrieval call ended."""

    code = "CG_ACCESS_CLOSED"
    http_status = 403


def error_status(error: KBError) -> int:
    """The HTTP status of an error: what the API, the pages and the middleware answer with."""
    return error.http_status
