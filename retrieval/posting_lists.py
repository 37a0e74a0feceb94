"""Packed posting lists: each large namespace's BM25 postings, one row per term.

The postings table (`kb_chunk_term`) is the truth the trigger keeps exact, at about 0.7 µs a posting
read; packed lists read at a few ns. They are a snapshot built when a run ends, exact between builds
because the trigger records every chunk written since (`kb_posting_list_changed`), and a read
returns them with those chunks' current postings from one snapshot. A build holds the namespace's
statistics row locked, so writes to it wait (75 s to 12 minutes at a million chunks) and none falls
between build and recording.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import numpy as np
import psycopg
from django.db import connection, transaction

from kb.replicas import read_connection

logger = logging.getLogger(__name__)

REBUILD_SHARE = (
    0.1  # rebuild when the chunks changed since the build reach this share of the namespace
)
_LOCK_CLASS = 0x6B70  # advisory lock class ("kp") serialising builds of one namespace's lists
LENGTHS_CACHE_BYTES = 256 * 2**20  # each process keeps the lengths arrays it read up to this size
_MAX_SPAN = (
    LENGTHS_CACHE_BYTES // 4
)  # chunk ids a build may span: its lengths array (4 bytes an id) fits the cache
# nor more than this many ids per chunk (plus MIN_SPREAD): ids interleaved with other namespaces'
SPREAD = 32
MIN_SPREAD = 2**20


@dataclass(frozen=True)
class TermPostings:
    """One term's postings as arrays, aligned: chunk ids and term frequencies, with the chunks'
    lengths either aligned too (`lengths`: postings read from the table) or looked up by chunk
    offset in the namespace's array (`length_of`: packed postings). The packed ones are zero-copy
    views of the bytes read (big-endian), converted while scored."""

    lexeme: str
    chunk_ids: np.ndarray  # chunk ids minus `base`, any integer type
    tfs: np.ndarray  # any numeric type
    lengths: np.ndarray | None = None
    base: int = 0
    length_of: np.ndarray | None = None  # every chunk's length at its offset (chunk_ids index it)
    min_length: float | None = None  # the shortest length among the postings, when known

    def lengths_at(self, positions: np.ndarray | None = None) -> np.ndarray:
        """The lengths of the chunks of these postings (of those at `positions`: all by default)."""
        if self.length_of is None:
            return self.lengths if positions is None else self.lengths[positions]
        offsets = self.chunk_ids if positions is None else self.chunk_ids[positions]
        return self.length_of[offsets.astype(np.intp)]

    def shortest(self) -> float:
        return float(self.lengths_at().min()) if self.min_length is None else self.min_length


class _LengthsCache:
    """Each namespace's lengths array as last read, under the key of the build it came from (the
    build row's xmin and clock time: two builds in one transaction differ by the latter), holding
    at most LENGTHS_CACHE_BYTES: a read sends the key, and the database sends the array only when
    the key is not the current build's."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: dict[int, tuple[str, np.ndarray]] = {}

    def get(self, namespace_id: int) -> tuple[str, np.ndarray] | None:
        with self._lock:
            entry = self._entries.pop(namespace_id, None)
            if entry is not None:
                self._entries[namespace_id] = entry  # the most recently used last
            return entry

    def put(self, namespace_id: int, key: str, lengths: np.ndarray) -> None:
        if lengths.nbytes > self.max_bytes:
            return  # used for this read only: the next one reads it again
        with self._lock:
            self._entries.pop(namespace_id, None)
            while (
                self._entries
                and sum(a.nbytes for _, a in self._entries.values()) + lengths.nbytes
                > self.max_bytes
            ):
                del self._entries[next(iter(self._entries))]  # the least recently used first
            self._entries[namespace_id] = (key, lengths)


_lengths = _LengthsCache(LENGTHS_CACHE_BYTES)


@dataclass(frozen=True)
class PackedRead:
    """What the lexical channel scores: the packed lists' postings, minus those of the chunks in
    `changed_ids`, plus `current` (the table's postings of changed and newer chunks)."""

    packed: list[TermPostings]
    current: list[TermPostings]
    changed_ids: np.ndarray  # int64: chunks whose packed postings are out of date

    @property
    def postings(self) -> int:
        return sum(len(t.chunk_ids) for t in self.packed + self.current)


@dataclass(frozen=True)
class BuildState:
    namespace_id: int
    chunk_count: int  # at the build
    postings: int
    build_seconds: float
    changed_since: int  # chunks written since the build that the lists may hold
    newer: int  # chunks added since the build


def read(namespace_id: int, lexemes: list[str]) -> PackedRead | None:
    """The namespace's postings of `lexemes`, packed where its lists hold them; None when the
    namespace has no lists. One statement, so the lists, the lengths, the changed chunks and the
    table's current postings come from one snapshot; the lengths array comes only when this
    process does not hold the build's already. Each term is looked up by its own LATERAL probe
    of the primary key: with the statistics of a namespace built since the last ANALYZE, the
    planner otherwise walks all of its rows once per term."""
    namespace = int(namespace_id)
    cached = _lengths.get(namespace)
    sql = f"""
        WITH b AS (SELECT base_chunk_id, max_chunk_id FROM kb_posting_list_build WHERE namespace_id = {namespace}),
             changed AS (SELECT coalesce(array_agg(chunk_id), '{{}}') AS ids
                           FROM kb_posting_list_changed WHERE namespace_id = {namespace}),
             q AS (SELECT unnest(%s::text[]) AS lexeme)
        SELECT 0, x.key, int8send(x.base_chunk_id), CASE WHEN x.key = %s THEN NULL ELSE x.lengths END,
               NULL::bytea, NULL::real
          FROM (SELECT xmin::text || ' ' || built_at::text AS key, base_chunk_id, lengths
                  FROM kb_posting_list_build WHERE namespace_id = {namespace}) x
        UNION ALL
        SELECT 1, l.lexeme, v.offsets, v.tfs, NULL, v.min_length  -- a row per array: faster than one per term
          FROM q CROSS JOIN LATERAL (SELECT * FROM kb_posting_list l  -- LIMIT: never flattened into a join
                                     WHERE l.namespace_id = {namespace} AND l.lexeme = q.lexeme LIMIT 1) l
         CROSS JOIN LATERAL (VALUES (l.chunk_offsets, NULL::bytea, l.min_length), (NULL, l.tfs, NULL))
                            AS v(offsets, tfs, min_length)
        UNION ALL
        SELECT 2, NULL, (SELECT string_agg(int8send(id), ''::bytea) FROM unnest(changed.ids) AS id), NULL, NULL, NULL
          FROM changed
        UNION ALL
        SELECT 3, t.lexeme, string_agg(int8send(t.chunk_id), ''::bytea), string_agg(int2send(t.tf::int2), ''::bytea),
               string_agg(float4send(t.doc_len), ''::bytea), NULL
          FROM b CROSS JOIN changed CROSS JOIN q CROSS JOIN LATERAL (
                SELECT p.lexeme, p.chunk_id, p.tf, p.doc_len FROM kb_chunk_term p
                 WHERE p.namespace_id = {namespace} AND p.lexeme = q.lexeme AND p.chunk_id > b.max_chunk_id
                UNION ALL
                SELECT p.lexeme, p.chunk_id, p.tf, p.doc_len FROM kb_chunk_term p
                 WHERE p.namespace_id = {namespace} AND p.lexeme = q.lexeme AND p.chunk_id = ANY(changed.ids)) t
         GROUP BY t.lexeme"""  # noqa: E501
    database = read_connection()
    with (
        database.wrap_database_errors
    ):  # Django's exceptions, so a replica's failure falls back as any read's
        database.ensure_connection()
        # binary results: the arrays arrive as bytes, not as hex text twice their size
        with psycopg.Cursor(database.connection) as cursor:
            cursor.execute(sql, [list(lexemes), cached[0] if cached else None], binary=True)
            rows = cursor.fetchall()
    parts: dict[int, list] = {0: [], 1: [], 2: [], 3: []}
    for part, *values in rows:
        parts[part].append(values)
    if not parts[0]:
        return None
    key, base_bytes, sent = parts[0][0][:3]
    base = int(np.frombuffer(base_bytes, ">i8")[0])
    if sent is None:
        length_of = cached[1]
    else:
        length_of = np.frombuffer(sent, ">f4").astype(
            np.float32
        )  # native: looked up once per posting scored
        length_of.flags.writeable = False  # shared by the process's threads
        _lengths.put(namespace, key, length_of)
    arrays: dict[str, list] = {}
    for lexeme, ids, tfs, _, min_length in parts[1]:
        term = arrays.setdefault(lexeme, [None, None, None])
        for i, value in enumerate((ids, tfs, min_length)):
            if value is not None:
                term[i] = value
    packed = [
        TermPostings(
            lexeme,
            np.frombuffer(ids, ">i4"),
            np.frombuffer(tfs, ">i2"),
            base=base,
            length_of=length_of,
            min_length=float(min_length),
        )
        for lexeme, (ids, tfs, min_length) in arrays.items()
    ]
    current = [
        TermPostings(
            lexeme,
            np.frombuffer(ids, ">i8"),
            np.frombuffer(tfs, ">i2"),
            np.frombuffer(lengths, ">f4"),
        )
        for lexeme, ids, tfs, lengths, _ in parts[3]
    ]
    changed = parts[2][0][1] if parts[2] else None
    return PackedRead(packed, current, np.frombuffer(changed or b"", ">i8").astype(np.int64))


def build(namespace_id: int) -> str:
    """Pack the namespace's postings afresh, replacing its lists and forgetting the changes they
    absorbed, in one transaction (a failed build leaves the old lists in force). Returns "built",
    "empty" (no postings), "busy" (another process is building them) or "too-wide" (its chunk
    ids span more than _MAX_SPAN, or more than SPREAD ids a chunk: the lengths array would be
    mostly other namespaces' ids)."""
    namespace = int(namespace_id)
    started = time.monotonic()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_LOCK_CLASS, namespace])
        if not cursor.fetchone()[0]:
            return "busy"
        # writers to the namespace update this row in the postings trigger: they wait for the build
        cursor.execute(
            f"SELECT chunk_count FROM kb_namespace_stats WHERE namespace_id = {namespace} FOR "
            "UPDATE"
        )
        if cursor.fetchone() is None:
            return "empty"
        base, top, chunks = _id_range(cursor, namespace)
        if not chunks:
            drop(namespace)
            return "empty"
        span = top - base + 1
        if too_wide(span, chunks):
            drop(namespace)
            logger.warning(
                "namespace %s gets no posting lists: its %s chunks span %s ids (too wide); "
                "its lexical channel reads the postings table",
                namespace,
                chunks,
                span,
            )
            return "too-wide"
        cursor.execute(
            f"DELETE FROM kb_posting_list_build WHERE namespace_id = {namespace}"
        )  # cascades
        cursor.execute("SET LOCAL work_mem = '256MB'")
        # each chunk's length as its postings carry it (the table read's and min_length's source), 0
        # for an
        # id that holds none: one probe of the postings' chunk index per id (another namespace's
        # chunk
        # within the span gets its length too; no posting of these lists points at it)
        cursor.execute(
            f"""INSERT INTO kb_posting_list_build (namespace_id, base_chunk_id, max_chunk_id, chunk_count, postings,
                                                   built_at, lengths)
                SELECT {namespace}, {int(base)}, {int(top)}, {int(chunks)}, 0, clock_timestamp(),  -- a build's key
                       string_agg(float4send(coalesce(p.doc_len, 0)), ''::bytea ORDER BY o.id)
                  FROM generate_series({int(base)}::bigint, {int(top)}::bigint) AS o(id)
                  LEFT JOIN LATERAL (SELECT t.doc_len FROM kb_chunk_term t WHERE t.chunk_id = o.id LIMIT 1) p
                    ON true"""  # noqa: E501
        )
        cursor.execute(
            f"""INSERT INTO kb_posting_list (namespace_id, lexeme, postings, chunk_offsets, tfs, min_length)
                SELECT namespace_id, lexeme, count(*),
                       string_agg(int4send((chunk_id - {int(base)})::int4), ''::bytea ORDER BY chunk_id),
                       string_agg(int2send(tf::int2), ''::bytea ORDER BY chunk_id), min(doc_len)
                  FROM kb_chunk_term WHERE namespace_id = {namespace} AND chunk_id <= {int(top)}
                 GROUP BY namespace_id, lexeme"""  # noqa: E501
        )
        cursor.execute(
            f"""UPDATE kb_posting_list_build SET build_seconds = %s,
                       postings = (SELECT coalesce(sum(postings), 0) FROM kb_posting_list
                                    WHERE namespace_id = {namespace})
                 WHERE namespace_id = {namespace}""",
            [round(time.monotonic() - started, 3)],
        )
    logger.info(
        "posting lists of namespace %s built in %.1f s", namespace, time.monotonic() - started
    )
    return "built"


def too_wide(span: int, chunks: int) -> bool:
    """Whether `chunks` chunks whose ids span `span` ids get no lists: the lengths array would not
    fit the per-process cache, or would hold mostly other namespaces' ids."""
    return span > _MAX_SPAN or span > SPREAD * chunks + MIN_SPREAD


def id_span(namespace_id: int) -> tuple[int, int]:
    """The namespace's chunks and the ids they span (0, 0 when it has none)."""
    with connection.cursor() as cursor:
        base, top, chunks = _id_range(cursor, int(namespace_id))
    return (int(chunks), int(top - base + 1)) if chunks else (0, 0)


def _id_range(cursor, namespace: int) -> tuple[int | None, int | None, int]:
    """The namespace's lowest and highest chunk id and its chunk count (None, None, 0 when
    empty)."""
    cursor.execute(
        "SELECT min(id), max(id), count(*) FROM kb_chunk WHERE namespace_id = %s", [namespace]
    )
    return cursor.fetchone()


def drop(namespace_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM kb_posting_list_build WHERE namespace_id = %s", [int(namespace_id)]
        )


def state(namespace_id: int) -> BuildState | None:
    namespace = int(namespace_id)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT b.chunk_count, b.postings, b.build_seconds,
                       (SELECT count(*) FROM kb_posting_list_changed WHERE namespace_id = {namespace}),
                       (SELECT count(*) FROM kb_chunk c WHERE c.namespace_id = {namespace} AND c.id > b.max_chunk_id)
                  FROM kb_posting_list_build b WHERE b.namespace_id = {namespace}"""  # noqa: E501
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return BuildState(namespace, int(row[0]), int(row[1]), float(row[2]), int(row[3]), int(row[4]))


def ensure(namespace_id: int, min_chunks: int | None = None) -> str:
    """Build the namespace's lists when it has at least `min_chunks` chunks
    (KB_POSTING_LISTS_MIN_CHUNKS) and no lists yet, or when the chunks changed since the build
    reach REBUILD_SHARE of the namespace. Returns what happened: "built", "current", "too-small"
    or what `build` returned."""
    if min_chunks is None:
        from kb.conf import kb_settings

        min_chunks = kb_settings().posting_lists_min_chunks
    current = state(namespace_id)
    if current is None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT chunk_count FROM kb_namespace_stats WHERE namespace_id = %s",
                [int(namespace_id)],
            )
            row = cursor.fetchone()
        if row is None or row[0] < min_chunks:
            return "too-small"
        return build(namespace_id)
    if current.changed_since + current.newer < REBUILD_SHARE * max(current.chunk_count, 1):
        return "current"
    return build(namespace_id)
