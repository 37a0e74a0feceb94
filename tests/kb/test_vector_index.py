"""Per-namespace HNSW indexes (retrieval/vector_index.py) against real PostgreSQL: built by the
ingest
run once a namespace is large enough, used by the vector channel, scoped to their namespace,
repaired when invalid, dropped with their namespace."""

from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from config import embedded_auth
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import Namespace, Source
from retrieval import channels as ch
from retrieval import vector_index
from retrieval.scope import Scope
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db

SMALL = {"tiny": ("Tiny note", "A pumpkin soup note in another tenant.")}


@pytest.fixture
def threshold_of_three(settings):
    settings.KB_VECTOR_INDEX_MIN_CHUNKS = 3
    kb_settings.cache_clear()
    yield
    kb_settings.cache_clear()


def index_definition(namespace_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s",
            [vector_index.index_name(namespace_id)],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def vector_search(namespace, query, planner_setting, k=10):
    """The vector channel's rows under a planner setting, and the plan of the statement it ran."""
    vector = get_embedder().embed_query(query)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL {planner_setting} = off")
        with CaptureQueriesContext(connection) as captured:
            rows = ch.vector_channel(Scope(namespace.id), vector, k)
        statement = next(
            q["sql"] for q in captured.captured_queries if "ORDER BY c.embedding" in q["sql"]
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('hnsw.ef_search', '40', true)")
            cursor.execute("EXPLAIN " + statement)
            plan = "\n".join(r[0] for r in cursor.fetchall())
    return rows, plan


def delete_namespace(namespace_id):
    """As a curator does it: the sources (and with them documents and chunks), then the
    namespace."""
    Source.objects.filter(namespace_id=namespace_id).delete()
    Namespace.objects.filter(pk=namespace_id).delete()


def test_ingest_builds_an_index_for_a_large_namespace_only(threshold_of_three):
    large, _ = ingest("tenant:a", CORPUS)
    small, _ = ingest("tenant:b", SMALL)
    definition = index_definition(large.id)
    assert "USING hnsw (embedding vector_cosine_ops)" in definition
    assert f"WHERE (namespace_id = {large.id})" in definition
    assert index_definition(small.id) is None
    assert vector_index.ensure_namespace_index(small.id) == "too-small"
    assert vector_index.ensure_namespace_index(large.id) == "exists"


@pytest.mark.django_db(transaction=True)
def test_vector_channel_walks_the_namespace_index_and_never_leaves_its_namespace(
    threshold_of_three,
):
    """Committed, as in production: the run builds the index CONCURRENTLY, and an index built in
    the transaction that wrote the rows could be unusable to that transaction (indcheckxmin)."""
    large, _ = ingest("tenant:a", CORPUS)
    other, _ = ingest(
        "tenant:b", {"soup": ("Pumpkin soup", "Roast the pumpkin, then blend it with stock.")}
    )
    # six rows are cheaper to sort than to walk: one setting forces each plan
    exact, exact_plan = vector_search(large, "how do I cook pumpkin soup", "enable_indexscan")
    walked, walked_plan = vector_search(large, "how do I cook pumpkin soup", "enable_sort")
    assert vector_index.index_name(large.id) not in exact_plan
    assert f"Index Scan using {vector_index.index_name(large.id)}" in walked_plan
    assert [r.chunk_id for r in walked] == [r.chunk_id for r in exact]
    foreign = set(other.documents.values_list("chunks__id", flat=True))
    assert walked and not foreign & {r.chunk_id for r in walked}
    delete_namespace(large.id)  # in autocommit: the index is dropped CONCURRENTLY right away
    assert index_definition(large.id) is None


@pytest.mark.django_db(
    transaction=True
)  # committed, so the superuser's own connection sees the index
def test_an_invalid_leftover_index_is_rebuilt(threshold_of_three):
    namespace, _ = ingest("tenant:a", CORPUS)
    pgdata = connection.settings_dict.get("EMBEDDED_PGDATA")
    if not pgdata:
        pytest.skip(
            "marking an index invalid needs the server's superuser, whose password only the "
            "embedded server's credentials file holds"
        )
    params = connection.get_connection_params()
    superuser = embedded_auth.conninfo(
        params["host"],
        params["port"],
        Path(pgdata),
        connection.settings_dict["NAME"],
        superuser=True,
    )
    with psycopg.connect(superuser, autocommit=True) as admin:
        # what a failed CREATE INDEX CONCURRENTLY leaves behind
        admin.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass",
            [vector_index.index_name(namespace.id)],
        )
    assert vector_index.namespace_indexes()[namespace.id].valid is False
    assert vector_index.ensure_namespace_index(namespace.id) == "rebuilt"
    assert vector_index.namespace_indexes()[namespace.id].valid is True


def test_deleting_a_namespace_drops_its_index_after_commit(
    threshold_of_three, django_capture_on_commit_callbacks
):
    namespace, _ = ingest("tenant:a", CORPUS)
    namespace_id = namespace.id
    with django_capture_on_commit_callbacks(execute=True):
        delete_namespace(namespace_id)
    assert index_definition(namespace_id) is None


def test_ensure_all_builds_missing_indexes_and_drops_orphans(threshold_of_three, settings):
    settings.KB_VECTOR_INDEX_MIN_CHUNKS = 1000
    kb_settings.cache_clear()
    kept, _ = ingest("tenant:a", CORPUS)
    gone, _ = ingest("tenant:b", CORPUS)
    assert index_definition(kept.id) is None  # under the threshold at ingest time
    settings.KB_VECTOR_INDEX_MIN_CHUNKS = 3  # an operator lowers the threshold
    kb_settings.cache_clear()
    assert vector_index.ensure_namespace_index(gone.id) == "built"
    gone_id = gone.id
    delete_namespace(gone_id)  # its drop waits for a commit that never comes here
    assert index_definition(gone_id) is not None
    outcomes = vector_index.ensure_all()
    assert outcomes["tenant:a"] == "built"
    assert outcomes[vector_index.index_name(gone_id)] == "dropped (orphaned)"
    assert index_definition(kept.id) is not None and index_definition(gone_id) is None


def test_command_lists_each_namespace_and_its_index(threshold_of_three, capsys):
    large, _ = ingest("tenant:a", CORPUS)
    ingest("tenant:b", SMALL)
    call_command("kb_vector_indexes")
    out = capsys.readouterr().out
    assert (
        f"tenant:a: {len(CORPUS)} embedded chunks; {vector_index.index_name(large.id)}, valid"
        in out
    )
    assert "tenant:b: 1 embedded chunks; no index (exact scan)" in out


def test_the_build_memory_fits_the_graph_between_its_floor_and_its_cap():
    from retrieval.vector_index import BUILD_MEMORY_MIN_MB, build_memory_mb

    assert build_memory_mb(10_000) == BUILD_MEMORY_MIN_MB
    million = build_memory_mb(1_000_000)  # 1M × (384 × 4 B + 1 KB) × 1.2
    assert (
        2900 < million < 3000 and million * 1024 * 1024 > 1_000_000 * 384 * 4
    )  # the 1.5 GB of vectors fit
    assert build_memory_mb(10_000_000) == 4096


def test_build_memory_of_several_gigabytes_is_set_for_the_session(db):
    from django.db import connection

    from retrieval.vector_index import raise_build_memory

    raise_build_memory(3000)  # past 2 GB: a bigint, not an int
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_size_bytes(current_setting('maintenance_work_mem'))")
            assert cursor.fetchone()[0] == 3000 * 1024 * 1024
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET maintenance_work_mem")
