"""The lexical channel's two modes against real PostgreSQL: exact BM25, and the bounded mode that
reads the rarest terms in full and only probes the common ones for the best candidates."""

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


def test_within_the_budget_the_channel_is_exact(corpus):
    lexemes = lexical.query_lexemes("pumpkin soup with nutmeg")
    result = lexical.lexical_search(corpus, lexemes, 10, budget=10_000)
    assert result.report.mode == "exact" and result.report.guaranteed and not result.report.probed_terms
    assert result.rows == lexical.lexical_channel(corpus, lexemes, 10)  # budget None: exact as well
    assert result.report.postings_read == sum(t.document_frequency for t in lexical.term_statistics(
        corpus, lexemes).terms)


@pytest.mark.parametrize("query", QUERIES)
def test_bounded_scores_are_exact_and_a_guarantee_is_never_wrong(corpus, query):
    lexemes = lexical.query_lexemes(query)
    exact = lexical.lexical_search(corpus, lexemes, 5)
    bounded = lexical.lexical_search(corpus, lexemes, 5, budget=1)
    exact_scores = {row.chunk_id: row.raw for row in lexical.lexical_search(corpus, lexemes, 1000).rows}
    for row in bounded.rows:  # every score returned is the chunk's full BM25, common terms included
        assert row.raw == pytest.approx(exact_scores[row.chunk_id], rel=1e-9)
    if bounded.report.guaranteed:
        assert [r.chunk_id for r in bounded.rows] == [r.chunk_id for r in exact.rows]
    if len(lexemes) > 1 and bounded.report.mode == "bounded":
        assert bounded.report.postings_read < exact.report.postings_read
        assert set(bounded.report.full_terms).isdisjoint(bounded.report.probed_terms)


def test_a_document_only_the_common_terms_match_is_missed_and_no_guarantee_is_given(corpus):
    lexemes = lexical.query_lexemes("nutmeg pumpkin")
    exact = lexical.lexical_search(corpus, lexemes, 10)
    bounded = lexical.lexical_search(corpus, lexemes, 10, budget=1)
    assert bounded.report.mode == "bounded" and bounded.report.full_terms == ("nutmeg",)
    assert bounded.report.probed_terms == ("pumpkin",)
    assert len(bounded.rows) < len(exact.rows)  # the pumpkin-only notes were never candidates
    assert not bounded.report.guaranteed
    assert [r.chunk_id for r in bounded.rows] == [r.chunk_id for r in exact.rows][:len(bounded.rows)]


def test_the_bounded_mode_keeps_the_scope(corpus):
    from kb.models import Chunk

    note = Chunk.objects.get(document__ref="note7")
    lexemes = lexical.query_lexemes("pumpkin soup with nutmeg")
    scoped = ch.Scope(corpus.namespace_id, document_ids=(note.document_id,))
    rows = lexical.lexical_search(scoped, lexemes, 10, budget=1).rows
    assert [r.chunk_id for r in rows] == [note.pk]
