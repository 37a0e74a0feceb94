"""Measures how well the meaning model reads a namespace (`retrieval.agreement`) on up to HEADINGS
of its own headings.

Only headings in the languages the model is not said to read count (a man page's title, `acl(5)`,
is read whatever the manual's language), and only where the reading decides: a namespace mostly
in such languages. A query embedding and two channel reads per heading (under a second for 40), so
it runs on a thread of its own where the namespace's sample is read (retrieval/meaning_spread.py),
never in a search's path.
"""

from __future__ import annotations

import json

from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.language_detection import query_language
from kb.model_languages import unread_languages
from kb.replicas import read_connection
from retrieval import lexical, query_words
from retrieval.agreement import NEAREST, Reading, agreement
from retrieval.channels import vector_channel
from retrieval.scope import Scope

HEADINGS = 40
CANDIDATES = 8 * HEADINGS  # distinct headings read to find HEADINGS in the languages measured
MIN_DOCUMENTS = (
    30  # in fewer, a heading's own document left out leaves too little on its subject to tell
)
MIN_CHARS = 4  # shorter headings ("API", "2.1") are names or numbers, not something a reader asks
DEPTH = 3 * NEAREST  # room for the heading's own document's passages, which are left out


def measure(namespace_id: int, passages: int) -> Reading | None:
    """How the namespace's vector and words channels agree on its own headings in the languages
    the model is not said to read (`retrieval.agreement.Reading`), or None where it decides nothing
    (the namespace is
    mostly in languages the model reads) or too few headings (`retrieval.agreement.MIN_HEADINGS`)
    or documents tell."""
    document_count, document_languages = _namespace(namespace_id)
    languages = unread_languages(document_languages, kb_settings().embedding_languages)
    if not languages or document_count < MIN_DOCUMENTS:
        return None
    headings = [
        (heading, document_id)
        for heading, document_id in _headings(namespace_id, passages)
        if query_language(heading) in languages
    ][:HEADINGS]
    if not headings:
        return None
    scope, embedder = Scope(namespace_id), get_embedder()
    found = []
    for heading, document_id in headings:
        configs = query_words.namespace_configs(namespace_id, heading)
        by_words = lexical.lexical_channel(
            scope, query_words.query_lexemes(heading, configs), DEPTH
        )
        by_meaning = vector_channel(scope, embedder.embed_query(heading), DEPTH)
        found.append((document_id, by_meaning, by_words))
    documents = _documents([row.chunk_id for _, *lists in found for rows in lists for row in rows])
    return agreement(
        [
            tuple(
                [row.chunk_id for row in rows if documents.get(row.chunk_id) != document_id]
                for rows in lists
            )
            for document_id, *lists in found
        ]
    )


def _headings(namespace_id: int, passages: int) -> list[tuple[str, int]]:
    """Up to CANDIDATES distinct headings (a passage's last heading, else its document's title)
    and their documents, from passages spread over the namespace's ids."""
    step = max(1, passages // (4 * CANDIDATES))
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT heading, document_id FROM (SELECT DISTINCT ON (heading) heading, document_id, "
            "id FROM (SELECT coalesce(nullif(heading_path[cardinality(heading_path)], ''), title) "
            "AS heading, document_id, id  FROM kb_chunk WHERE namespace_id = %s AND id %% %s = 0) "
            "AS passage WHERE char_length(heading) >= %s ORDER BY heading, id) AS distinct_heading "
            "ORDER BY id LIMIT %s",
            [namespace_id, step, MIN_CHARS, CANDIDATES],
        )
        return cursor.fetchall()


def _namespace(namespace_id: int) -> tuple[int, dict[str, int]]:
    """The namespace's document count and its documents' languages."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM kb_document WHERE namespace_id = n.id), "
            "n.document_languages::text FROM kb_namespace n WHERE n.id = %s",
            [namespace_id],
        )
        row = cursor.fetchone()
    return (row[0], json.loads(row[1] or "{}")) if row else (0, {})


def _documents(chunk_ids: list[int]) -> dict[int, int]:
    with read_connection().cursor() as cursor:
        cursor.execute("SELECT id, document_id FROM kb_chunk WHERE id = ANY(%s)", [chunk_ids])
        return dict(cursor.fetchall())
