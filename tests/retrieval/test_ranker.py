"""The pure ranker: each rule shown by a case that fails without it."""

import math

import pytest

from retrieval.errors import InvalidRankerParams
from retrieval.ranker import Candidate, ChannelHit, RankerParams, rank

V, L, N, I = "vector", "lexical", "names", "identifiers"


def cand(key, hits, **fields):
    return Candidate(key=key, hits={name: ChannelHit(rank=r, raw=raw) for name, (r, raw) in hits.items()},
                     text=fields.pop("text", f"text of {key}"), **fields)


def keys(ranking):
    return [d.key for d in ranking.kept]


# no threshold, no priority, RRF weight 1: isolate the rule under test
OPEN = RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0)


def test_base_is_the_best_single_channel_score():
    vector = [cand("a", {V: (1, 0.7)}), cand("c", {V: (2, 0.3)})]
    lexical = [cand("b", {L: (1, 12.0), V: (3, 0.2)}), cand("d", {L: (2, 2.0)})]
    details = rank(vector + lexical, OPEN).details()
    assert details["a"].base == pytest.approx(0.7) and details["a"].base_channel == "vector"
    assert details["b"].base_channel == "lexical"  # its calibrated BM25 beats its own cosine
    assert details["b"].base == pytest.approx(details["b"].channels["lexical"].score)
    assert details["b"].base > 0.2


@pytest.mark.parametrize("lexical", [
    pytest.param([("only", 12.0)], id="a single lexical hit"),
    pytest.param([("x", 3.0), ("y", 3.0), ("z", 3.0)], id="all lexical scores equal"),
])
def test_a_lexical_list_without_spread_never_reaches_the_top(lexical):
    """'how does resync work': one hit on the common word 'works', cosine about zero, must not
    outrank strong meaning matches (it scored 1.0, the top of the scale, from raw/top)."""
    meaning = [cand(f"m{i}", {V: (i, cos)}, cosine=cos) for i, cos in enumerate((0.62, 0.58, 0.55, 0.30, 0.10), 1)]
    words = [cand(key, {L: (i, raw)}, cosine=-0.0007) for i, (key, raw) in enumerate(lexical, 1)]
    ranking = rank(meaning + words, OPEN)
    details = ranking.details()
    mean = ranking.summary.calibration["vector"][1]
    for key, _ in lexical:
        assert details[key].channels["lexical"].score == pytest.approx(mean)  # an ordinary dense hit
    assert keys(ranking)[:3] == ["m1", "m2", "m3"]


def test_a_flat_vector_list_gives_lexical_hits_no_top_score():
    ranking = rank([cand("a", {V: (1, 0.5)}), cand("b", {V: (2, 0.5)}),
                    cand("l1", {L: (1, 9.0)}), cand("l2", {L: (2, 1.0)})], OPEN)
    assert all(d.channels["lexical"].score == pytest.approx(0.5) for d in ranking.kept if "lexical" in d.channels)


def test_lexical_scores_are_calibrated_into_cosine_units():
    """A lexical hit as exceptional as the dense top weighs as much; without a vector list the
    lexical score is relative to its best."""
    vector = [cand(f"v{i}", {V: (i, cos)}) for i, cos in enumerate((0.70, 0.50, 0.40, 0.30, 0.20), 1)]
    lexical = [cand(f"l{i}", {L: (i, bm25)}) for i, bm25 in enumerate((30.0, 9.0, 8.0, 7.0, 6.0), 1)]
    ranking = rank(vector + lexical, OPEN)
    details = ranking.details()
    top, mean, std = ranking.summary.calibration["lexical"]
    vtop, vmean, vstd = ranking.summary.calibration["vector"]
    assert (top, mean) == (30.0, 12.0)
    expected = vmean + (30.0 - mean) / std * vstd
    assert details["l1"].channels["lexical"].score == pytest.approx(min(1.0, expected))
    # the lexical outlier (z = 2) outranks the dense top (z = 1.6); a mediocre lexical hit
    # (z < 0) lands below the dense runner-up instead of at 9/30 of the lexical best
    assert keys(ranking)[:2] == ["l1", "v1"]
    assert details["l2"].channels["lexical"].score < details["v2"].channels["vector"].score
    alone = rank(lexical, OPEN).details()
    assert alone["l2"].channels["lexical"].score == pytest.approx(9.0 / 30.0)


def test_no_channel_is_stuck_at_zero():
    ranking = rank([cand("low", {L: (2, 0.0)}), cand("top", {L: (1, 5.0)}), cand("neg", {V: (1, -0.2)})], OPEN)
    assert all(d.base > 0 for d in ranking.kept)


def test_rrf_bonus_lifts_agreement_between_channels():
    # "only" has the better single score; "both" is found by two channels
    only = cand("only", {V: (1, 0.62)})
    both = cand("both", {V: (3, 0.61), L: (3, 2.0)})
    top_lex = cand("lex", {L: (1, 10.0)})
    with_rrf = rank([only, both, top_lex], OPEN)
    without = rank([only, both, top_lex], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=0.0))
    assert RankerParams().rrf_weight == RankerParams().rrf_k / 2
    assert with_rrf.details()["both"].rrf_bonus == pytest.approx(2 / 63)
    # calibrated, "lex" scores 0.62 (as exceptional as the dense top) and "both" 0.61
    assert keys(without) == ["lex", "only", "both"]
    assert keys(with_rrf) == ["both", "lex", "only"]


def test_recency_boost_and_zero_weight_changes_nothing_byte_for_byte():
    old = cand("old", {V: (1, 0.80)}, age_days=3000)
    new = cand("new", {V: (2, 0.79)}, age_days=1)
    plain = rank([old, new], OPEN)
    zero = rank([old, new], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0, recency_weight=0.0))
    assert plain == zero and keys(plain) == ["old", "new"]
    boosted = rank([old, new], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0,
                                            recency_weight=0.05, recency_half_life_days=30))
    assert keys(boosted) == ["new", "old"]
    assert boosted.details()["new"].recency_boost == pytest.approx(0.05 * math.exp(-1 / 30))


def test_priority_boost_follows_the_source_priority():
    a = cand("a", {V: (1, 0.70)}, priority=-1.0)
    b = cand("b", {V: (2, 0.69)}, priority=1.0)
    assert keys(rank([a, b], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0))) == ["a", "b"]
    ranking = rank([a, b], RankerParams(floor=0.0, priority_weight=0.05, rrf_weight=1.0))
    assert keys(ranking) == ["b", "a"]
    assert ranking.details()["b"].priority_boost == pytest.approx(0.05)


def test_identifier_query_makes_unconfirmed_vector_only_candidates_ineligible():
    meaning = cand("meaning", {V: (1, 0.9)})
    exact = cand("exact", {I: (1, 1.0), V: (5, 0.5)})
    lexical = cand("lexical", {L: (1, 3.0)})
    loose = rank([meaning, exact, lexical], OPEN)
    assert "meaning" in keys(loose)
    strict = rank([meaning, exact, lexical], OPEN, identifier_query=True)
    assert keys(strict) == ["lexical", "exact"] or keys(strict) == ["exact", "lexical"]
    dropped = strict.details()["meaning"]
    assert (dropped.eligible, dropped.dropped_by) == (False, "eligibility")
    assert strict.summary.dropped_eligibility == 1


def test_exact_identifier_match_gets_a_strong_fixed_base():
    exact = cand("exact", {I: (1, 1.0)})
    close = cand("close", {V: (1, 0.85)})
    ranking = rank([exact, close], OPEN)
    assert ranking.details()["exact"].base == 0.95
    assert keys(ranking) == ["exact", "close"]


def test_duplicate_collapse_stage_one_exact_text():
    a = cand("a", {V: (1, 0.8)}, text="Install  with PIP")
    b = cand("b", {V: (2, 0.7)}, text="install with pip")
    ranking = rank([a, b], OPEN)
    assert keys(ranking) == ["a"]
    assert ranking.details()["b"].duplicate_of == "a"
    assert ranking.details()["b"].dropped_by == "duplicate"


def test_duplicate_collapse_stage_two_same_body_under_another_breadcrumb():
    a = cand("a", {V: (1, 0.8)}, text="Guide > Install\n\nRun pip.", body="Run pip.")
    b = cand("b", {V: (2, 0.7)}, text="Mirror > Setup\n\nRun pip.", body="Run pip.")
    ranking = rank([a, b], OPEN)
    assert keys(ranking) == ["a"]
    assert ranking.details()["b"].reason == "same body as a"


def test_relative_threshold_drops_weak_candidates():
    strong = cand("strong", {V: (1, 0.80)})
    weak = cand("weak", {V: (2, 0.20)})
    ranking = rank([strong, weak], RankerParams(floor=0.5, priority_weight=0.0, rrf_weight=1.0))
    assert keys(ranking) == ["strong"]
    dropped = ranking.details()["weak"]
    assert dropped.dropped_by == "threshold" and "< floor" in dropped.reason
    assert ranking.summary.floor == pytest.approx(ranking.summary.top_relevance * 0.5)
    assert keys(rank([strong, weak], OPEN)) == ["strong", "weak"]


def test_strong_multichannel_candidates_bypass_the_threshold():
    top = cand("top", {L: (1, 10.0), V: (1, 0.9)})
    middle = cand("middle", {V: (2, 0.6)})
    agreed = cand("agreed", {V: (3, 0.30), L: (15, 1.0)})
    ranking = rank([top, middle, agreed], RankerParams(floor=0.6, priority_weight=0.0, rrf_weight=1.0))
    assert keys(ranking) == ["top", "middle", "agreed"]
    assert ranking.details()["agreed"].bypassed_threshold
    no_bypass = rank([top, middle, agreed],
                     RankerParams(floor=0.6, priority_weight=0.0, rrf_weight=1.0, bypass_channels=3))
    assert keys(no_bypass) == ["top", "middle"]


def test_mmr_diversifies_and_records_its_penalty():
    a = cand("a", {V: (1, 0.90)}, embedding=(1.0, 0.0))
    a2 = cand("a2", {V: (2, 0.89)}, embedding=(0.99, 0.01))
    b = cand("b", {V: (3, 0.80)}, embedding=(0.0, 1.0))
    assert keys(rank([a, a2, b], OPEN)) == ["a", "a2", "b"]
    diverse = rank([a, a2, b], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0, mmr_lambda=0.5))
    assert keys(diverse) == ["a", "b", "a2"]
    assert diverse.details()["a2"].mmr_penalty > 0.4


def test_mmr_seeds_one_per_kind_only_when_relevant():
    chunk = cand("chunk", {V: (1, 0.90)}, embedding=(1.0, 0.0))
    chunk2 = cand("chunk2", {V: (2, 0.88)}, embedding=(0.9, 0.1))
    summary = cand("summary", {V: (3, 0.85)}, kind="summary", embedding=(0.95, 0.05))
    capability = cand("cap", {V: (4, 0.20)}, kind="capability", embedding=(0.0, 1.0))
    params = RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0, mmr_lambda=0.3, seed_ratio=0.8)
    ranking = rank([chunk, chunk2, summary, capability], params)
    # the summary is a relevant kind: seeded second despite being similar; the irrelevant
    # capability is not forced in as a seed even though it is the most different
    assert keys(ranking)[:2] == ["chunk", "summary"]
    assert ranking.details()["summary"].mmr_penalty == 0.0
    unseeded = rank([chunk, chunk2, summary, capability], RankerParams(
        floor=0.0, priority_weight=0.0, rrf_weight=1.0, mmr_lambda=0.3, seed_ratio=1.0))
    assert keys(unseeded)[1] == "cap"


def test_ties_break_by_cosine_then_path_then_position():
    same = {L: (1, 5.0)}
    a = cand("a", same, cosine=0.5, path="b.md", position=0, text="x1")
    b = cand("b", same, cosine=0.6, path="z.md", position=0, text="x2")
    c = cand("c", same, cosine=0.5, path="a.md", position=3, text="x3")
    d = cand("d", same, cosine=0.5, path="a.md", position=1, text="x4")
    assert keys(rank([a, b, c, d], OPEN)) == ["b", "d", "c", "a"]
    assert keys(rank([d, c, b, a], OPEN)) == ["b", "d", "c", "a"]


def test_limit_and_summary_counts():
    candidates = [cand(f"c{i}", {V: (i, 0.9 - i / 100)}) for i in range(1, 8)]
    ranking = rank(candidates, RankerParams(limit=3, floor=0.0))
    assert keys(ranking) == ["c1", "c2", "c3"]
    assert [d.rank for d in ranking.kept] == [1, 2, 3]
    assert ranking.summary.beyond_limit == 4 and ranking.summary.per_channel["vector"] == 7
    assert {d.dropped_by for d in ranking.dropped} == {"limit"}


@pytest.mark.parametrize(
    "params, message",
    [
        (RankerParams(rrf_k=0), "rrf_k must be positive"),
        (RankerParams(limit=0), "limit must be positive"),
        (RankerParams(rrf_weight=-1), "rrf_weight must not be negative"),
        (RankerParams(recency_weight=-0.1), "recency_weight must not be negative"),
        (RankerParams(mmr_lambda=1.5), "mmr_lambda must be within [0, 1]"),
        (RankerParams(mmr_lambda=-0.1), "mmr_lambda must be within [0, 1]"),
        (RankerParams(floor=2), "floor is a fraction"),
    ],
    ids=["k", "limit", "rrf-weight", "recency", "lambda-high", "lambda-low", "floor"],
)
def test_bad_parameters_raise_clear_errors(params, message):
    with pytest.raises(InvalidRankerParams) as excinfo:
        rank([cand("a", {V: (1, 0.5)})], params)
    assert message in excinfo.value.message
    assert excinfo.value.code == "SEARCH_INVALID_PARAMS"


def test_empty_candidates():
    ranking = rank([], RankerParams())
    assert ranking.kept == [] and ranking.summary.candidates == 0
