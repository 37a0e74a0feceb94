"""search(): the service every surface calls, end to end on real PostgreSQL and the real model."""

import pytest

from kb.embedding.embedders import strong_cosine
from kb.models import Document, QueryLog, Source
from retrieval.errors import InvalidQuery, QueryTooLong, UnknownNamespace
from retrieval.lookups import words_match
from retrieval.ranker import RankerParams
from retrieval.service import Filters, search
from tests.corpus import ingest

pytestmark = pytest.mark.django_db


def test_search_ranks_explains_and_logs(corpus):
    result = search("how long should I roast pumpkin for soup", "tenant:a", limit=3)
    assert result.hits[0].title == "Pumpkin soup"
    top = result.hits[0]
    assert top.rank == 1 and top.details.kept
    assert set(top.details.channels) >= {"vector", "lexical"}
    assert top.details.base > 0 and top.details.rrf_bonus > 0
    assert top.relevance == pytest.approx(
        top.details.base
        + top.details.rrf_bonus
        + top.details.recency_boost
        + top.details.priority_boost
    )
    assert (
        top.citation_url == f"/documents/{top.document_id}/#passage-{top.chunk_id}"
    )  # the passage itself
    assert result.summary.candidates >= len(result.hits)
    assert result.lexemes == ["long", "roast", "pumpkin", "soup"]
    log = QueryLog.objects.get()
    assert log.result_ids == [h.chunk_id for h in result.hits]
    assert {"embed_ms", "channels_ms", "rank_ms", "total_ms"} <= set(log.timings)


def test_versioned_name_query_puts_the_named_document_first(corpus):
    result = search("Qwen 3.8", "tenant:a", limit=3)
    assert result.hits[0].title == "Qwen 3.8 release notes"
    assert "names" in result.hits[0].details.channels


def test_identifier_query_drops_meaning_only_matches(corpus):
    result = search("ERR_CONNECTION_REFUSED", "tenant:a", limit=5)
    assert [h.title for h in result.hits] == ["Connection errors"]
    assert result.hits[0].details.channels["identifiers"].score == pytest.approx(0.95)
    dropped = {d.dropped_by for d in result.dropped}
    assert "eligibility" in dropped
    assert result.summary.dropped_eligibility >= 1


def test_tiers_and_weak_titles(corpus):
    result = search("pumpkin", "tenant:a", limit=10)
    titles = [d.title for d in result.suggested]
    assert titles[:2] == ["Growing pumpkins", "Pumpkin soup"] or titles[:2] == [
        "Pumpkin soup",
        "Growing pumpkins",
    ]
    assert all(d.best_cosine >= strong_cosine() for d in result.cited)
    assert result.weak_titles == []
    nonsense = search("quasar spectrography telemetry", "tenant:a", limit=5)
    assert nonsense.cited == [] and len(nonsense.weak_titles) >= 1


def test_a_strong_match_is_read_on_the_deployments_own_cosine_scale(corpus, settings):
    """KB_STRONG_COSINE moves what is cited, what the page calls "no strong match", and what the
    curation report counts as weak, together: one floor for the model's scale."""
    from kb.conf import kb_settings
    from retrieval.curation import query_report

    cited = search("pumpkin", "tenant:a", limit=10)
    best = max(d.best_cosine for d in cited.cited)
    # logged before `strong` was recorded: the report reads its top cosine against the floor
    QueryLog.objects.create(
        namespace=corpus, query="pumpkin", result_ids=[1], top_cosine=best, strong=None
    )
    assert [(row.query, row.count, row.weak) for row in query_report(corpus, days=1)["top"]] == [
        ("pumpkin", 2, 0)
    ]
    settings.KB_STRONG_COSINE = (
        f"{best + 0.001:.4f}"  # a model whose scale puts this passage below its floor
    )
    kb_settings.cache_clear()
    try:
        weak = search("pumpkin", "tenant:a", limit=10)
        report = query_report(corpus, days=1)
    finally:
        kb_settings.cache_clear()
    assert [d.title for d in weak.documents] == [
        d.title for d in cited.documents
    ]  # the ranking is the same
    assert weak.cited == [] and weak.weak_titles
    assert list(QueryLog.objects.order_by("id").values_list("strong", flat=True)) == [
        True,
        None,
        False,
    ]
    assert [(row.query, row.count, row.weak) for row in report["top"]] == [("pumpkin", 3, 2)]


def test_a_source_priority_lifts_its_passages_by_a_share_of_the_querys_spread():
    documents = {
        "garden": ("Growing pumpkins", "Pumpkins need sun and rich soil."),
        "soup": ("Pumpkin soup", "Roast the pumpkin, then blend it with stock."),
    }
    namespace, garden = ingest("tenant:p", {"garden": documents["garden"]}, source_name="garden")
    ingest("tenant:p", {"soup": documents["soup"]}, source_name="kitchen")

    def ranked(priority):
        Source.objects.filter(pk=garden.pk).update(priority=priority)
        return search("pumpkin", namespace.slug, limit=5, group="chunk", log=False)

    plain = [hit.title for hit in ranked(0.0).hits]
    last = plain[-1]
    lifted = ranked(1.0 if last == "Growing pumpkins" else -1.0)
    _, _, spread = lifted.summary.calibration["vector"]
    assert spread > 0
    boosts = {hit.title: hit.details.priority_boost for hit in lifted.hits}
    assert boosts["Pumpkin soup"] == 0.0 and abs(boosts["Growing pumpkins"]) == pytest.approx(
        0.75 * spread
    )
    assert [hit.title for hit in lifted.hits] == plain[
        ::-1
    ]  # the two are near-equals: a spread reorders them


def test_citation_url_for_web_documents_keeps_an_existing_fragment(corpus):
    from retrieval.hits import citation_url
    from retrieval.passage_rows import ChunkRow

    base = dict(
        chunk_id=1,
        document_id=2,
        source_id=3,
        position=0,
        text="",
        heading_path=(),
        start_byte=0,
        end_byte=0,
        title="",
        path="",
        source_kind="url",
        source_name="",
        created_at=None,
        indexed_at=None,
    )
    page = ChunkRow(
        **base,
        anchor="install",
        ref="https://docs.example.com/guide",
        url="https://docs.example.com/guide",
    )
    assert citation_url(page, "ns") == "https://docs.example.com/guide#install"
    framed = ChunkRow(**base, anchor="install", ref="https://x.io/#/app", url="https://x.io/#/app")
    assert citation_url(framed, "ns") == "https://x.io/#/app"


def test_filters_restrict_results(corpus):
    garden = Document.objects.get(ref="garden")
    result = search("pumpkin", "tenant:a", filters=Filters(document_ids=(garden.id,)))
    assert {h.document_id for h in result.hits} == {garden.id}
    source = Source.objects.get(namespace=corpus)
    assert search("pumpkin", "tenant:a", filters=Filters(source_ids=(source.id + 999,))).hits == []


def test_text_window_reads_only_the_passages_shown(corpus):
    """The page shows ten results of fifty: only those carry their whole text; the rest carry its
    first LEAD_CHARS (a page lists them by breadcrumb and first words) and the titles and
    locations the tiers need, and the ranking is the same."""
    from retrieval.passage_rows import LEAD_CHARS

    ingest(
        "tenant:a",
        {"long": ("Pumpkin almanac", "Pumpkin facts for every month of the year. " * 40)},
        source_name="almanac",
    )  # a passage longer than the lead
    full = search("pumpkin", "tenant:a", limit=10)
    assert len(full.hits) >= 2 and all(h.text for h in full.hits)
    assert any(len(h.text) > LEAD_CHARS for h in full.hits)
    window = search("pumpkin", "tenant:a", limit=10, text_window=(1, 2))
    assert [h.chunk_id for h in window.hits] == [h.chunk_id for h in full.hits]
    for i, (shown, whole) in enumerate(zip(window.hits, full.hits, strict=True)):
        assert shown.text == (whole.text if i == 1 else whole.text[:LEAD_CHARS]), i
    assert window.hits[0].title == full.hits[0].title
    grouped = search("pumpkin", "tenant:a", limit=10, group="document", text_window=(0, 1))
    first, *others = grouped.documents
    assert others
    assert first.sections[0].text  # the best section of the one document shown
    assert all(len(s.text) <= LEAD_CHARS for s in first.sections[1:]) and all(
        len(s.text) <= LEAD_CHARS for d in others for s in d.sections
    )
    assert [d.document_id for d in grouped.documents] == [
        d.document_id for d in search("pumpkin", "tenant:a", limit=10, group="document").documents
    ]


def test_words_match_is_the_lexical_channel_within_the_filters(corpus):
    """What decides whether the page offers a spelling correction."""
    source = Source.objects.get(namespace=corpus)
    garden = Document.objects.get(ref="garden")
    assert words_match("pumpkin", corpus.pk)
    assert words_match("pumpkin", corpus.pk, Filters(document_ids=(garden.id,)))
    assert not words_match("pumpkin", corpus.pk, Filters(source_ids=(source.id + 999,)))
    assert not words_match("quasar telemetry", corpus.pk)
    other, _ = ingest("tenant:b", {"q": ("Quasars", "Quasar telemetry from the array.")})
    assert words_match("quasar telemetry", other.pk) and not words_match(
        "quasar telemetry", corpus.pk
    )


def test_namespace_isolation_in_results_counts_and_explanations(corpus):
    ingest("tenant:b", {"secret": ("Pumpkin secret", "The secret pumpkin recipe of tenant B.")})
    result = search("secret pumpkin recipe", "tenant:a", limit=50)
    assert "Pumpkin secret" not in [h.title for h in result.hits]
    b_chunks = set(Document.objects.get(ref="secret").chunks.values_list("pk", flat=True))
    explained = {h.chunk_id for h in result.hits} | {d.key for d in result.dropped}
    assert not explained & b_chunks
    assert result.summary.candidates == len(explained)


@pytest.mark.parametrize(
    "query, limit, error, code",
    [
        ("   ", 10, InvalidQuery, "SEARCH_EMPTY_QUERY"),
        ("x" * 4001, 10, QueryTooLong, "SEARCH_QUERY_TOO_LONG"),
        ("ok", 0, InvalidQuery, "SEARCH_INVALID_LIMIT"),
        ("nul\x00byte", 10, InvalidQuery, "SEARCH_INVALID_QUERY"),
    ],
    ids=["empty", "too-long", "limit", "nul"],
)
def test_bad_queries_get_stable_codes(corpus, query, limit, error, code):
    with pytest.raises(error) as excinfo:
        search(query, "tenant:a", limit=limit)
    assert excinfo.value.code == code


def test_unknown_namespace(corpus):
    with pytest.raises(UnknownNamespace, match="No namespace 'tenant:nope'"):
        search("pumpkin", "tenant:nope")


@pytest.mark.parametrize(
    "query",
    ["!!! ((( &&& |||", "the and of", "'; DROP TABLE kb_chunk; --", "ｐｕｍｐｋｉｎ"],
    ids=["tsquery", "stopwords", "sql", "fullwidth"],
)
def test_hostile_queries_never_error(corpus, query):
    result = search(query, "tenant:a", limit=5)
    assert isinstance(result.hits, list)
    assert Document.objects.filter(ref="pumpkin").exists()


def test_plain_rrf_fusion_and_single_channel_through_the_evaluation_entry_point(corpus):
    from evaluation.search_parts import search_variant

    rrf = search_variant("pumpkin soup", "tenant:a", fusion="rrf")
    assert rrf.hits and rrf.hits[0].details.rrf_bonus > 0
    lexical = search_variant("pumpkin soup", "tenant:a", channels=("lexical",))
    assert all(set(h.details.channels) == {"lexical"} for h in lexical.hits)
    product = search("pumpkin soup", "tenant:a", log=False)
    assert [h.chunk_id for h in search_variant("pumpkin soup", "tenant:a").hits] == [
        h.chunk_id for h in product.hits
    ]


def test_search_carries_only_what_the_product_needs():
    import inspect

    assert {"fusion", "channels", "fuse"}.isdisjoint(inspect.signature(search).parameters)


def test_ranker_params_reach_the_ranker(corpus):
    strict = search("pumpkin", "tenant:a", params=RankerParams(floor=1.0, bypass_channels=4))
    assert len(strict.hits) == 1
    assert strict.summary.dropped_threshold >= 1
