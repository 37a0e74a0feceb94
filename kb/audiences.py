"""Decide which documents of a namespace a reader may read; the one writer of audience columns.

A document's own groups (`audience_groups`) override its source's; a source without groups is open
to everyone who reads the namespace. Each distinct set of groups is one `Audience`, whose id
documents and chunks carry. A restricted document is read by superusers, the namespace's curators
(who could set its audience themselves) and members of one of its groups. Namespace tokens read open
documents only; a person token reads what its owner reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import contextmanager

from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.db.models import Q

from kb.identity.rules import group_key
from kb.models import Audience, Document, ExternalIdentity, Source

# a reader's reach: the audiences it reads besides the open documents; None: every audience
Reach = frozenset[int] | None
OPEN_ONLY: Reach = frozenset()


def reach_of(user, writable: Iterable[str] = ()) -> Reach:
    """The audiences `user` reads: those naming one of their groups, and all of `writable`'s.

    `writable` holds the slugs of the namespaces they curate; a superuser reads every audience.
    Their groups include those their identity provider gave at the last sign-in or session
    re-reading (compared by `kb.identity.rules.group_key`), so a group left at the provider stops
    counting when their memberships do.
    """
    if user is None or not user.is_authenticated:
        return OPEN_ONLY
    if user.is_superuser:
        return None
    groups = set(user.groups.values_list("id", flat=True))
    provided = {
        group_key(group)
        for group in ExternalIdentity.objects.filter(user=user)
        .values_list("groups", flat=True)
        .first()
        or ()
        if isinstance(group, str)
    }
    if provided:
        named = Group.objects.filter(kb_audiences__isnull=False).distinct()
        groups |= {
            pk for pk, name in named.values_list("id", "name") if group_key(name) in provided
        }
    return frozenset(
        Audience.objects.filter(Q(groups__in=groups) | Q(namespace__slug__in=list(writable)))
        .values_list("id", flat=True)
        .distinct()
    )


def document_filter(reach: Reach, prefix: str = "") -> Q:
    """A filter on Document (or, with `prefix` "document__", a model that reaches one) for what
    a reader of `reach` may read: open documents, and those of its audiences."""
    if reach is None:
        return Q()
    return Q(**{f"{prefix}audience__isnull": True}) | Q(**{f"{prefix}audience_id__in": reach})


def reads(reach: Reach, audience_id: int | None) -> bool:
    """Whether a reader of `reach` reads a document of `audience_id`."""
    return audience_id is None or reach is None or audience_id in reach


def audience_for(namespace_id: int, group_ids: Iterable[int]) -> int | None:
    """The audience of these groups in this namespace (made at its first use); None: no group,
    open to every reader of the namespace."""
    ids = sorted(set(group_ids))
    if not ids:
        return None
    audience, created = Audience.objects.get_or_create(
        namespace_id=namespace_id, key=",".join(map(str, ids))
    )
    if created:
        audience.groups.set(ids)
    return audience.pk


def apply_source(source: Source) -> None:
    """Give `source` and its documents without groups of their own the audience of the
    source's groups, and their chunks their documents' (which refiles their words' statistics
    under the audience, kb/migrations/0049_audiences.py)."""
    with _as_writer():
        audience = audience_for(
            source.namespace_id, source.audience_groups.values_list("id", flat=True)
        )
        Source.objects.filter(pk=source.pk).update(audience_id=audience)
        own = Document.audience_groups.through.objects.values("document_id")
        # exclude(audience_id=None) keeps the documents with an audience: both ways move
        Document.objects.filter(source_id=source.pk).exclude(pk__in=own).exclude(
            audience_id=audience
        ).update(audience_id=audience)
        _chunks_follow("d.source_id = %s", [source.pk])


def apply_document(document: Document) -> None:
    """Give `document` the audience of its own groups, or its source's when it has none, and
    its chunks the same."""
    with _as_writer():
        own = list(document.audience_groups.values_list("id", flat=True))
        audience = (
            audience_for(document.namespace_id, own)
            if own
            else Source.objects.filter(pk=document.source_id)
            .values_list("audience_id", flat=True)
            .first()
        )
        Document.objects.filter(pk=document.pk).update(audience_id=audience)
        _chunks_follow("d.id = %s", [document.pk])


def reconcile(namespace_id: int) -> int:
    """Documents written while their source's audience changed (a run under way then) take it
    now, and chunks their documents'; how many documents moved. Run after every ingest run."""
    with _as_writer(), connection.cursor() as cursor:
        cursor.execute(
            """UPDATE kb_document d SET audience_id = s.audience_id FROM kb_source s
                WHERE s.id = d.source_id AND d.namespace_id = %s
                  AND d.audience_id IS DISTINCT FROM s.audience_id
                  AND NOT EXISTS (SELECT 1 FROM kb_document_audience_groups g
                                   WHERE g.document_id = d.id)""",
            [namespace_id],
        )
        moved = cursor.rowcount
        _chunks_follow("d.namespace_id = %s", [namespace_id])
    return moved


@contextmanager
def _as_writer():
    """A transaction (a savepoint, inside another) in which the audience columns may change:
    `kb_audience_guard` keeps every other writer from them. Only the statements inside may:
    the permission ends with the block (or with its rollback, which undoes the setting too), not
    with the request's transaction around it."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('kb.audience_writer', 'on', true)")
        yield
        cursor.execute("SELECT set_config('kb.audience_writer', 'off', true)")


def _chunks_follow(where: str, params: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"""UPDATE kb_chunk c SET audience_id = d.audience_id FROM kb_document d
                 WHERE c.document_id = d.id AND {where}
                   AND c.audience_id IS DISTINCT FROM d.audience_id""",
            params,
        )


def limit_documents(namespace_id: int, document_ids: list[int], group_ids: list[int]) -> int:
    """Give many documents of a namespace these groups of their own at once (none: their source's
    audience again), in a few statements rather than one `apply_document` each; how many moved.
    For bulk changes (`kb_bench --audiences`); the admin sets one document at a time."""
    through = Document.audience_groups.through
    with _as_writer():
        audience = (
            audience_for(namespace_id, group_ids) if group_ids else None
        )  # None: the source's, per document
        through.objects.filter(document_id__in=document_ids).delete()
        if group_ids:
            through.objects.bulk_create(
                [through(document_id=d, group_id=g) for d in document_ids for g in set(group_ids)]
            )
        with connection.cursor() as cursor:
            cursor.execute(
                """UPDATE kb_document d
                      SET audience_id = CASE WHEN %s::bigint IS NULL THEN s.audience_id ELSE %s END
                     FROM kb_source s
                    WHERE s.id = d.source_id AND d.namespace_id = %s AND d.id = ANY(%s)""",
                [audience, audience, namespace_id, list(document_ids)],
            )
            moved = cursor.rowcount
        _chunks_follow("d.id = ANY(%s)", [list(document_ids)])
    return moved
