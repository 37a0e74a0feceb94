"""The scaling run's copier: a namespace's documents and chunks written again, perturbed, in bulk.

Benchmark-only, so it lives here and not in the product's writer (`ingest/store.py`).
"""

from __future__ import annotations

from django.db import connection, transaction

from kb.lexing import count_languages


def copy_documents(
    source_id: int,
    base_namespace_id: int,
    target_namespace_id: int,
    *,
    marker: int,
    drop_every: int,
) -> None:
    """Copy every document and chunk of one namespace into `source_id` of another in two
    statements (the postings trigger does its real work), each document's ref suffixed `~marker`.
    The copies are perturbed so they are near neighbours, not duplicates: each chunk drops the
    word after every `drop_every` words and ends with " copy<marker>", and its vector moves by
    small noise and is normalised again. One transaction: a copy is written whole or not at all."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """INSERT INTO kb_document (source_id, namespace_id, ref, title, path, name_key, content,
                   content_hash, media_type, byte_size, created_at, indexed_at, embedding_model, etag,
                   last_modified, metadata, language)
               SELECT %s, %s, d.ref || '~' || %s, d.title, d.path, d.name_key, d.content, d.content_hash,
                      d.media_type, d.byte_size, d.created_at, now(), d.embedding_model, '', '', '{}'::jsonb,
                      d.language
               FROM kb_document d WHERE d.namespace_id = %s""",  # noqa: E501
            [source_id, target_namespace_id, marker, base_namespace_id],
        )
        cursor.execute(
            """INSERT INTO kb_chunk (document_id, namespace_id, position, title, text, heading_path, anchor,
                   start_byte, end_byte, token_estimate, is_summary, is_partial_code, embedding,
                   embedding_model, embed_reason, embedding_runtime, text_key, body_key, search_config)
               SELECT nd.id, %s, c.position, c.title,
                      regexp_replace(c.text, '((?:\\S+\\s+){%s})\\S+\\s*', '\\1', 'g') || ' copy' || %s,
                      c.heading_path, c.anchor, c.start_byte, c.end_byte, c.token_estimate, c.is_summary,
                      c.is_partial_code,
                      l2_normalize(c.embedding + (SELECT array_agg((random() - 0.5) * 0.01)
                                                  FROM generate_series(1, vector_dims(c.embedding)))::vector),
                      c.embedding_model, 'scaled copy', c.embedding_runtime,
                      md5(c.text_key || %s), md5(c.body_key || %s), c.search_config
               FROM kb_chunk c
               JOIN kb_document od ON od.id = c.document_id
               JOIN kb_document nd ON nd.namespace_id = %s AND nd.ref = od.ref || '~' || %s
               WHERE c.namespace_id = %s""",  # noqa: E501
            [
                target_namespace_id,
                drop_every,
                marker,
                marker,
                marker,
                target_namespace_id,
                marker,
                base_namespace_id,
            ],
        )
    count_languages(target_namespace_id)
