"""The rows read about the passages a search found: the ranker's view of each candidate
(`candidate_rows`: keys, no text) and what a surface shows of the kept ones (`hydrate`). Each
query repeats the scope's conditions, so a foreign id can never be read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from kb.replicas import read_connection
from retrieval.scope import Scope


@dataclass(frozen=True)
class CandidateRow:
    """What the ranker needs about a candidate: no text, only keys that identify duplicates."""

    chunk_id: int
    document_id: int
    position: int
    path: str
    is_summary: bool
    priority: float
    dated_epoch: (
        float | None
    )  # the document's date (created, else indexed) in seconds since the epoch
    cosine: float | None
    text_key: str
    body_key: str
    embedding: tuple[float, ...] | None


@dataclass(frozen=True)
class ChunkRow:
    """Everything a surface shows about a kept result."""

    chunk_id: int
    document_id: int
    source_id: int
    position: int
    text: str
    heading_path: tuple[str, ...]
    anchor: str
    start_byte: int
    end_byte: int
    title: str
    ref: str
    path: str
    url: str
    source_kind: str
    source_name: str
    created_at: datetime | None
    indexed_at: datetime | None
    page_start: int | None = None
    page_end: int | None = None
    page_unit: str = ""
    scanned: bool = False  # its page's text was recognised from a scan (OCR)
    embedding_model: str = ""
    embedding_runtime: str = ""  # torch, onnx or onnx-int8 (the local model), or ""


CANDIDATE_COLUMNS = """c.document_id, c.position, coalesce(nullif(d.path, ''), d.ref), c.is_summary, s.priority,
    extract(epoch FROM coalesce(d.created_at, d.indexed_at))::float8, c.text_key, c.body_key, {embedding}"""  # noqa: E501
NO_CANDIDATE_COLUMNS = (
    "NULL::bigint, NULL::int, NULL::text, NULL::bool, NULL::float8, NULL::float8, NULL::text, "
    "NULL::text, NULL::vector"
)
CANDIDATE_JOINS = (
    "JOIN kb_document d ON d.id = c.document_id JOIN kb_source s ON s.id = d.source_id"
)


def embedding_sql(with_embeddings: bool) -> str:
    return "c.embedding" if with_embeddings else "NULL::vector"


def candidate_row(chunk_id: int, cosine: float | None, columns) -> CandidateRow:
    """A CandidateRow from `CANDIDATE_COLUMNS`. The date travels as epoch seconds: parsing a
    timestamptz per candidate cost more than the rest of the query."""
    (
        document_id,
        position,
        path,
        is_summary,
        priority,
        dated_epoch,
        text_key,
        body_key,
        embedding,
    ) = columns
    if embedding is not None and not isinstance(embedding, (list, tuple, np.ndarray)):
        embedding = [float(x) for x in str(embedding).strip("[]").split(",")]
    return CandidateRow(
        chunk_id,
        document_id,
        position,
        path,
        is_summary,
        float(priority),
        dated_epoch,
        cosine,
        text_key,
        body_key,
        tuple(float(x) for x in embedding) if embedding is not None else None,
    )


def candidate_rows(
    scope: Scope, chunk_ids: list[int], with_embeddings: bool = False
) -> dict[int, CandidateRow]:
    """The ranker's view of the candidates, in one query, without their cosine (that comes with
    the vector channel, `vector_candidates`); the namespace condition is repeated so a foreign id
    can never be read."""
    if not chunk_ids:
        return {}
    where, params = scope.where("c")
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""SELECT c.id, {CANDIDATE_COLUMNS.format(embedding=embedding_sql(with_embeddings))}
                FROM kb_chunk c {CANDIDATE_JOINS}
                WHERE c.id = ANY(%s) AND {where}""",
            [list(chunk_ids), *params],
        )
        rows = cursor.fetchall()
    return {row[0]: candidate_row(row[0], None, row[1:]) for row in rows}


LEAD_CHARS = 400  # of a passage a page lists but does not show: its breadcrumb and first words


def hydrate(
    scope: Scope, chunk_ids: list[int], text_ids: list[int] | None = None
) -> dict[int, ChunkRow]:
    """Full rows for the results that are shown; with `text_ids`, only those chunks carry their
    whole text, the others its first LEAD_CHARS (a page lists them by their breadcrumbs, and by
    their first words where two would read alike)."""
    if not chunk_ids:
        return {}
    where, params = scope.where("c")
    text = (
        "c.text"
        if text_ids is None
        else f"CASE WHEN c.id = ANY(%s) THEN c.text ELSE left(c.text, {LEAD_CHARS}) END"
    )
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""SELECT c.id, c.document_id, d.source_id, c.position, {text}, c.heading_path, c.anchor,
                       c.start_byte, c.end_byte, d.title, d.ref, d.path, coalesce(d.metadata->>'url', ''),
                       s.kind, s.name, d.created_at, d.indexed_at, c.page_start, c.page_end,
                       coalesce(d.metadata->>'page_unit', ''),
                       coalesce(d.metadata->'ocr_pages' @> to_jsonb(c.page_start)
                                OR d.metadata->'ocr_pages' @> to_jsonb(c.page_end), false),
                       c.embedding_model, c.embedding_runtime
                FROM kb_chunk c JOIN kb_document d ON d.id = c.document_id
                JOIN kb_source s ON s.id = d.source_id
                WHERE c.id = ANY(%s) AND {where}""",  # noqa: E501
            [*([list(text_ids)] if text_ids is not None else []), list(chunk_ids), *params],
        )
        return {
            row[0]: ChunkRow(*row[:5], tuple(row[5] or ()), *row[6:]) for row in cursor.fetchall()
        }
