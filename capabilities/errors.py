"""The errors of the capability and knowledge retrieval contracts (codes prefixed CG_)."""

from kb.errors import KBError, NotFound, ValidationFailed


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
