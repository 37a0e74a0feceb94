"""The curator's console for what is searched and what searching produced: documents and their
chunks (searched by their words), fusion calibrations, the query log, and the namespaces with what
searching found out about them (their weights, their meaning channel, their text search)."""

from retrieval.admin import (  # noqa: F401  (each module registers its admins)
    calibrations,
    documents,
    namespaces,
    query_log,
)
