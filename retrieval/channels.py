"""Candidate channels: the SQL that finds chunks, one function per channel. No ranking here.

Every query filters by namespace (and optional source/document ids) inside SQL, so nothing from
another namespace is ever read. Each channel returns `ChannelRow`s in its own order with its raw
signal; `hydrate()` then loads what the ranker and the surfaces need about the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import transaction

from kb.languages import DEFAULT_CONFIG
from kb.replicas import read_alias, read_connection


@dataclass(frozen=True)
class Scope:
    """Where a search reads: one namespace, optionally some of its sources or documents, and of
    its documents those the reader may read. `audiences`: the restricted audiences (kb.audiences)
    read besides the open documents, None for every one; each restricted audience read also
    keeps its words' statistics apart, under `statistics_keys` (kb/migrations/0049_audiences.py)."""

    namespace_id: int
    source_ids: tuple[int, ...] = ()
    document_ids: tuple[int, ...] = ()
    audiences: tuple[int, ...] | None = ()

    @property
    def statistics_keys(self) -> tuple[int, ...]:
        """The keys of the postings and counts this scope reads: the namespace's own (its open
        documents') and minus each restricted audience's id. With `audiences` None (every one,
        unresolved) only the namespace's own: `planning.plan` resolves them."""
        return (int(self.namespace_id), *(-int(a) for a in self.audiences or ()))

    def where(self, chunk_alias: str = "c") -> tuple[str, list]:
        """SQL conditions (and params) restricting chunks `chunk_alias` to this scope. The
        namespace id is written into the SQL as an integer literal, so the planner can match the
        namespace's partial vector index (retrieval/vector_index.py) even in a generic prepared plan."""
        sql = [f"{chunk_alias}.namespace_id = {int(self.namespace_id)}"]
        params: list = []
        if self.document_ids:
            sql.append(f"{chunk_alias}.document_id = ANY(%s)")
            params.append(list(self.document_ids))
        if self.source_ids:
            sql.append(
                f"{chunk_alias}.document_id IN (SELECT id FROM kb_document WHERE source_id = ANY(%s))"
            )
            params.append(list(self.source_ids))
        self._audience(chunk_alias, sql, params)
        return " AND ".join(sql), params

    def document_where(self, document_alias: str = "d") -> tuple[str, list]:
        """The same scope as `where`, on documents `document_alias`."""
        sql = [f"{document_alias}.namespace_id = {int(self.namespace_id)}"]
        params: list = []
        if self.document_ids:
            sql.append(f"{document_alias}.id = ANY(%s)")
            params.append(list(self.document_ids))
        if self.source_ids:
            sql.append(f"{document_alias}.source_id = ANY(%s)")
            params.append(list(self.source_ids))
        self._audience(document_alias, sql, params)
        return " AND ".join(sql), params

    def _audience(self, alias: str, sql: list[str], params: list) -> None:
        if self.audiences is None:
            return
        if not self.audiences:
            sql.append(f"{alias}.audience_id IS NULL")
        else:
            sql.append(f"({alias}.audience_id IS NULL OR {alias}.audience_id = ANY(%s))")
            params.append(list(self.audiences))


@dataclass(frozen=True)
class ChannelRow:
    chunk_id: int
    raw: float


def vector_literal(vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in np.asarray(vector).ravel()) + "]"


def vector_channel(scope: Scope, query_vector, k: int) -> list[ChannelRow]:
    """Nearest chunks by cosine, best first (`vector_candidates` without the candidate rows)."""
    return vector_candidates(scope, query_vector, k).rows


@dataclass(frozen=True)
class VectorCandidates:
    rows: list[ChannelRow]  # the vector channel, best first
    candidates: dict[
        int, "CandidateRow"
    ]  # the ranker's view of each nearest chunk not in `known_ids`
    cosines: dict[int, float]  # the cosine of every id in `known_ids` that has an embedding


DEFAULT_SCAN_TUPLES = 20_000  # pgvector's own bound on an iterative HNSW scan
FILTERED_SCAN_TUPLES = 2_000_000  # past the largest namespace measured (a million chunks)


def vector_candidates(
    scope: Scope,
    query_vector,
    k: int,
    known_ids: list[int] = (),
    with_embeddings: bool = False,
    model: str = "",
) -> VectorCandidates:
    """The vector channel and what the ranker needs about its hits, in one statement, so the
    search does one round trip after its query embedding is ready: the nearest k chunks through
    the namespace's HNSW index (an exact scan for a namespace too small to have one,
    retrieval/vector_index.py) with their candidate rows, plus the cosine of the candidates other
    channels found earlier (`known_ids`, whose rows the caller already has).

    An HNSW scan returns at most hnsw.ef_search rows, so ef_search is raised to the candidate
    count, and the iterative scan keeps filling the list when a filter removes rows.

    `model`: compare with the passages that model embedded only (a namespace part-way to another
    model, whose other vectors mean nothing beside the query's); every passage when empty. The
    index holds both models' vectors then, and the iterative scan may have to walk far past the
    other model's to find k of this one's: its bound (20,000 tuples by default) is lifted to
    `FILTERED_SCAN_TUPLES`, slower for the time a re-embed takes, but never a short list."""
    where, params = named_where(scope, "c")
    if model:
        where, params = f"{where} AND c.embedding_model = %(model)s", {**params, "model": model}
    known = list(known_ids)
    sql = f"""
        WITH nearest AS MATERIALIZED (
            SELECT c.id, 1 - (c.embedding <=> %(q)s::vector) AS cosine FROM kb_chunk c
            WHERE {where} AND c.embedding IS NOT NULL
            ORDER BY c.embedding <=> %(q)s::vector LIMIT %(k)s)
        SELECT n.id, n.cosine, true, {_CANDIDATE_COLUMNS.format(embedding=_embedding_sql(with_embeddings))}
        FROM nearest n JOIN kb_chunk c ON c.id = n.id {_CANDIDATE_JOINS}
        WHERE n.id <> ALL(%(known)s::bigint[])
        UNION ALL
        SELECT n.id, n.cosine, true, {_NO_CANDIDATE_COLUMNS}
        FROM nearest n WHERE n.id = ANY(%(known)s::bigint[])
        UNION ALL
        SELECT c.id, 1 - (c.embedding <=> %(q)s::vector), false, {_NO_CANDIDATE_COLUMNS}
        FROM kb_chunk c
        WHERE c.id = ANY(%(known)s::bigint[]) AND {where} AND c.embedding IS NOT NULL
          AND c.id NOT IN (SELECT id FROM nearest)"""
    ef_search = str(min(1000, max(k, 40)))
    with transaction.atomic(using=read_alias()), read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', "
            "'relaxed_order', true), set_config('hnsw.max_scan_tuples', %s, true)",
            [ef_search, str(FILTERED_SCAN_TUPLES if model else DEFAULT_SCAN_TUPLES)],
        )
        cursor.execute(sql, {"q": vector_literal(query_vector), "k": k, "known": known, **params})
        fetched = cursor.fetchall()
    nearest, candidates, cosines = [], {}, {}
    for row in fetched:
        chunk_id, cosine, is_nearest = row[0], float(row[1]), row[2]
        if is_nearest:
            nearest.append(ChannelRow(chunk_id, cosine))
        if row[3] is not None:
            candidates[chunk_id] = _candidate_row(chunk_id, cosine, row[3:])
        else:
            cosines[chunk_id] = cosine
    # relaxed_order may return near-ties slightly out of order: restore exact order
    nearest.sort(key=lambda r: (-r.raw, r.chunk_id))
    return VectorCandidates(nearest, candidates, cosines)


def named_where(scope: Scope, chunk_alias: str) -> tuple[str, dict]:
    """`Scope.where` with named placeholders, for queries that use named parameters."""
    sql, values = scope.where(chunk_alias)
    parts = sql.split("%s")
    named = parts[0] + "".join(f"%(scope_{i})s{part}" for i, part in enumerate(parts[1:]))
    return named, {f"scope_{i}": value for i, value in enumerate(values)}


NAMES_READ_PER_KEY = 500  # a key more document names contain than this names none of them


@dataclass(frozen=True)
class NamesResult:
    rows: list[ChannelRow]  # best first: coverage of the name, then chunk id
    common_keys: tuple[str, ...] = ()  # keys in more than NAMES_READ_PER_KEY names: not used


def names_channel(scope: Scope, name_keys: tuple[str, ...], cap: int = 10) -> list[ChannelRow]:
    return names_search(scope, name_keys, cap).rows


def names_search(scope: Scope, name_keys: tuple[str, ...], cap: int = 10) -> NamesResult:
    """Documents whose name key contains a versioned query token; each is represented by its
    first chunk, scored by how much of the name the token covers.

    Bounded: each key reads at most NAMES_READ_PER_KEY + 1 names through the trigram index, and a
    key found in more names than that is left out (reported in `common_keys`): a token a
    thousand titles share names none of them, and reading them all cost p99 176 ms at a million
    documents. Only the documents that can reach the top `cap` (the best coverages, ties
    included) have their first chunk looked up."""
    if not name_keys:
        return NamesResult([])
    where, params = scope.document_where("d")
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""SELECT k.n, d.id, d.name_key
                  FROM unnest(%s::text[]) WITH ORDINALITY AS k(pattern, n)
                 CROSS JOIN LATERAL (SELECT d.id, d.name_key FROM kb_document d
                                      WHERE d.name_key LIKE k.pattern AND {where}
                                      LIMIT {NAMES_READ_PER_KEY + 1}) d""",
            [
                [f"%{key}%" for key in name_keys],
                *params,
            ],  # keys are alphanumeric: no LIKE wildcards
        )
        matched = cursor.fetchall()
        per_key: dict[int, list[tuple[int, str]]] = {}
        for n, document_id, name_key in matched:
            per_key.setdefault(n - 1, []).append((document_id, name_key))
        common = tuple(
            name_keys[i] for i, found in sorted(per_key.items()) if len(found) > NAMES_READ_PER_KEY
        )
        keys = [key for key in name_keys if key not in common]
        coverage: dict[int, float] = {}
        for i, found in per_key.items():
            if name_keys[i] in common:
                continue
            for document_id, name_key in found:
                if document_id not in coverage:
                    coverage[document_id] = min(
                        1.0,
                        max(len(key) / max(len(name_key), 1) for key in keys if key in name_key),
                    )
        ranked = sorted(coverage, key=lambda document_id: -coverage[document_id])
        scored: list[ChannelRow] = []
        start = 0
        while (
            start < len(ranked) and len(scored) < cap
        ):  # a document without chunks gives way to the next
            end = min(start + cap, len(ranked))
            while end < len(ranked) and coverage[ranked[end]] == coverage[ranked[end - 1]]:
                end += 1
            cursor.execute(
                f"""SELECT DISTINCT ON (c.document_id) c.document_id, c.id FROM kb_chunk c
                     WHERE c.document_id = ANY(%s) AND c.namespace_id = {int(scope.namespace_id)}
                     ORDER BY c.document_id, c.position""",
                [ranked[start:end]],
            )
            scored += [
                ChannelRow(chunk_id, coverage[document_id])
                for document_id, chunk_id in cursor.fetchall()
            ]
            start = end
    scored.sort(key=lambda r: (-r.raw, r.chunk_id))
    return NamesResult(scored[:cap], common)


def identifier_channel(
    scope: Scope, identifiers: tuple[str, ...], configs: tuple[str, ...] = (), cap: int = 20
) -> list[ChannelRow]:
    """Chunks containing an identifier exactly (case-insensitive): the GIN index narrows them by
    the identifier's lexemes in any of the namespace's text search configurations, then the text
    is checked literally."""
    if not identifiers:
        return []
    rows: dict[int, float] = {}
    where, params = scope.where("c")
    configs = tuple(configs) or (DEFAULT_CONFIG,)
    matches = " || ".join(["kb_query(%s, q.identifier)"] * len(configs))
    with read_connection().cursor() as cursor:
        # one statement for all identifiers (each keeps its own LIMIT), in the query's order
        cursor.execute(
            f"""SELECT found.id FROM unnest(%s::text[]) WITH ORDINALITY AS q(identifier, n)
                CROSS JOIN LATERAL (
                    SELECT c.id, length(c.text) AS size FROM kb_chunk c
                    WHERE {where} AND c.search_vector @@ ({matches})
                      AND strpos(lower(c.text), lower(q.identifier)) > 0
                    ORDER BY length(c.text), c.id LIMIT %s) AS found
                ORDER BY q.n, found.size, found.id""",
            [list(identifiers), *params, *configs, cap],
        )
        for (chunk_id,) in cursor.fetchall():
            rows.setdefault(chunk_id, 1.0)
    return [ChannelRow(chunk_id, raw) for chunk_id, raw in list(rows.items())[:cap]]


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


_CANDIDATE_COLUMNS = """c.document_id, c.position, coalesce(nullif(d.path, ''), d.ref), c.is_summary, s.priority,
    extract(epoch FROM coalesce(d.created_at, d.indexed_at))::float8, c.text_key, c.body_key, {embedding}"""
_NO_CANDIDATE_COLUMNS = (
    "NULL::bigint, NULL::int, NULL::text, NULL::bool, NULL::float8, NULL::float8, NULL::text, "
    "NULL::text, NULL::vector"
)
_CANDIDATE_JOINS = (
    "JOIN kb_document d ON d.id = c.document_id JOIN kb_source s ON s.id = d.source_id"
)


def _embedding_sql(with_embeddings: bool) -> str:
    return "c.embedding" if with_embeddings else "NULL::vector"


def _candidate_row(chunk_id: int, cosine: float | None, columns) -> CandidateRow:
    """A CandidateRow from `_CANDIDATE_COLUMNS`. The date travels as epoch seconds: parsing a
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
            f"""SELECT c.id, {_CANDIDATE_COLUMNS.format(embedding=_embedding_sql(with_embeddings))}
                FROM kb_chunk c {_CANDIDATE_JOINS}
                WHERE c.id = ANY(%s) AND {where}""",
            [list(chunk_ids), *params],
        )
        rows = cursor.fetchall()
    return {row[0]: _candidate_row(row[0], None, row[1:]) for row in rows}


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
                WHERE c.id = ANY(%s) AND {where}""",
            [*([list(text_ids)] if text_ids is not None else []), list(chunk_ids), *params],
        )
        return {
            row[0]: ChunkRow(*row[:5], tuple(row[5] or ()), *row[6:]) for row in cursor.fetchall()
        }
