"""Which embedding model embedded a namespace's passages, counted into `Namespace.passage_models`
after every change of its passages (an ingest or re-embed run, a deleted source). A query's vector
means something only beside vectors of the model that embedded it: a search reads these counts to
leave meaning out, or to compare with that model's passages only, while a namespace waits to be
embedded again after the deployment changed its model (`retrieval.candidates.meaning_models`)."""

from __future__ import annotations

import json

from django.db import connection

COUNT_SQL = (
    "UPDATE kb_namespace n SET passage_models = coalesce((SELECT jsonb_object_agg(embedding_model, "
    "passages) FROM (SELECT embedding_model, count(*) AS passages FROM kb_chunk c WHERE "
    "c.namespace_id = n.id AND c.embedding IS NOT NULL GROUP BY 1) counted), '{}'::jsonb)"
)


def count_models(namespace_id: int) -> dict[str, int]:
    """Count the namespace's embedded passages per model; returns the counts."""
    with connection.cursor() as cursor:
        cursor.execute(
            COUNT_SQL + " WHERE n.id = %s RETURNING passage_models::text", [namespace_id]
        )
        row = cursor.fetchone()
    return json.loads(row[0]) if row else {}
