"""The curator's console for sources, their files, documents, chunks and ingest runs."""

from ingest.admin import runs, sources  # noqa: F401  (each module registers its admin)
