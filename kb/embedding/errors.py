"""Embedding errors: stable codes for a model or embedding service that could not embed."""

from kb.errors import KBError


class EmbeddingFailed(KBError):
    """The embedder could not embed (the model did not load, or the embedding service failed)."""

    code = "INGEST_EMBEDDER_FAILED"  # named when only ingest embedded; codes are never renamed
    http_status = 503
