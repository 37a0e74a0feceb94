"""Announcements between apps that must not import each other, and the counts kept from them.

The sender of `namespaces_changed` (ingest, after a run wrote a namespace's documents) knows nothing
of what is derived from them: retrieval's vector indexes and packed posting lists update themselves.
"""

from __future__ import annotations

import logging
from typing import Callable

from django.db import DatabaseError, transaction
from django.db.models.signals import post_delete
from django.dispatch import Signal

logger = logging.getLogger(__name__)

# sent with `namespace_ids`: the ids of the namespaces whose chunks a finished run changed
namespaces_changed = Signal()


def keep_counted(
    count: Callable[[int], object], what: str, *, uid: str, unless_sent_by: object = None
) -> None:
    """Run `count(namespace_id)` after each finished run (unless `unless_sent_by` sent it, which
    counted already), and once a deleted source's documents and passages are gone (the deletion
    committed). A count that fails is logged: the next run or deletion counts again."""
    from kb.models import Namespace, Source

    def changed(sender, namespace_ids, **kwargs) -> None:
        if unless_sent_by is not None and sender is unless_sent_by:
            return
        for namespace_id in namespace_ids:
            try:
                count(namespace_id)
            except DatabaseError as exc:  # the run itself is done
                logger.warning("%s of namespace %s not counted: %s", what, namespace_id, exc)

    def deleted(sender, instance, **kwargs) -> None:
        namespace_id = instance.namespace_id
        transaction.on_commit(
            lambda: Namespace.objects.filter(pk=namespace_id).exists() and count(namespace_id)
        )

    namespaces_changed.connect(
        changed, dispatch_uid=uid, weak=False
    )  # closures: held here, never collected
    post_delete.connect(deleted, sender=Source, dispatch_uid=f"{uid}.source", weak=False)
