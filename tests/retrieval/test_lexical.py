"""The lexical channel's two modes against real PostgreSQL: exact BM25, and the pruned mode that
reads the rarest terms in full and the common ones only where they could change the top k."""

import pytest

from retrieval import bm25
from retrieval import channels as ch
from retrieval import lexical
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db

# a common word ("pumpkin", in 26 of 30 documents) beside rare ones
NOTES = {f"note{i}": (f"Pumpkin note {i}", f"Pumpkin harvest log {i}: the pumpkin patch yielded {i} pumpkins"
                                          + (" and the soup used nutmeg" if i % 7 == 0 else "") + ".")
         for i in range(24)}
QUERIES = ["pumpkin soup with nutmeg", "pumpkin harvest", "roast pumpkin cream", "qwen model pumpkin",
           "nutmeg", "pumpkin"]


COMPLETION_COST = lexical.COMPLETION_COST_IN_POSTINGS


@pytest.fixture(autouse=True)
def prune_whenever_the_budget_is_exceeded(monkeypatch):
    """These corpora are far too small for pruning to pay; the tests prune them all the same."""
    monkeypatch.setattr(lexical, "COMPLETION_COST_IN_POSTINGS", 0)


@pytest.fixture
def corpus():
    namespace, _ = ingest("tenant:lexical", {**CORPUS, **NOTES})
    return ch.Scope(namespace.id)


def test_terms_are_read_rarest_first_while_they_fit_the_budget():
    terms = [bm25.Term("pumpkin", 1, 26), bm25.Term("nutmeg", 1, 4), bm25.Term("soup", 1, 5)]
    full, probed = lexical.plan_terms(terms, budget=10)
    assert [t.lexeme for t in full] == ["nutmeg", "soup"] and [t.lexeme for t in probed] == ["pumpkin"]
    full, probed = lexical.plan_terms(terms, budget=1)  # the rarest is always read
    assert [t.lexeme for t in full] == ["nutmeg"] and len(probed) == 2
    assert lexical.plan_terms(terms, budget=None) == (terms, [])


def test_pruning_is_skipped_where_reading_the_common_terms_costs_less(corpus, monkeypatch):
    monkeypatch.setattr(lexical, "COMPLETION_COST_IN_POSTINGS", COMPLETION_COST)
    lexemes = lexical.query_lexemes("nutmeg pumpkin")
    result = lexical.lexical_search(corpus, lexemes, 3, budget=1)
    assert result.report.mode == "exact" and not result.report.probed_terms
    assert result.rows == lexical.lexical_search(corpus, lexemes, 3).rows


def test_within_the_budget_the_channel_is_exact(corpus):
    lexemes = lexical.query_lexemes("pumpkin soup with nutmeg")
    result = lexical.lexical_search(corpus, lexemes, 10, budget=10_000)
    assert result.report.mode == "exact" and result.report.guaranteed and not result.report.probed_terms
    assert result.rows == lexical.lexical_channel(corpus, lexemes, 10)  # budget None: exact as well
    assert result.report.postings_read == sum(t.document_frequency for t in lexical.term_statistics(
        corpus, lexemes).terms)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("k", [1, 3, 10])
def test_the_pruned_mode_returns_exact_bm25s_top_k(corpus, query, k):
    lexemes = lexical.query_lexemes(query)
    exact = lexical.lexical_search(corpus, lexemes, k)
    pruned = lexical.lexical_search(corpus, lexemes, k, budget=1)
    assert [r.chunk_id for r in pruned.rows] == [r.chunk_id for r in exact.rows]
    assert [r.raw for r in pruned.rows] == pytest.approx([r.raw for r in exact.rows], rel=1e-9)
    assert pruned.report.guaranteed
    if pruned.report.mode == "pruned":
        assert set(pruned.report.full_terms).isdisjoint(pruned.report.probed_terms)
        assert pruned.report.postings_read <= exact.report.postings_read


def test_a_common_term_is_read_only_where_it_could_lift_a_chunk_into_the_top_k(corpus):
    lexemes = lexical.query_lexemes("nutmeg pumpkin")
    statistics = lexical.term_statistics(corpus, lexemes)
    frequency = {t.lexeme: t.document_frequency for t in statistics.terms}
    top = lexical.lexical_search(corpus, lexemes, 3, budget=1)
    assert top.report.mode == "pruned" and top.report.full_terms == ("nutmeg",)
    assert top.report.probed_terms == ("pumpkin",)
    # three nutmeg notes outscore any note "pumpkin" alone matches: no pumpkin posting is read
    assert top.report.postings_read == frequency["nutmeg"] and top.report.impact_floor > bm25.K1 + 1
    assert top.rows == lexical.lexical_search(corpus, lexemes, 3).rows
    # ten results need pumpkin-only notes too (five chunks hold nutmeg): they are found, not missed
    ten = lexical.lexical_search(corpus, lexemes, 10, budget=1)
    exact = lexical.lexical_search(corpus, lexemes, 10)
    assert ten.report.guaranteed and len(ten.rows) == 10
    assert [r.chunk_id for r in ten.rows] == [r.chunk_id for r in exact.rows]


def test_when_more_chunks_could_reach_the_top_k_than_are_completed_no_guarantee_is_given(corpus, monkeypatch):
    monkeypatch.setattr(lexical, "MIN_CANDIDATES", 1)
    monkeypatch.setattr(lexical, "CANDIDATES_PER_RESULT", 1)
    lexemes = lexical.query_lexemes("pumpkin harvest")
    pruned = lexical.lexical_search(corpus, lexemes, 2, budget=1)
    exact_scores = {r.chunk_id: r.raw for r in lexical.lexical_search(corpus, lexemes, 1000).rows}
    assert pruned.report.mode == "pruned" and not pruned.report.guaranteed
    for row in pruned.rows:  # still each chunk's full BM25
        assert row.raw == pytest.approx(exact_scores[row.chunk_id], rel=1e-9)


def test_a_cut_impact_range_withdraws_the_guarantee(corpus, monkeypatch):
    lexemes = lexical.query_lexemes("nutmeg pumpkin")
    whole = lexical.lexical_search(corpus, lexemes, 10, budget=1)  # every pumpkin note is needed
    assert whole.report.guaranteed and whole.report.full_buckets == 0
    monkeypatch.setattr(lexical, "IMPACT_BUCKET_POSTINGS", 1)  # one posting per (term, frequency) range
    cut = lexical.lexical_search(corpus, lexemes, 10, budget=1)
    assert cut.report.full_buckets > 0 and not cut.report.guaranteed
    assert cut.report.postings_read < whole.report.postings_read


def test_pruning_agrees_with_exact_bm25_on_random_queries_budgets_and_depths():
    import random

    rng = random.Random(18)
    words = [f"w{i}" for i in range(40)]
    zipf = [1 / (rank + 1) for rank in range(len(words))]  # a few very common words, a long rare tail
    texts = {f"doc{d}": (f"Doc {d}", " ".join(rng.choices(words, zipf, k=rng.randint(3, 40))) + ".")
             for d in range(120)}
    namespace, _ = ingest("tenant:lexical-random", texts)
    scope = ch.Scope(namespace.id)
    for _ in range(150):
        query = " ".join(rng.choices(words, zipf, k=rng.randint(2, 6)))
        k, budget = rng.choice([1, 5, 20, 60]), rng.choice([1, 10, 50, 200])
        lexemes = lexical.query_lexemes(query)
        exact = lexical.lexical_search(scope, lexemes, k)
        pruned = lexical.lexical_search(scope, lexemes, k, budget=budget)
        assert pruned.report.guaranteed, (query, k, budget)
        assert [r.chunk_id for r in pruned.rows] == [r.chunk_id for r in exact.rows], (query, k, budget)


def test_the_pruned_mode_keeps_the_scope(corpus):
    from kb.models import Chunk

    note = Chunk.objects.get(document__ref="note7")
    lexemes = lexical.query_lexemes("pumpkin soup with nutmeg")
    scoped = ch.Scope(corpus.namespace_id, document_ids=(note.document_id,))
    rows = lexical.lexical_search(scoped, lexemes, 10, budget=1).rows
    assert [r.chunk_id for r in rows] == [note.pk]
    other = Chunk.objects.get(document__ref="note8")  # pumpkin, no nutmeg: found only by the common terms
    scoped = ch.Scope(corpus.namespace_id, document_ids=(other.document_id,))
    assert [r.chunk_id for r in lexical.lexical_search(scoped, lexemes, 10, budget=1).rows] == [other.pk]
