"""Candidate channels against real PostgreSQL, and BM25 statistics under re-ingest and deletion."""

import dataclasses
import math

import numpy as np
import pytest
from django.db import connection, transaction

from kb.models import Chunk, Document
from retrieval import bm25, lexical, passage_rows, query_words, term_counts
from retrieval import channels as ch
from retrieval.query import analyse
from retrieval.scope import Scope
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


def scope(namespace, **kwargs):
    return Scope(namespace.id, **kwargs)


def refs(rows):
    return [Chunk.objects.get(pk=row.chunk_id).document.ref for row in rows]


def test_vector_channel_orders_by_cosine(corpus):
    from kb.embedding.embedders import get_embedder

    rows = ch.vector_channel(
        scope(corpus), get_embedder().embed_query("how do I cook pumpkin soup"), 3
    )
    assert refs(rows)[0] == "pumpkin"
    assert all(a.raw >= b.raw for a, b in zip(rows, rows[1:], strict=False))
    assert 0 < rows[0].raw <= 1


def test_vector_channel_skips_chunks_without_embeddings(corpus):
    from kb.embedding.embedders import get_embedder

    Chunk.objects.filter(document__ref="pumpkin").update(embedding=None)
    rows = ch.vector_channel(scope(corpus), get_embedder().embed_query("pumpkin soup"), 10)
    assert "pumpkin" not in refs(rows) and len(rows) == len(CORPUS) - 1


def test_lexical_channel_is_bm25_over_or_of_lexemes(corpus):
    lexemes = query_words.query_lexemes("roast pumpkins in the garden")
    assert [lexeme for lexeme, _ in lexemes] == ["roast", "pumpkin", "garden"]
    rows = lexical.lexical_channel(scope(corpus), lexemes, 10)
    # OR semantics: documents with any lexeme match; "roast" is rarer than "pumpkin" (IDF)
    assert refs(rows) == ["pumpkin", "garden"]
    assert rows[0].raw > rows[1].raw > 0


@pytest.mark.parametrize(
    "query",
    ["the and of", "!!! ((( &&& ||| :* <->", "'\\' \" ;--", ""],
    ids=["stopwords", "tsquery-syntax", "sql-quotes", "empty"],
)
def test_queries_with_no_lexemes_return_nothing_and_never_error(corpus, query):
    lexemes = query_words.query_lexemes(query)
    assert lexical.lexical_channel(scope(corpus), lexemes, 10) == []


def test_very_long_query_is_capped_and_still_works(corpus):
    query = " ".join(f"word{i}" for i in range(3000)) + " pumpkin"
    lexemes = query_words.query_lexemes(query)
    assert len(lexemes) == query_words.MAX_QUERY_LEXEMES
    lexical.lexical_channel(scope(corpus), lexemes, 10)


def test_dotted_tokens_stay_whole(corpus):
    lexemes = [lexeme for lexeme, _ in query_words.query_lexemes("compile llama.cpp for Qwen 3.8")]
    assert "llama.cpp" in lexemes and "3.8" in lexemes
    rows = lexical.lexical_channel(scope(corpus), query_words.query_lexemes("llama.cpp"), 10)
    assert refs(rows) == ["llama"]


def test_names_channel_finds_versioned_names(corpus):
    features = analyse("What is new in Qwen 3.8?")
    assert features.name_keys == ("qwen38",)
    rows = ch.names_channel(scope(corpus), features.name_keys)
    assert refs(rows) == ["qwen38"]  # not Qwen 2.5, though its text says "Qwen" too
    assert 0 < rows[0].raw <= 1


def _names_read_whole(scope_, keys, cap=10):
    """The names channel without its bound: every matching name read with its first chunk."""
    where, params = scope_.where("c")
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT DISTINCT ON (d.id) c.id, d.name_key FROM kb_document d
                           JOIN kb_chunk c ON c.document_id = d.id
                           WHERE d.name_key LIKE ANY(%s) AND {where} ORDER BY d.id, c.position""",
            [[f"%{key}%" for key in keys], *params],
        )
        rows = [
            (chunk_id, max(len(k) / len(name) for k in keys if k in name))
            for chunk_id, name in cursor
        ]
    return sorted(rows, key=lambda r: (-r[1], r[0]))[:cap]


def test_names_channel_reads_only_the_best_names_and_keeps_the_full_reads_order(corpus):
    """With ties across the cap and two keys, the bounded read returns the full read's rows."""
    titles = {
        f"n{i}": (f"Qwen 3.8 {'notes ' * (i % 4)}part {i}", f"Qwen text {i}.") for i in range(14)
    }
    titles.update({f"m{i}": (f"Llama 4.1 {'x' * i}", f"Llama text {i}.") for i in range(5)})
    _, other = ingest("tenant:a", titles, source_name="names")
    for keys, kwargs in (
        (("qwen38",), {}),
        (("qwen38", "llama41"), {}),
        (("qwen38", "llama41"), {"cap": 3}),
        (("qwen38",), {"source_ids": (other.id,)}),
    ):
        cap = kwargs.pop("cap", 10)
        found = ch.names_channel(scope(corpus, **kwargs), keys, cap)
        assert [(r.chunk_id, r.raw) for r in found] == _names_read_whole(
            scope(corpus, **kwargs), keys, cap
        )
        assert len(found) == cap


REWRITES_TO_LIE_LAST = 500  # each a few hundred bytes: enough to fill what free pages the table has


def test_names_tied_across_the_cap_are_broken_by_first_chunk_not_by_where_the_row_lies(corpus):
    """Twelve names of one length tie; the document with the lowest chunk ids is rewritten, so the
    index hands it over last: it still comes first."""
    _, source = ingest(
        "tenant:a",
        {f"t{i}": (f"Phi 3.5 part {i}", f"Phi text {i}.") for i in range(10, 22)},
        source_name="ties",
    )
    first = Document.objects.filter(source=source).order_by("id").first()
    with connection.cursor() as cursor:
        # a new version goes where the free space map finds room, which can be an earlier page that
        # earlier tests' rolled-back rows left free: rewritten until it lies after the others
        for _ in range(REWRITES_TO_LIE_LAST):
            cursor.execute("UPDATE kb_document SET metadata = metadata WHERE id = %s", [first.id])
            cursor.execute(
                "SELECT id FROM kb_document WHERE source_id = %s ORDER BY ctid", [source.id]
            )
            if [row[0] for row in cursor][-1] == first.id:
                break
        cursor.execute("SELECT id FROM kb_document WHERE source_id = %s ORDER BY ctid", [source.id])
        assert [row[0] for row in cursor][-1] == first.id  # the premise: its row now lies last
    found = ch.names_channel(scope(corpus), ("phi35",), 3)
    assert [(r.chunk_id, r.raw) for r in found] == _names_read_whole(scope(corpus), ("phi35",), 3)
    assert refs(found)[0] == first.ref


def test_a_name_key_in_too_many_names_is_left_out_and_said(corpus, monkeypatch):
    ingest(
        "tenant:a",
        {f"g{i}": (f"Gemma 2.5 guide {i}", f"Gemma text {i}.") for i in range(4)},
        source_name="g",
    )
    monkeypatch.setattr(ch, "NAMES_READ_PER_KEY", 3)
    found = ch.names_search(scope(corpus), ("gemma25", "qwen38"))
    assert found.common_keys == ("gemma25",)
    assert refs(found.rows) == ["qwen38"]
    monkeypatch.setattr(ch, "NAMES_READ_PER_KEY", 4)
    found = ch.names_search(scope(corpus), ("gemma25", "qwen38"))
    assert found.common_keys == () and len(found.rows) == 5


def test_identifier_channel_matches_exactly(corpus):
    features = analyse("why ERR_CONNECTION_REFUSED happens")
    assert features.identifiers == ("ERR_CONNECTION_REFUSED",)
    rows = ch.identifier_channel(scope(corpus), features.identifiers)
    assert refs(rows) == ["errors"]
    assert ch.identifier_channel(scope(corpus), ("ERR_CONNECTION_RESET",)) == []


def test_namespace_isolation_in_every_channel(corpus):
    from kb.embedding.embedders import get_embedder

    other, _ = ingest(
        "tenant:b", {"secret": ("Pumpkin secret", "The secret pumpkin recipe of tenant B.")}
    )
    vector = get_embedder().embed_query("pumpkin recipe")
    for rows in (
        ch.vector_channel(scope(corpus), vector, 50),
        lexical.lexical_channel(
            scope(corpus), query_words.query_lexemes("secret pumpkin recipe"), 50
        ),
        ch.names_channel(scope(corpus), ("pumpkin",)),
    ):
        assert "secret" not in refs(rows)
    foreign = list(Chunk.objects.filter(namespace=other).values_list("pk", flat=True))
    assert (
        passage_rows.hydrate(scope(corpus), foreign) == {}
        and passage_rows.candidate_rows(scope(corpus), foreign) == {}
    )
    found = ch.vector_candidates(scope(corpus), vector, 50, known_ids=foreign)
    assert not set(foreign) & (set(found.candidates) | set(found.cosines))
    assert refs(lexical.lexical_channel(scope(other), query_words.query_lexemes("secret"), 5)) == [
        "secret"
    ]


def test_vector_candidates_complete_the_rows_other_channels_found(corpus):
    """After the query embedding, one statement gives the vector channel, rows for its new hits
    and the cosine of the earlier channels' hits: the same as reading them all afterwards."""
    from kb.embedding.embedders import get_embedder

    vector = get_embedder().embed_query("pumpkin soup with cream")
    words = lexical.lexical_channel(
        scope(corpus), query_words.query_lexemes("roast pumpkins in the garden"), 10
    )
    known = [row.chunk_id for row in words]
    found = ch.vector_candidates(scope(corpus), vector, 3, known_ids=known)
    reference = passage_rows.candidate_rows(
        scope(corpus), list({*known, *(r.chunk_id for r in found.rows)})
    )
    stored = dict(Chunk.objects.filter(pk__in=known).values_list("pk", "embedding"))

    assert [r.chunk_id for r in found.rows] == [
        r.chunk_id for r in ch.vector_channel(scope(corpus), vector, 3)
    ]
    assert set(found.candidates) == {r.chunk_id for r in found.rows} - set(known)
    assert set(found.cosines) == set(known)
    for chunk_id, row in found.candidates.items():
        assert row == dataclasses.replace(reference[chunk_id], cosine=row.cosine)
        assert row.cosine == next(r.raw for r in found.rows if r.chunk_id == chunk_id)
    for chunk_id, cosine in found.cosines.items():
        embedding = np.asarray(stored[chunk_id], dtype=np.float64)
        expected = float(
            np.dot(embedding, vector) / np.linalg.norm(embedding) / np.linalg.norm(vector)
        )
        assert cosine == pytest.approx(expected, abs=1e-6)


def test_source_and_document_filters(corpus):
    _, second = ingest(
        "tenant:a", {"pie": ("Pumpkin pie", "Bake the pumpkin pie for an hour.")}, "second"
    )
    lexemes = query_words.query_lexemes("pumpkin")
    assert refs(lexical.lexical_channel(scope(corpus, source_ids=(second.id,)), lexemes, 10)) == [
        "pie"
    ]
    garden = Document.objects.get(ref="garden")
    assert refs(lexical.lexical_channel(scope(corpus, document_ids=(garden.id,)), lexemes, 10)) == [
        "garden"
    ]


def _recomputed_stats(namespace):
    """Ground truth straight from the stored tsvectors (the slow, naive way)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.id, t.lexeme, coalesce(array_length(t.positions, 1), 1)
                          FROM kb_chunk c, unnest(c.search_vector) t WHERE c.namespace_id = %s""",
            [namespace.id],
        )
        postings = {(cid, lexeme): float(tf) for cid, lexeme, tf in cursor.fetchall()}
        cursor.execute(
            "SELECT chunk_id, lexeme, tf, doc_len FROM kb_chunk_term WHERE namespace_id = %s",
            [namespace.id],
        )
        maintained = {(cid, lexeme): float(tf) for cid, lexeme, tf, _ in cursor.fetchall()}
        cursor.execute(
            "SELECT chunk_count, total_len FROM kb_namespace_stats WHERE namespace_id = %s",
            [namespace.id],
        )
        stats = cursor.fetchone() or (0, 0.0)
    lengths = {}
    for (cid, _), tf in postings.items():
        lengths[cid] = lengths.get(cid, 0) + tf
    return (
        postings,
        maintained,
        (len(lengths), sum(lengths.values())),
        (int(stats[0]), float(stats[1])),
    )


def _python_bm25(namespace, query, k1=bm25.K1, b=bm25.B):
    postings, _, (n, total), _ = _recomputed_stats(namespace)
    lengths, df = {}, {}
    for (cid, lexeme), tf in postings.items():
        lengths[cid] = lengths.get(cid, 0) + tf
        df[lexeme] = df.get(lexeme, 0) + 1
    avgdl = total / n
    scores = {}
    for lexeme, qtf in query_words.query_lexemes(query):
        if lexeme not in df:
            continue
        idf = math.log(1 + (n - df[lexeme] + 0.5) / (df[lexeme] + 0.5))
        for (cid, lex), tf in postings.items():
            if lex == lexeme:
                saturation = tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[cid] / avgdl))
                scores[cid] = scores.get(cid, 0) + qtf * idf * saturation
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def test_bm25_statistics_stay_correct_after_reingest_and_deletion(corpus):
    def check():
        postings, maintained, truth, stats = _recomputed_stats(corpus)
        assert maintained == postings
        assert stats[0] == truth[0] and stats[1] == pytest.approx(truth[1])
        for query in ("pumpkin soup", "qwen model release", "roast stock cream"):
            found = lexical.lexical_channel(scope(corpus), query_words.query_lexemes(query), 50)
            sql = [(r.chunk_id, round(r.raw, 6)) for r in found]
            python = [(cid, round(score, 6)) for cid, score in _python_bm25(corpus, query)]
            assert sql == python

    check()
    edited = dict(CORPUS)
    edited["pumpkin"] = (
        "Pumpkin soup",
        "Roast the pumpkin twice. Pumpkin soup loves pumpkin seeds.",
    )
    del edited["garden"]
    namespace, source = ingest("tenant:a", edited)
    check()  # edited document re-indexed (an UPDATE of the chunk)
    Document.objects.filter(source=source, ref="garden").delete()  # cascade deletes chunks
    check()
    Chunk.objects.filter(document__ref="errors").delete()
    check()
    source.delete()
    postings, maintained, truth, stats = _recomputed_stats(corpus)
    assert maintained == {} and stats == (0, 0.0)


def _generation(namespace):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generation FROM kb_namespace_stats WHERE namespace_id = %s", [namespace.id]
        )
        return cursor.fetchone()[0]


def test_document_frequencies_are_cached_per_generation_of_the_postings(corpus):
    words = [lexeme for lexeme, _ in query_words.query_lexemes("pumpkin soup cream")]
    lexical.lexical_channel(scope(corpus), query_words.query_lexemes("pumpkin soup cream"), 10)
    generation, cached = term_counts.DOCUMENT_FREQUENCIES.lookup(corpus.id, words)
    postings, *_ = _recomputed_stats(corpus)
    truth = {word: sum(1 for (_, lexeme) in postings if lexeme == word) for word in words}
    assert generation == _generation(corpus) and cached == truth and truth["pumpkin"] == 2

    seen = {generation}
    ingest("tenant:a", {"pie": ("Pumpkin pie", "Pumpkin pie with cream.")}, "second")  # an insert
    seen.add(_generation(corpus))
    edited = dict(CORPUS, garden=("Growing pumpkins", "Pumpkin vines need sun."))
    ingest("tenant:a", edited)  # an update
    seen.add(_generation(corpus))
    Document.objects.filter(ref="pie").delete()  # a delete
    seen.add(_generation(corpus))
    assert len(seen) == 4  # every kind of change renews the generation

    with pytest.raises(RuntimeError), transaction.atomic():
        ingest("tenant:a", {"tart": ("Pumpkin tart", "Pumpkin tart.")}, "third")
        rolled_back = _generation(corpus)
        raise RuntimeError("roll back")
    assert _generation(corpus) == max(seen) < rolled_back
    ingest("tenant:a", {"tart": ("Pumpkin tart", "Pumpkin tart, again.")}, "third")
    assert _generation(corpus) > rolled_back  # a rolled-back generation is never handed out again


def test_document_frequency_cache_keeps_one_generation_and_a_bounded_size():
    cache = bm25.DocumentFrequencyCache(max_terms=3)
    cache.store(1, 10, {"a": 1, "b": 2})
    assert cache.lookup(1, ["a", "b", "c"]) == (10, {"a": 1, "b": 2})
    cache.store(1, 10, {"c": 3})
    assert cache.lookup(1, ["a", "c"]) == (10, {"a": 1, "c": 3})
    cache.store(1, 11, {"c": 4})  # a new generation forgets the old counts
    assert cache.lookup(1, ["a", "c"]) == (11, {"c": 4})
    cache.store(1, 11, {"d": 1, "e": 1, "f": 1})  # over the bound: start afresh
    assert cache.lookup(1, ["c", "d"]) == (11, {"d": 1})
    assert cache.lookup(2, ["d"]) == (None, {})  # namespaces never share counts
    cache.store(2, 5, {"x": 7})  # the bound counts every namespace's terms
    assert cache.lookup(1, ["d"]) == (None, {}) and cache.lookup(2, ["x"]) == (5, {"x": 7})


def test_hydrate_returns_what_surfaces_need(corpus):
    from kb.embedding.embedders import get_embedder

    chunk = Chunk.objects.get(document__ref="errors")
    row = passage_rows.hydrate(scope(corpus), [chunk.pk])[chunk.pk]
    assert (row.title, row.ref, row.source_kind) == ("Connection errors", "errors", "text")
    assert row.text.startswith("Connection errors\n\n")
    candidate = passage_rows.candidate_rows(scope(corpus), [chunk.pk])[chunk.pk]
    cosine = ch.vector_candidates(
        scope(corpus), get_embedder().embed_query("connection refused"), 1, known_ids=[chunk.pk]
    ).cosines[chunk.pk]
    assert cosine is not None and 0 < cosine < 1
    from kb.names import duplicate_key

    assert candidate.text_key == duplicate_key(chunk.text)
    assert candidate.body_key == duplicate_key(chunk.text.split("\n\n", 1)[1])
