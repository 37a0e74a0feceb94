"""Per-namespace HNSW indexes on kb_chunk.embedding.

One HNSW index over the table serves namespace filters badly (the walk visits mostly foreign rows),
so, as pgvector advises, each namespace of at least `KB_VECTOR_INDEX_MIN_CHUNKS` chunks gets a
partial index; smaller ones are searched exactly, as fast there. It is built when a run ends (one
bulk build beats growing the graph row by row) and CONCURRENTLY, so searches and writes go on. These
statements are the only DDL the application issues at run time.
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass

from django.db import connection, transaction

logger = logging.getLogger(__name__)

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
BUILD_MEMORY_MIN_MB = 512  # least maintenance_work_mem for a build: a 200k-chunk graph fits
GRAPH_BYTES_PER_CHUNK = (
    1024  # an HNSW element's neighbour lists and header at m = 16, besides its vector
)
NAME_PREFIX = "kb_chunk_embedding_ns"
_NAME_PATTERN = re.compile(rf"^{NAME_PREFIX}(\d+)$")
_LOCK_CLASS = 0x6B62  # advisory lock class ("kb") serialising builds of one namespace's index


@dataclass(frozen=True)
class NamespaceIndex:
    namespace_id: int
    name: str
    valid: bool
    size_bytes: int


def index_name(namespace_id: int) -> str:
    return f"{NAME_PREFIX}{int(namespace_id)}"


def namespace_indexes() -> dict[int, NamespaceIndex]:
    """The per-namespace vector indexes that exist, by namespace id (including invalid ones a
    failed concurrent build left behind)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT i.relname, x.indisvalid, pg_relation_size(i.oid) FROM pg_index x
               JOIN pg_class i ON i.oid = x.indexrelid
               WHERE x.indrelid = 'kb_chunk'::regclass AND i.relname LIKE %s""",
            [NAME_PREFIX + "%"],
        )
        rows = cursor.fetchall()
    found = {}
    for name, valid, size in rows:
        match = _NAME_PATTERN.match(name)
        if match:
            found[int(match.group(1))] = NamespaceIndex(
                int(match.group(1)), name, bool(valid), int(size)
            )
    return found


def ensure_namespace_index(namespace_id: int, min_chunks: int | None = None) -> str:
    """Build the namespace's index if it has enough chunks and no valid index yet. Returns what
    happened: "exists", "built", "rebuilt" (an invalid leftover was replaced), "too-small", or
    "busy" (another process is building it right now)."""
    if min_chunks is None:
        from kb.conf import kb_settings

        min_chunks = kb_settings().vector_index_min_chunks
    namespace_id = int(namespace_id)
    existing = namespace_indexes().get(namespace_id)
    if existing is not None and existing.valid:
        return "exists"
    if existing is None and _embedded_chunk_count(namespace_id, min_chunks) < min_chunks:
        return "too-small"
    if not _try_lock(namespace_id):
        return "busy"
    try:
        existing = namespace_indexes().get(
            namespace_id
        )  # another process may have built it meanwhile
        if existing is not None and existing.valid:
            return "exists"
        name = index_name(namespace_id)
        try:
            with _ddl_block():
                if connection.in_atomic_block:
                    # DDL refuses to run while deferred FK checks are pending
                    connection.check_constraints()
                if existing is not None:
                    drop_namespace_index(namespace_id)
                raise_build_memory(build_memory_mb(_chunk_count(namespace_id)))
                _execute(
                    f"CREATE INDEX {_concurrently()} IF NOT EXISTS {name} ON kb_chunk "
                    f"USING hnsw (embedding vector_cosine_ops) "
                    f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                    f"WHERE namespace_id = {namespace_id}"
                )
        finally:
            _execute("RESET maintenance_work_mem")
    finally:
        _execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_CLASS, namespace_id])
    logger.info("built vector index %s", name)
    return "rebuilt" if existing is not None else "built"


def drop_namespace_index(namespace_id: int) -> None:
    _execute(f"DROP INDEX {_concurrently()} IF EXISTS {index_name(namespace_id)}")


def drop_orphaned_indexes(live_namespace_ids: set[int]) -> list[str]:
    """Drop indexes whose namespace no longer exists (a deletion whose drop did not run)."""
    dropped = []
    for namespace_id, index in namespace_indexes().items():
        if namespace_id not in live_namespace_ids:
            drop_namespace_index(namespace_id)
            dropped.append(index.name)
    return dropped


def build_memory_mb(chunks: int) -> int:
    """maintenance_work_mem for building a graph of `chunks` vectors in memory (a graph that
    outgrows it is finished on disk, several times slower): the vectors and their neighbour
    lists with a fifth to spare, at least BUILD_MEMORY_MIN_MB, at most
    KB_VECTOR_INDEX_BUILD_MEMORY_MB."""
    from kb.conf import kb_settings

    conf = kb_settings()
    needed = chunks * (conf.embedding_dim * 4 + GRAPH_BYTES_PER_CHUNK) * 1.2 / (1024 * 1024)
    return int(min(conf.vector_index_build_memory_mb, max(BUILD_MEMORY_MIN_MB, needed)))


def raise_build_memory(megabytes: int) -> None:
    """Raise this session's maintenance_work_mem to `megabytes` for a build, never below the
    server's own value (RESET afterwards). Bytes travel as bigint: 2 GB and more overflow int."""
    _execute(
        "SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting("
        "'maintenance_work_mem')), %s::bigint) / 1024 || 'kB', false)",
        [int(megabytes) * 1024 * 1024],
    )


def _chunk_count(namespace_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce((SELECT chunk_count FROM kb_namespace_stats WHERE namespace_id = "
            "%s), 0)",
            [int(namespace_id)],
        )
        return int(cursor.fetchone()[0])


def _embedded_chunk_count(namespace_id: int, cap: int) -> int:
    """Chunks with an embedding, counted up to `cap` (enough to compare with the threshold)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT 1 FROM kb_chunk WHERE namespace_id = %s AND embedding IS "
            "NOT NULL LIMIT %s) s",
            [namespace_id, cap],
        )
        return int(cursor.fetchone()[0])


def _ddl_block():
    """Inside a transaction (a migration, a test) the DDL runs in a savepoint, so a failed build
    rolls back alone instead of aborting the caller's transaction."""
    return transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()


def _concurrently() -> str:
    """CONCURRENTLY keeps searches and writes going during a build or drop, but cannot run in a
    transaction block (a migration or a test); there the plain form is used."""
    return "" if connection.in_atomic_block else "CONCURRENTLY"


def _execute(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _try_lock(namespace_id: int) -> bool:
    """A session advisory lock, so two runs ending together build one index, not two. Never
    waited for: a waiting session would hold a snapshot the concurrent build must wait out."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_CLASS, namespace_id])
        return bool(cursor.fetchone()[0])


def drop_after_commit(namespace_id: int) -> None:
    """Drop the index once the namespace's deletion has committed (a concurrent drop cannot run
    inside the deleting transaction, and a rolled-back deletion must keep its index)."""
    transaction.on_commit(lambda: drop_namespace_index(namespace_id))


def index_report() -> list[dict]:
    """Each namespace with its embedded chunk count and its index (name, valid, size), if any."""
    indexes = namespace_indexes()
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT n.id, n.slug, count(c.id) FILTER (WHERE c.embedding IS NOT NULL)
               FROM kb_namespace n LEFT JOIN kb_chunk c ON c.namespace_id = n.id
               GROUP BY n.id, n.slug ORDER BY n.slug"""
        )
        rows = cursor.fetchall()
    return [
        {
            "namespace_id": nid,
            "namespace": slug,
            "embedded_chunks": int(count),
            "index": indexes.get(nid),
        }
        for nid, slug, count in rows
    ]


def ensure_all() -> dict[str, str]:
    """Bring every namespace's index in line with the threshold and drop orphans: what an
    operator runs after changing KB_VECTOR_INDEX_MIN_CHUNKS. Returns an outcome per namespace."""
    report = index_report()
    outcomes = {row["namespace"]: ensure_namespace_index(row["namespace_id"]) for row in report}
    for name in drop_orphaned_indexes({row["namespace_id"] for row in report}):
        outcomes[name] = "dropped (orphaned)"
    return outcomes
