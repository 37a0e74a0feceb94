"""Keep retrieval's own structures in line with the chunks ingest writes.

HNSW indexes (`vector_index.py`) and packed posting lists (`posting_lists.py`) are built as part of
the run that changed the namespace (it waits, with its heartbeat beating), so a finished run is fast
to search. A failed build costs speed, not results (exact scans, the postings table): it is logged
and the next run tries again.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError

from retrieval import posting_lists
from retrieval.vector_index import drop_after_commit, ensure_namespace_index

logger = logging.getLogger(__name__)


def on_namespaces_changed(sender, namespace_ids, **kwargs) -> None:
    for namespace_id in namespace_ids:
        try:
            ensure_namespace_index(namespace_id)  # logs a build itself
        except DatabaseError as exc:
            logger.warning("vector index for namespace %s not built: %s", namespace_id, exc)
        try:
            posting_lists.ensure(namespace_id)  # logs a build itself
        except DatabaseError as exc:
            logger.warning("posting lists for namespace %s not built: %s", namespace_id, exc)


def on_namespace_deleted(sender, instance, **kwargs) -> None:
    drop_after_commit(instance.pk)
