"""Keeping retrieval's own structures in line with the chunks ingest writes.

A finished ingest run announces the namespaces it changed (`kb.signals.namespaces_changed`);
each then gets its own HNSW index once large enough (`vector_index.py`) and its packed posting
lists once large enough, or again once a tenth of it changed (`posting_lists.py`). Both are part
of the run (it waits for them, with its heartbeat beating), so a finished run is fast to search.
A failed build costs speed, not results: a namespace without an index is searched exactly and
one without packed lists is read from the postings table, so the failure is logged and the next
run tries again. A deleted namespace's index is dropped once the deletion commits.
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
