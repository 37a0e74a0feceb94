"""The product's exception hierarchy: one class per stable error code.

A `code` is machine-readable and never reworded; the message is safe to show. `error_status` is the
one mapping to HTTP. Apps define their errors in their own `errors.py`; docs/api.md ("Error codes")
lists them all, and tests/test_error_codes.py keeps it complete.
"""

from __future__ import annotations

from typing import Any


class KBError(Exception):
    """The base of every error the product reports; never raised itself where a more precise class
    exists."""

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
    """A setting that is missing or invalid; start-up checks report it."""

    code = "KB_CONFIG_INVALID"


class EmbeddingDimensionMismatch(ConfigurationError):
    """The embedder's vectors do not have the embedding column's dimension (KB_EMBEDDING_DIM)."""

    code = "KB_CONFIG_EMBEDDING_DIMENSION"


class DatabaseUnavailable(KBError):
    """The database cannot be reached, or went away mid-request or mid-run."""

    code = "KB_DB_UNAVAILABLE"
    http_status = 503


class ValidationFailed(KBError):
    """Input that does not validate; `details` names the field."""

    code = "KB_INVALID_INPUT"
    http_status = 422


class NotFound(KBError):
    """Nothing of that name or id that this caller may see."""

    code = "KB_NOT_FOUND"
    http_status = 404


class AuthenticationRequired(KBError):
    """The request needs a token or a staff session."""

    code = "KB_AUTH_REQUIRED"
    http_status = 401


class Forbidden(KBError):
    """The caller is known but may not do this (another namespace, a read-only token or
    membership)."""

    code = "KB_FORBIDDEN"
    http_status = 403


class Conflict(KBError):
    """The request conflicts with the current state (for example a run already under way)."""

    code = "KB_CONFLICT"
    http_status = 409


class PayloadTooLarge(KBError):
    """A request body or upload over its limit."""

    code = "KB_PAYLOAD_TOO_LARGE"
    http_status = 413


class RateLimited(KBError):
    """Too many requests this minute for this token, staff user or client address."""

    code = "KB_RATE_LIMITED"
    http_status = 429


class BadRequest(KBError):
    """A request refused before any view ran: malformed, a bad host header, a NUL character in
    the path or a query parameter (`config.middleware.InvalidInputMiddleware`), or a JSON body that
    is not JSON, nests too deep or holds a lone surrogate or a NUL (`kb.jsonbody`)."""

    code = "KB_BAD_REQUEST"
    http_status = 400


class MethodNotAllowed(KBError):
    """An HTTP method the endpoint does not answer; `Allow` names the ones it does."""

    code = "KB_METHOD_NOT_ALLOWED"
    http_status = 405


class InternalError(KBError):
    """An unexpected exception while answering a request; the traceback is in the log."""

    code = "KB_INTERNAL_ERROR"
    http_status = 500


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


def error_classes() -> list[type[KBError]]:
    """`KBError` and every subclass of it imported so far, by code (then module)."""
    found, pending = [], [KBError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: (c.code, c.__module__))


def error_status(error: KBError) -> int:
    """The HTTP status of an error: what the API, the pages and the middleware answer with."""
    return error.http_status


def error_for_status(status: int) -> type[KBError]:
    """The class of an error answer Django or ninja produced without our code (an unknown path, a
    wrong method, an oversized body), so it is shaped with the same codes the API uses; a status
    no class has gets the base code, KB_ERROR."""
    by_status = {
        cls.http_status: cls
        for cls in (
            BadRequest,
            AuthenticationRequired,
            Forbidden,
            NotFound,
            MethodNotAllowed,
            PayloadTooLarge,
            ValidationFailed,
            InternalError,
        )
    }
    return by_status.get(status, KBError)
