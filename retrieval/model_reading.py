"""Measures how well the meaning model reads a namespace (`retrieval.agreement`): up to HEADINGS
of its own headings, spread over its passages, each searched by the vector channel and by the
words channel, their own document left out of both lists.

It costs a query embedding and two channel reads per heading (under a second on a quiet machine
for 40), so it runs where the namespace's sample is read (retrieval/meaning_spread.py), on a
thread of its own, never in a search's path.
"""

from __future__ import annotations

from kb.embedding.embedders import get_embedder
from kb.replicas import read_connection
from retrieval import lexical
from retrieval.agreement import NEAREST, agreement
from retrieval.channels import Scope, vector_channel

HEADINGS = 40
MIN_DOCUMENTS = 30  # in fewer, a heading's own document left out leaves too little on its subject to tell
MIN_CHARS = 4  # shorter headings ("API", "2.1") are names or numbers, not something a reader asks
DEPTH = 3 * NEAREST  # room for the heading's own document's passages, which are left out


def measure(namespace_id: int, passages: int) -> float | None:
    """The agreement of the namespace's vector and words channels on its own headings, or None
    when too few headings (`retrieval.agreement.MIN_HEADINGS`) or documents tell."""
    headings = _headings(namespace_id, passages)
    if not headings or _document_count(namespace_id) < MIN_DOCUMENTS:
        return None
    scope, embedder = Scope(namespace_id), get_embedder()
    lists = []
    for heading, document_id in headings:
        configs = lexical.namespace_configs(namespace_id, heading)
        by_words = lexical.lexical_channel(scope, lexical.query_lexemes(heading, configs), DEPTH)
        by_meaning = vector_channel(scope, embedder.embed_query(heading), DEPTH)
        documents = _documents([row.chunk_id for row in by_words + by_meaning])
        lists.append(tuple([row.chunk_id for row in rows if documents.get(row.chunk_id) != document_id]
                           for rows in (by_meaning, by_words)))
    return agreement(lists)


def _headings(namespace_id: int, passages: int) -> list[tuple[str, int]]:
    """Distinct headings (a passage's last heading, else its document's title) and their
    documents, from passages spread over the namespace's ids."""
    step = max(1, passages // (4 * HEADINGS))
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT heading, document_id FROM (SELECT DISTINCT ON (heading) heading, document_id, id FROM"
            " (SELECT coalesce(nullif(heading_path[cardinality(heading_path)], ''), title) AS heading, document_id, id"
            "  FROM kb_chunk WHERE namespace_id = %s AND id %% %s = 0) AS passage"
            " WHERE char_length(heading) >= %s ORDER BY heading, id) AS distinct_heading ORDER BY id LIMIT %s",
            [namespace_id, step, MIN_CHARS, HEADINGS])
        return cursor.fetchall()


def _document_count(namespace_id: int) -> int:
    with read_connection().cursor() as cursor:
        cursor.execute("SELECT count(*) FROM kb_document WHERE namespace_id = %s", [namespace_id])
        return cursor.fetchone()[0]


def _documents(chunk_ids: list[int]) -> dict[int, int]:
    with read_connection().cursor() as cursor:
        cursor.execute("SELECT id, document_id FROM kb_chunk WHERE id = ANY(%s)", [chunk_ids])
        return dict(cursor.fetchall())
