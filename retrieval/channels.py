"""Candidate channels: the SQL that finds chunks, one function per channel. No ranking here.

Every query filters by namespace (and optional source/document ids) inside SQL, so nothing from
another namespace is ever read. Each channel returns `ChannelRow`s in its own order with its raw
signal; `retrieval.passage_rows` then loads what the ranker and the surfaces need about the
candidates, and `retrieval.scope` says where a search reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import transaction

from kb.languages import DEFAULT_CONFIG
from kb.replicas import read_alias, read_connection
from retrieval.passage_rows import (
    CANDIDATE_COLUMNS,
    CANDIDATE_JOINS,
    NO_CANDIDATE_COLUMNS,
    CandidateRow,
    candidate_row,
    embedding_sql,
)
from retrieval.scope import Scope, named_where


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
    """Run the vector channel and read the candidates' rows and cosines in one statement.

    One round trip after the query embedding: the nearest k chunks through the namespace's HNSW
    index (an exact scan below its size, retrieval/vector_index.py), plus the cosines of
    `known_ids`, the other channels' candidates. HNSW returns at most hnsw.ef_search rows, so
    ef_search is raised to the candidate count, and the iterative scan keeps filling the list when a
    filter removes rows.

    `model` limits the comparison to the passages that model embedded (a namespace part-way to
    another model); empty means every passage. The other model's vectors then share the index, so
    the scan's bound is lifted to `FILTERED_SCAN_TUPLES`: slower during a re-embed, but never a
    short list.
    """
    where, params = named_where(scope, "c")
    if model:
        where, params = f"{where} AND c.embedding_model = %(model)s", {**params, "model": model}
    known = list(known_ids)
    sql = f"""
        WITH nearest AS MATERIALIZED (
            SELECT c.id, 1 - (c.embedding <=> %(q)s::vector) AS cosine FROM kb_chunk c
            WHERE {where} AND c.embedding IS NOT NULL
            ORDER BY c.embedding <=> %(q)s::vector LIMIT %(k)s)
        SELECT n.id, n.cosine, true, {CANDIDATE_COLUMNS.format(embedding=embedding_sql(with_embeddings))}
        FROM nearest n JOIN kb_chunk c ON c.id = n.id {CANDIDATE_JOINS}
        WHERE n.id <> ALL(%(known)s::bigint[])
        UNION ALL
        SELECT n.id, n.cosine, true, {NO_CANDIDATE_COLUMNS}
        FROM nearest n WHERE n.id = ANY(%(known)s::bigint[])
        UNION ALL
        SELECT c.id, 1 - (c.embedding <=> %(q)s::vector), false, {NO_CANDIDATE_COLUMNS}
        FROM kb_chunk c
        WHERE c.id = ANY(%(known)s::bigint[]) AND {where} AND c.embedding IS NOT NULL
          AND c.id NOT IN (SELECT id FROM nearest)"""  # noqa: E501
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
            candidates[chunk_id] = candidate_row(chunk_id, cosine, row[3:])
        else:
            cosines[chunk_id] = cosine
    # relaxed_order may return near-ties slightly out of order: restore exact order
    nearest.sort(key=lambda r: (-r.raw, r.chunk_id))
    return VectorCandidates(nearest, candidates, cosines)


NAMES_READ_PER_KEY = 500  # a key more document names contain than this names none of them


@dataclass(frozen=True)
class NamesResult:
    rows: list[ChannelRow]  # best first: coverage of the name, then chunk id
    common_keys: tuple[str, ...] = ()  # keys in more than NAMES_READ_PER_KEY names: not used


def names_channel(scope: Scope, name_keys: tuple[str, ...], cap: int = 10) -> list[ChannelRow]:
    return names_search(scope, name_keys, cap).rows


def names_search(scope: Scope, name_keys: tuple[str, ...], cap: int = 10) -> NamesResult:
    """Documents whose name key contains a versioned query token, scored by how much name it covers.

    Each document is represented by its first chunk. Bounded: each key reads at most
    NAMES_READ_PER_KEY + 1 names, and a key found in more is left out (`common_keys`): a token a
    thousand titles share names none of them, and reading them all cost p99 176 ms at a million
    documents. Only the documents that can reach the top `cap` have their first chunk looked up.
    """
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
