"""Ingest errors: each carries a stable code recorded on the run's per-item report."""

from kb.errors import KBError


class IngestError(KBError):
    code = "INGEST_FAILED"
    http_status = 422


class FetchBlocked(IngestError):
    """The SSRF guard refused a URL (scheme, private address, too many redirects)."""

    code = "INGEST_FETCH_BLOCKED"
    http_status = 400


class FetchFailed(IngestError):
    code = "INGEST_FETCH_FAILED"
    http_status = 502


class ContentRejected(IngestError):
    """Content is too large, binary, or of a media type we do not extract."""

    code = "INGEST_CONTENT_REJECTED"
    http_status = 413


class EmbeddingFailed(IngestError):
    code = "INGEST_EMBEDDER_FAILED"
    http_status = 503
