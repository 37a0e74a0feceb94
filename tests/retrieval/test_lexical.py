"""The lexical channel's two reads against real PostgreSQL: the namespace's packed posting lists
(retrieval/posting_lists.py) and the postings table must give the same BM25 top k, before and after
inserts, updates and deletes, in every scope."""

import random

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from kb.models import Chunk, Document
from retrieval import lexical, posting_lists, query_words, term_counts
from retrieval.scope import Scope
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db

# a common word ("pumpkin", in 26 of 30 documents) beside rare ones
NOTES = {
    f"note{i}": (
        f"Pumpkin note {i}",
        f"Pumpkin harvest log {i}: the pumpkin patch yielded {i} pumpkins"
        + (" and the soup used nutmeg" if i % 7 == 0 else "")
        + ".",
    )
    for i in range(24)
}
QUERIES = [
    "pumpkin soup with nutmeg",
    "pumpkin harvest",
    "roast pumpkin cream",
    "qwen model pumpkin",
    "nutmeg",
    "pumpkin",
    "no such words here",
]


@pytest.fixture
def corpus_namespace():
    return "tenant:lexical"


@pytest.fixture
def corpus_documents():
    return {**CORPUS, **NOTES}


@pytest.fixture
def scope(corpus):
    return Scope(corpus.id)


def both_reads(scope, query, k):
    """(packed, table) results of one query; the document frequencies counted afresh for each."""
    lexemes = query_words.query_lexemes(query)
    term_counts.DOCUMENT_FREQUENCIES.clear()
    packed = lexical.lexical_search(scope, lexemes, k)
    term_counts.DOCUMENT_FREQUENCIES.clear()
    table = lexical.lexical_search(scope, lexemes, k, packed=False)
    return packed, table


def assert_same(packed, table, context=""):
    assert [r.chunk_id for r in packed.rows] == [r.chunk_id for r in table.rows], context
    assert [r.raw for r in packed.rows] == pytest.approx([r.raw for r in table.rows], rel=1e-9), (
        context
    )


def table_frequency(namespace_id, lexeme):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM kb_chunk_term WHERE namespace_id = %s AND lexeme = %s",
            [namespace_id, lexeme],
        )
        return cursor.fetchone()[0]


def test_without_lists_the_table_is_read(scope):
    result = lexical.lexical_search(
        scope, query_words.query_lexemes("pumpkin soup with nutmeg"), 10
    )
    assert result.report.mode == "table" and result.rows
    assert posting_lists.read(scope.namespace_id, ["pumpkin"]) is None


@pytest.mark.parametrize("k", [1, 3, 10, 100])
def test_packed_lists_give_the_tables_top_k(scope, k):
    assert posting_lists.build(scope.namespace_id) == "built"
    for query in QUERIES:
        packed, table = both_reads(scope, query, k)
        assert table.report.mode == "table"
        assert packed.report.mode == (
            "packed" if packed.report.terms else "table"
        )  # no known word: nothing read
        assert_same(packed, table, query)
        assert (
            packed.report.postings_read == table.report.postings_read
        )  # every posting of every term
        assert packed.report.changed_chunks == 0


def test_a_common_term_is_only_looked_up_where_it_could_lift_a_chunk_into_the_top_k(scope):
    posting_lists.build(scope.namespace_id)
    packed, table = both_reads(scope, "nutmeg pumpkin", 3)
    assert_same(packed, table)
    # three nutmeg notes outscore any chunk "pumpkin" alone matches: pumpkin's postings are not
    # scored, only looked up for the chunks nutmeg found that could still reach the top 3
    assert packed.report.terms == ("nutmeg", "pumpkin") and packed.report.probed_terms == (
        "pumpkin",
    )
    nutmeg = (
        lexical.term_statistics(scope, query_words.query_lexemes("nutmeg"))
        .terms[0]
        .document_frequency
    )
    assert 3 <= packed.report.candidates <= nutmeg
    # fifty results need the chunks only pumpkin matches: every term is scored
    packed, table = both_reads(scope, "nutmeg pumpkin", 50)
    assert_same(packed, table)
    assert packed.report.probed_terms == () and packed.report.candidates == 0


def test_the_lists_stay_exact_under_inserts_updates_and_deletes(scope):
    posting_lists.build(scope.namespace_id)
    # insert: a new document's chunks are newer than the lists
    ingest(
        "tenant:lexical",
        {"late": ("Late pumpkin", "A late pumpkin soup with nutmeg and more nutmeg.")},
        source_name="late",
    )
    late = Chunk.objects.get(document__ref="late")
    packed, table = both_reads(scope, "pumpkin soup with nutmeg", 10)
    assert_same(packed, table)
    assert late.pk in [r.chunk_id for r in packed.rows]
    # frequencies from the lists plus the newer chunks, as the table counts them
    statistics = lexical.term_statistics(scope, query_words.query_lexemes("nutmeg"))
    assert statistics.terms[0].document_frequency == table_frequency(scope.namespace_id, "nutmeg")
    # update: a chunk the lists hold gets other words; its packed postings must not count
    note = Chunk.objects.get(document__ref="note14")
    Chunk.objects.filter(pk=note.pk).update(
        text="Nutmeg nutmeg nutmeg, nothing else grew this year."
    )
    # delete: a document the lists hold goes
    Document.objects.filter(ref="note7").delete()
    for query in QUERIES + ["nothing else grew"]:
        for k in (1, 5, 50):
            packed, table = both_reads(scope, query, k)
            assert packed.report.mode == ("packed" if packed.report.terms else "table")
            assert_same(packed, table, (query, k))
    packed, _ = both_reads(scope, "nutmeg", 50)
    assert packed.report.changed_chunks == 2  # the updated chunk and the deleted one
    ids = [r.chunk_id for r in packed.rows]
    assert ids[0] == note.pk and not Chunk.objects.filter(document__ref="note7").exists()
    # with changes recorded, frequencies are counted from the table again
    statistics = lexical.term_statistics(scope, query_words.query_lexemes("nutmeg pumpkin"))
    assert {t.lexeme: t.document_frequency for t in statistics.terms} == {
        lexeme: table_frequency(scope.namespace_id, lexeme) for lexeme in ("nutmeg", "pumpkin")
    }
    # a rebuild absorbs the changes
    assert posting_lists.build(scope.namespace_id) == "built"
    packed, table = both_reads(scope, "nutmeg", 50)
    assert packed.report.changed_chunks == 0
    assert_same(packed, table)


def test_the_lists_keep_the_scope(scope):
    posting_lists.build(scope.namespace_id)
    lexemes = query_words.query_lexemes("pumpkin soup with nutmeg")
    for ref in ("note7", "note8", "pumpkin"):
        chunk = Chunk.objects.get(document__ref=ref)
        scoped = Scope(scope.namespace_id, document_ids=(chunk.document_id,))
        assert [r.chunk_id for r in lexical.lexical_search(scoped, lexemes, 10).rows] == [chunk.pk]


def test_a_scope_is_checked_in_growing_batches_until_k_are_found(scope, monkeypatch):
    monkeypatch.setattr(lexical, "FIRST_SCOPE_BATCH", 1)  # one chunk first, then 16, then 256
    posting_lists.build(scope.namespace_id)
    _, late_source = ingest(
        "tenant:lexical",
        {f"late{i}": (f"Late {i}", f"Late pumpkin {i} with nutmeg.") for i in range(20)},
        source_name="late",
    )
    scoped = Scope(scope.namespace_id, source_ids=(late_source.id,))
    for query in ("pumpkin", "pumpkin harvest", "nutmeg soup"):
        for k in (1, 3, 30):
            packed, table = both_reads(scoped, query, k)
            assert_same(packed, table, (query, k))
            assert {Chunk.objects.get(pk=r.chunk_id).document.source_id for r in packed.rows} <= {
                late_source.id
            }


def test_lists_and_table_agree_on_random_queries_depths_and_writes():
    rng = random.Random(18)
    words = [f"w{i}" for i in range(40)]
    zipf = [
        1 / (rank + 1) for rank in range(len(words))
    ]  # a few very common words, a long rare tail

    def texts(prefix, count):
        return {
            f"{prefix}{d}": (
                f"Doc {d}",
                " ".join(rng.choices(words, zipf, k=rng.randint(3, 40))) + ".",
            )
            for d in range(count)
        }

    namespace, _ = ingest("tenant:lexical-random", texts("doc", 120))
    scope = Scope(namespace.id)
    posting_lists.build(namespace.id)
    probed = 0
    for round_ in range(4):
        for _ in range(40):
            query = " ".join(rng.choices(words, zipf, k=rng.randint(1, 6)))
            k = rng.choice([1, 5, 20, 60, 200])
            packed, table = both_reads(scope, query, k)
            assert packed.report.mode == ("packed" if packed.report.terms else "table")
            assert_same(packed, table, (round_, query, k))
            probed += bool(packed.report.probed_terms)
        # writes between rounds: new documents, rewritten chunks, deleted documents
        ingest("tenant:lexical-random", texts(f"r{round_}-", 10), source_name=f"round {round_}")
        for chunk in rng.sample(list(Chunk.objects.filter(namespace=namespace)), 8):
            Chunk.objects.filter(pk=chunk.pk).update(
                text=" ".join(rng.choices(words, zipf, k=rng.randint(3, 30)))
            )
        Document.objects.filter(
            pk__in=[d.pk for d in rng.sample(list(Document.objects.filter(namespace=namespace)), 5)]
        ).delete()
    assert probed >= 20  # the common terms were only looked up on many of the queries


def test_ensure_builds_at_the_threshold_and_an_ingest_run_rebuilds_after_a_tenth_changed(scope):
    chunks = Chunk.objects.filter(namespace_id=scope.namespace_id).count()
    assert posting_lists.ensure(scope.namespace_id, min_chunks=chunks + 1) == "too-small"
    assert posting_lists.state(scope.namespace_id) is None
    assert posting_lists.ensure(scope.namespace_id, min_chunks=chunks) == "built"
    built = posting_lists.state(scope.namespace_id)
    assert (
        built.chunk_count == chunks
        and built.postings > 0
        and built.changed_since == built.newer == 0
    )
    Document.objects.filter(ref="note3").delete()
    assert posting_lists.ensure(scope.namespace_id, min_chunks=1) == "current"  # 1 of 30 changed
    ingest(
        "tenant:lexical", {"a": ("A", "Alpha pumpkin.")}, source_name="more"
    )  # 2 of 30: the run keeps them
    assert posting_lists.state(scope.namespace_id) == posting_lists.BuildState(
        scope.namespace_id, chunks, built.postings, built.build_seconds, changed_since=1, newer=1
    )
    ingest(
        "tenant:lexical", {"b": ("B", "Beta pumpkin.")}, source_name="more"
    )  # 3 of 30: the run rebuilds
    rebuilt = posting_lists.state(scope.namespace_id)
    assert rebuilt.changed_since == rebuilt.newer == 0 and rebuilt.chunk_count == chunks + 1


def test_a_build_holds_each_chunks_length_once_and_each_terms_shortest(scope):
    posting_lists.build(scope.namespace_id)
    read = posting_lists.read(scope.namespace_id, ["pumpkin", "nutmeg", "soup"])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT chunk_id, doc_len FROM kb_chunk_term WHERE namespace_id = %s",
            [scope.namespace_id],
        )
        lengths = dict(cursor.fetchall())
    assert len(read.packed) == 3
    for term in read.packed:
        offsets = term.chunk_ids.astype(np.int64)
        assert term.lengths_at().tolist() == [lengths[term.base + o] for o in offsets.tolist()]
        assert term.min_length == min(lengths[term.base + o] for o in offsets.tolist())


def test_a_process_reads_a_builds_lengths_once_and_a_rebuilds_afresh(scope):
    posting_lists.build(scope.namespace_id)
    first = posting_lists.read(scope.namespace_id, ["pumpkin", "nutmeg"])
    again = posting_lists.read(scope.namespace_id, ["nutmeg"])
    assert again.packed[0].length_of is first.packed[0].length_of  # kept, not sent again
    Chunk.objects.filter(document__ref="note14").update(text="Nutmeg, nothing else grew this year.")
    assert posting_lists.build(scope.namespace_id) == "built"
    rebuilt = posting_lists.read(scope.namespace_id, ["nutmeg"])
    assert rebuilt.packed[0].length_of is not first.packed[0].length_of
    note = Chunk.objects.get(document__ref="note14")
    with connection.cursor() as cursor:
        cursor.execute("SELECT doc_len FROM kb_chunk_term WHERE chunk_id = %s LIMIT 1", [note.pk])
        assert rebuilt.packed[0].length_of[note.pk - rebuilt.packed[0].base] == cursor.fetchone()[0]
    packed, table = both_reads(scope, "nutmeg", 50)
    assert_same(packed, table)


def test_the_lengths_kept_stay_within_their_bound():
    kept = posting_lists._LengthsCache(max_bytes=1000)
    kept.put(1, "a", np.zeros(100, np.float32))  # 400 bytes
    kept.put(2, "b", np.zeros(100, np.float32))
    assert kept.get(1)[0] == "a"  # used: now the most recent
    kept.put(3, "c", np.zeros(100, np.float32))  # 1,200 bytes: the least recently used goes
    assert kept.get(2) is None and kept.get(1)[0] == "a" and kept.get(3)[0] == "c"
    kept.put(3, "c2", np.zeros(100, np.float32))  # a rebuild's array replaces the namespace's
    assert kept.get(3)[0] == "c2" and kept.get(1)[0] == "a"
    kept.put(4, "d", np.zeros(300, np.float32))  # larger than the bound: used once, never kept
    assert kept.get(4) is None and kept.get(3)[0] == "c2"


@pytest.mark.parametrize("limit", ["spread", "span"])
def test_a_namespace_whose_chunks_lie_among_many_others_is_read_from_the_table(
    scope, monkeypatch, limit, capsys
):
    if limit == "spread":  # more than SPREAD ids a chunk
        monkeypatch.setattr(posting_lists, "SPREAD", 2)
        monkeypatch.setattr(posting_lists, "MIN_SPREAD", 0)
    assert posting_lists.build(scope.namespace_id) == "built"
    chunks = Chunk.objects.filter(namespace_id=scope.namespace_id).count()
    ingest(
        "tenant:other", {f"o{i}": (f"Other {i}", f"Other words {i}.") for i in range(2 * chunks)}
    )
    ingest("tenant:lexical", {"late": ("Late pumpkin", "A late pumpkin soup.")}, source_name="late")
    if limit == "span":  # more ids than the kept arrays may hold
        monkeypatch.setattr(posting_lists, "_MAX_SPAN", 2 * chunks)
    assert (
        posting_lists.build(scope.namespace_id) == "too-wide"
    )  # its ids now span over twice its chunks
    assert posting_lists.read(scope.namespace_id, ["pumpkin"]) is None
    call_command("kb_posting_lists")  # and the listing says why
    assert (
        f"tenant:lexical: no posting lists (read from the postings table; its {chunks + 1} "
        "chunks span" in (capsys.readouterr().out)
    )
    result = lexical.lexical_search(scope, query_words.query_lexemes("pumpkin soup"), 10)
    assert result.report.mode == "table" and result.rows


def test_a_deleted_namespace_takes_its_lists_along(scope):
    from tests.kb.test_vector_index import delete_namespace

    posting_lists.build(scope.namespace_id)
    delete_namespace(scope.namespace_id)
    with connection.cursor() as cursor:
        for table in ("kb_posting_list", "kb_posting_list_changed", "kb_posting_list_build"):
            cursor.execute(
                f"SELECT count(*) FROM {table} WHERE namespace_id = %s", [scope.namespace_id]
            )
            assert cursor.fetchone()[0] == 0, table


def test_the_command_lists_ensures_and_rebuilds_the_lists(scope, capsys):
    from django.core.management.base import CommandError

    call_command("kb_posting_lists")
    assert (
        "tenant:lexical: no posting lists (read from the postings table)" in capsys.readouterr().out
    )
    call_command("kb_posting_lists", rebuild="tenant:lexical")
    out = capsys.readouterr().out
    assert (
        "tenant:lexical: built" in out
        and "tenant:lexical: 30 chunks" in out
        and "0 changed, 0 added" in out
    )
    Document.objects.filter(ref="note5").delete()
    call_command("kb_posting_lists", ensure=True)
    out = capsys.readouterr().out
    assert "tenant:lexical: current" in out and "1 changed, 0 added" in out
    with pytest.raises(CommandError):
        call_command("kb_posting_lists", rebuild="tenant:nobody")


@pytest.mark.django_db(transaction=True)
def test_a_write_that_waits_for_a_build_is_recorded_after_it():
    """A build holds the namespace's statistics row; a delete that starts while the build runs
    waits for it, and is recorded as a change the moment it goes on, so the lists never count
    the deleted chunk, though their snapshot still held it."""
    import threading
    import time

    from django.db import connections, transaction

    namespace, _ = ingest("tenant:lexical-race", {**CORPUS, **NOTES})
    scope = Scope(namespace.id)
    doomed = Chunk.objects.get(namespace=namespace, document__ref="note14")
    deleted = threading.Event()

    def delete_during_the_build():
        try:
            Document.objects.filter(
                pk=doomed.document_id
            ).delete()  # blocks until the build commits
            deleted.set()
        finally:
            connections.close_all()

    with transaction.atomic():
        assert posting_lists.build(namespace.id) == "built"
        writer = threading.Thread(target=delete_during_the_build)
        writer.start()
        time.sleep(1.0)
        assert not deleted.is_set()  # the writer waits for the build's lock
    writer.join(timeout=30)
    assert deleted.is_set()
    assert posting_lists.state(namespace.id).changed_since == 1
    for query in ("pumpkin harvest", "pumpkin soup with nutmeg"):
        packed, table = both_reads(scope, query, 50)
        assert packed.report.mode == "packed" and packed.report.changed_chunks == 1
        assert_same(packed, table, query)
        assert doomed.pk not in [r.chunk_id for r in packed.rows]
