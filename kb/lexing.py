"""Lex a namespace's stored passages again as its language setting says.

Each changed passage is updated in place: the postings trigger replaces its postings and the BM25
statistics in the same statement, so the lexical channel stays exact throughout. The finished
namespace is announced as changed so retrieval rebuilds what it derives from the postings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import connection, transaction

from kb.language_detection import detect
from kb.languages import AUTO, document_config, main_language
from kb.models import Document, Namespace
from kb.signals import namespaces_changed

LOCK_CLASS = 7301  # pg_advisory_lock(LOCK_CLASS, namespace id): one relex per namespace at a time
DETECT_BATCH = 200
RELEX_DOCUMENTS = 200  # documents lexed again per transaction (a few thousand passages)


@dataclass(frozen=True)
class Relexed:
    detected: int  # documents whose language was named now
    passages: int  # passages lexed with another configuration
    configs: tuple[
        str, ...
    ]  # the configurations its passages are lexed with afterwards, most passages first


def apply_language(namespace_id: int) -> Relexed:
    """Lex the namespace's stored passages as its language setting says now. One task per
    namespace at a time (a session advisory lock); a setting changed while it ran is applied
    before it returns. `Namespace.relexing` is set while it runs and stays set if it stops
    part-way, so queries meanwhile are lexed in every configuration (`query_configs`)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [LOCK_CLASS, namespace_id])
    try:
        detected = passages = 0
        applied = None
        Namespace.objects.filter(pk=namespace_id).update(
            relexing=True
        )  # a direct call announces it too
        while (
            language := Namespace.objects.values_list("language", flat=True).get(pk=namespace_id)
        ) != applied:
            detected += _detect_missing(namespace_id) if language == AUTO else 0
            targets = _targets(namespace_id, language)
            _announce(namespace_id, targets)
            passages += _relex(namespace_id, targets)
            applied = language
        _, counted = _count(namespace_id)
        # done unless the setting changed after the loop read it (its own task then runs next)
        Namespace.objects.filter(pk=namespace_id, language=applied).update(relexing=False)
        configs = tuple(sorted(counted, key=lambda config: -counted[config]))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, namespace_id])
    if passages:
        namespaces_changed.send(sender=Relexed, namespace_ids=[namespace_id])
    return Relexed(detected, passages, configs)


def _targets(namespace_id: int, language: str) -> dict[str | None, str]:
    """Per document language, the configuration its passages get (under None: every document's,
    when the setting names a language). Documents whose language was not named get the
    namespace's most common one's (`document_config`)."""
    if language != AUTO:
        return {None: language}
    main = main_language(count_languages(namespace_id))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT language FROM kb_document WHERE namespace_id = %s", [namespace_id]
        )
        return {named: document_config(AUTO, named, main) for (named,) in cursor.fetchall()}


def _relex(namespace_id: int, targets: dict[str | None, str]) -> int:
    """Lex each passage with its document's language's configuration in `targets` (the one under
    None for every document when the setting names a language), RELEX_DOCUMENTS documents per
    transaction in one walk: a large namespace is never locked by one long statement, and each
    batch's postings and statistics change together (the trigger). Returns the passages changed."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM kb_document WHERE namespace_id = %s ORDER BY id", [namespace_id]
        )
        documents = [row[0] for row in cursor.fetchall()]
    languages = {language: config for language, config in targets.items() if language is not None}
    changed = 0
    for start in range(0, len(documents), RELEX_DOCUMENTS):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "UPDATE kb_chunk c SET search_config = t.config FROM kb_document d, LATERAL "
                "(SELECT coalesce(%(languages)s::jsonb ->> d.language, %(all)s) AS config) t WHERE "
                "d.id = c.document_id AND c.document_id = ANY(%(documents)s) AND c.search_config "
                "<> t.config",
                {
                    "languages": json.dumps(languages),
                    "all": targets.get(None),
                    "documents": documents[start : start + RELEX_DOCUMENTS],
                },
            )
            changed += cursor.rowcount
    return changed


def apply_language_task(namespace_id: int) -> str:
    """The django-q2 entry point of `apply_language`."""
    done = apply_language(namespace_id)
    return (
        f"namespace {namespace_id}: {done.detected} documents' languages named, {done.passages} "
        "passages "
        f"lexed again; configurations {', '.join(done.configs) or 'none'}"
    )


def _detect_missing(namespace_id: int) -> int:
    """Name the language of each of the namespace's documents that has none yet; returns how many
    were named (a text too short or unclear stays unnamed, and is lexed in the default)."""
    named = 0
    pending = (
        Document.objects.filter(namespace_id=namespace_id, language="")
        .only("id", "content")
        .order_by("id")
    )
    last = 0
    while True:
        batch = list(pending.filter(id__gt=last)[:DETECT_BATCH])
        if not batch:
            return named
        for document in batch:
            document.language = detect(document.content)
            named += bool(document.language)
        Document.objects.bulk_update([d for d in batch if d.language], ["language"])
        last = batch[-1].id


def count_languages(namespace_id: int) -> dict[str, int]:
    """Count the namespace's documents per detected language into `Namespace.document_languages`
    (what decides whether the embedding model can read the namespace) and its passages per text
    search configuration into `Namespace.passage_configs` (what its queries are lexed with):
    after every ingest run, deletion of a source and change of the language setting. Returns the
    documents per language."""
    return _count(namespace_id)[0]


def _count(namespace_id: int) -> tuple[dict[str, int], dict[str, int]]:
    """`count_languages`, returning both counts: documents per language, passages per
    configuration."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE kb_namespace SET document_languages = coalesce((SELECT "
            "jsonb_object_agg(language, n) FROM (SELECT language, count(*) AS n FROM kb_document "
            "WHERE namespace_id = %(ns)s GROUP BY 1) counted), '{}'::jsonb), passage_configs = "
            "coalesce((SELECT jsonb_object_agg(search_config, n) FROM (SELECT search_config, "
            "count(*) AS n FROM kb_chunk WHERE namespace_id = %(ns)s GROUP BY 1) counted), "
            "'{}'::jsonb) WHERE id = %(ns)s RETURNING document_languages::text, "
            "passage_configs::text",
            {"ns": namespace_id},
        )
        row = cursor.fetchone()
    return (json.loads(row[0]), json.loads(row[1])) if row else ({}, {})


def _announce(namespace_id: int, targets: dict[str | None, str]) -> None:
    """Before passages move to `targets`' configurations, queries are lexed with those too: each
    passage keeps meeting its own lexemes whichever batch has reached it (and if the task stops
    part-way); the count after the last batch drops the configurations no passage has left."""
    languages = {language: config for language, config in targets.items() if language is not None}
    with (
        connection.cursor() as cursor
    ):  # one walk over the passages, as `_relex` chooses their configurations
        cursor.execute(
            "UPDATE kb_namespace n SET passage_configs = n.passage_configs || coalesce((SELECT "
            "jsonb_object_agg(moving.config, coalesce((n.passage_configs->>moving.config)::int, 0) "
            "+ moving.n) FROM (SELECT t.config, count(*) AS n FROM kb_chunk c JOIN kb_document d "
            "ON d.id = c.document_id, LATERAL (SELECT coalesce(%(languages)s::jsonb ->> "
            "d.language, %(all)s) AS config) t WHERE c.namespace_id = %(ns)s AND c.search_config "
            "<> t.config GROUP BY 1) moving), '{}'::jsonb) WHERE n.id = %(ns)s",
            {"ns": namespace_id, "languages": json.dumps(languages), "all": targets.get(None)},
        )


def passages_by_config(namespace_id: int) -> dict[str, int]:
    """How many of the namespace's passages each configuration lexes (the admin shows it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_config, count(*) FROM kb_chunk WHERE namespace_id = %s "
            "GROUP BY 1 ORDER BY 2 DESC",
            [namespace_id],
        )
        return dict(cursor.fetchall())
