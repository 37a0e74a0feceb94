"""The pure ranker: each rule shown by a case that fails without it."""

import math

import pytest

from retrieval.candidates import FULL_WEIGHT_IDF_SHARE
from retrieval.errors import InvalidRankerParams
from retrieval.ranker import Candidate, ChannelHit, RankerParams, rank
from retrieval.scoring import words_weight

V, L, N, ID = "vector", "lexical", "names", "identifiers"


def cand(key, hits, **fields):
    return Candidate(
        key=key,
        hits={name: ChannelHit(rank=r, raw=raw) for name, (r, raw) in hits.items()},
        text=fields.pop("text", f"text of {key}"),
        **fields,
    )


def keys(ranking):
    return [d.key for d in ranking.kept]


# no threshold, no priority, RRF weight 1: isolate the rule under test
OPEN = RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0)


def zscores(values):
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return mean, std


MEANING = [
    cand(f"m{i}", {V: (i, cos)}, cosine=cos)
    for i, cos in enumerate((0.62, 0.58, 0.55, 0.30, 0.10), 1)
]


def test_base_fuses_the_vector_and_lexical_z_scores_in_cosine_units():
    cosines = {"a": 0.7, "b": 0.2, "c": 0.3, "d": 0.1}
    found = [
        cand("a", {V: (1, 0.7)}, cosine=0.7),
        cand("c", {V: (2, 0.3)}, cosine=0.3),
        cand("b", {V: (3, 0.2), L: (1, 12.0)}, cosine=0.2),
        cand("d", {L: (2, 2.0)}, cosine=0.1),
    ]
    for weight in (0.0, 0.3, 0.5, 1.0):
        details = rank(
            found,
            RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=0.0, lexical_weight=weight),
        ).details()
        vmean, vstd = zscores([0.7, 0.3, 0.2])  # the vector list: a, c, b
        lmean, lstd = zscores([12.0, 2.0])  # the lexical list: b, d
        for key, cosine in cosines.items():
            bm25 = {"b": 12.0, "d": 2.0}.get(key, 0.0)  # outside the lexical list: BM25 0
            fused_z = (1 - weight) * (cosine - vmean) / vstd + weight * (bm25 - lmean) / lstd
            assert details[key].base_channel == "fused"
            assert details[key].base == pytest.approx(max(vmean + fused_z * vstd, 1e-6))
            assert details[key].vector_z == pytest.approx((cosine - vmean) / vstd)
    meaning_alone = rank(
        found, RankerParams(floor=0.0, rrf_weight=0.0, lexical_weight=0.0)
    ).details()
    assert meaning_alone["b"].base == pytest.approx(0.2)  # weight 0: the base is the cosine itself


def test_a_passage_without_a_comparable_vector_counts_as_the_least_similar_found():
    """A passage not embedded yet, or embedded by another model, has no cosine to the query: its
    meaning counts as the lowest cosine among the candidates, on the scale the others are on (its
    words' share of the best BM25 gave it 1.0, above every cosine), so it never passes a passage of
    the same words whose meaning is known."""
    found = [
        cand("a", {V: (1, 0.7)}, cosine=0.7),
        cand("c", {V: (2, 0.3)}, cosine=0.3),
        cand("b", {V: (3, 0.2), L: (2, 4.0)}, cosine=0.2),
        cand("x", {L: (1, 12.0)}),
        cand("y", {L: (3, 12.0)}, cosine=0.25),
    ]  # the same words as x, its meaning known
    details = rank(
        found, RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=0.0, lexical_weight=0.5)
    ).details()
    vmean, vstd = zscores([0.7, 0.3, 0.2])
    lmean, lstd = zscores([12.0, 4.0, 12.0])
    fused_z = (
        0.5 * (0.2 - vmean) / vstd + 0.5 * (12.0 - lmean) / lstd
    )  # 0.2: the lowest cosine found
    assert details["x"].base_channel == "fused" and details["x"].vector_z is None
    assert details["x"].base == pytest.approx(vmean + fused_z * vstd)
    assert details["x"].base < details["y"].base


@pytest.mark.parametrize(
    "lexical, leads",
    [
        pytest.param([("only", 12.0)], ["m1", "m2", "m3"], id="a single lexical hit"),
        pytest.param(
            [("x", 3.0), ("y", 3.0), ("z", 3.0)], ["m1", "m2", "m3"], id="all lexical scores equal"
        ),
    ],
)
def test_a_lexical_list_without_spread_is_calibrated_over_the_pool(lexical, leads):
    """'how does resync work': hits with a cosine about zero must not outrank the strong meaning
    matches; with no spread in its own list, a hit stands out against the pool's BM25 zeros, at
    most as far as the best meaning match stands out in the vector list."""
    words = [cand(key, {L: (i, raw)}, cosine=-0.0007) for i, (key, raw) in enumerate(lexical, 1)]
    ranking = rank(MEANING + words, OPEN)
    details = ranking.details()
    pool = [raw for _, raw in lexical] + [0.0] * len(MEANING)
    mean, std = zscores(pool)
    vector_mean, vector_std = zscores([0.62, 0.58, 0.55, 0.30, 0.10])  # the vector list
    cap = (0.62 - vector_mean) / vector_std
    for key, raw in lexical:
        assert details[key].lexical_z == pytest.approx(min((raw - mean) / std, cap))
    assert keys(ranking)[: len(leads)] == leads
    assert ranking.summary.calibration["lexical"][1:] == pytest.approx((mean, std))


def test_a_word_found_in_one_passage_only_wins_among_look_alikes():
    """Near-identical passages, one holding the query's marker word: a rare exact word decides."""
    alike = [
        cand(f"p{i}", {V: (i, 0.50 - i * 0.002)}, cosine=0.50 - i * 0.002) for i in range(1, 11)
    ]
    marked = cand("p7", {V: (7, 0.486), L: (1, 9.5)}, cosine=0.486)
    ranking = rank([c for c in alike if c.key != "p7"] + [marked], OPEN)
    assert keys(ranking)[0] == "p7"


def test_one_common_word_cannot_lift_a_passage_far_from_the_query_in_meaning():
    """Lexical hits with spread, all on one common word, cosine about zero: the best of them is
    exceptional within its own list, yet stays below every strong meaning match."""
    words = [
        cand(f"w{i}", {L: (i, raw)}, cosine=0.0)
        for i, raw in enumerate((4.0, 2.1, 2.0, 1.9, 1.8), 1)
    ]
    # the query's words weigh 40 in IDF; the best lexical hit reaches 4 of them (the common one)
    ranking = rank(MEANING + words, OPEN, query_idf=40.0)
    assert keys(ranking)[:3] == ["m1", "m2", "m3"]
    assert ranking.details()["w1"].lexical_z > 1.9  # it is the lexical list's outlier
    assert words_weight(0.5, ranking.summary.calibration, 40.0) == pytest.approx(
        0.5 * 4.0 / 40.0 / FULL_WEIGHT_IDF_SHARE
    )
    # a best hit that reaches a quarter of the query's IDF mass keeps the full weight
    assert words_weight(0.5, ranking.summary.calibration, 16.0) == 0.5
    assert keys(rank(MEANING + words, OPEN, query_idf=16.0))[0] == "w1"


def test_words_keep_their_weight_when_the_answer_holds_a_third_of_the_query_words():
    """A question put in other words than its answer's: the answer holds a third of the query's
    IDF mass, yet leads the words' list by far, and the model half misses its meaning. A third is
    more than FULL_WEIGHT_IDF_SHARE, so words keep the namespace's weight and the answer leads;
    weighed down in proportion below half the mass (a share measured to lose on collections it
    was not chosen on, docs/searching.md), it falls below a passage that only resembles the
    question."""
    resembling = [
        cand(f"r{i}", {V: (i, cos), L: (i + 1, raw)}, cosine=cos)
        for i, (cos, raw) in enumerate(((0.48, 7.0), (0.45, 6.0), (0.44, 5.9), (0.43, 5.8)), 1)
    ]
    tail = [
        cand(
            f"t{i}",
            {V: (i + 4, 0.40 - i * 0.01), L: (i + 5, 5.5 - i * 0.1)},
            cosine=0.40 - i * 0.01,
        )
        for i in range(1, 9)
    ]
    answer = cand("answer", {V: (13, 0.36), L: (1, 12.0)}, cosine=0.36)
    # the query's words weigh 36 in IDF; the answer's words reach 12 of them
    ranking = rank([*resembling, *tail, answer], OPEN, query_idf=36.0)
    assert ranking.summary.lexical_weight == 0.5
    assert keys(ranking)[:2] == ["answer", "r1"]


def test_few_hits_in_each_channel():
    ranking = rank(
        [
            cand("v", {V: (1, 0.6)}, cosine=0.6),
            cand("w", {V: (2, 0.5), L: (1, 3.0)}, cosine=0.5),
            cand("l", {L: (2, 1.0)}, cosine=0.4),
        ],
        OPEN,
    )
    details = ranking.details()
    assert keys(ranking) == ["w", "v", "l"]  # the one found by both, with the better words, leads
    assert all(0 < d.base < 1 for d in details.values())


def test_a_flat_vector_list_gives_no_unit_and_ranks_decide():
    ranking = rank(
        [
            cand("a", {V: (1, 0.5)}, cosine=0.5),
            cand("b", {V: (2, 0.5)}, cosine=0.5),
            cand("l1", {L: (1, 9.0)}, cosine=0.5),
            cand("l2", {L: (2, 1.0)}, cosine=0.5),
        ],
        OPEN,
    )
    details = ranking.details()
    assert all(d.base == pytest.approx(0.5) for d in details.values())  # no channel reaches the top
    assert keys(ranking)[0] in ("a", "l1")  # first in a channel: the RRF bonus orders the rest


def test_a_single_channel_with_hits_scores_relative_to_its_best():
    lexical = [cand(f"l{i}", {L: (i, bm25)}) for i, bm25 in enumerate((30.0, 9.0, 8.0), 1)]
    alone = rank(lexical, OPEN).details()
    assert alone["l2"].base == pytest.approx(9.0 / 30.0) and alone["l2"].base_channel == "lexical"
    vector = rank(
        [cand("v1", {V: (1, 0.4)}, cosine=0.4), cand("v2", {V: (2, 0.2)}, cosine=0.2)], OPEN
    ).details()
    assert vector["v1"].base == pytest.approx(0.4) and vector["v2"].base == pytest.approx(0.2)


def test_all_scores_equal_in_both_channels():
    same = [cand(k, {V: (i, 0.5), L: (i, 2.0)}, cosine=0.5) for i, k in enumerate("abc", 1)]
    ranking = rank(same, OPEN)
    assert keys(ranking) == ["a", "b", "c"]  # ranks, then the stable tie-break
    assert {d.base for d in ranking.kept} == {0.5}


def test_names_add_rank_evidence_but_do_not_set_the_base():
    named = cand("named", {N: (1, 1.0), V: (5, 0.1)}, cosine=0.1)
    details = rank(MEANING + [named], OPEN).details()
    assert details["named"].base_channel == "fused" and details["named"].base < 0.62
    assert details["named"].rrf_bonus == pytest.approx(1 / 61 + 1 / 65)


def test_no_channel_is_stuck_at_zero():
    ranking = rank(
        [cand("low", {L: (2, 0.0)}), cand("top", {L: (1, 5.0)}), cand("neg", {V: (1, -0.2)})], OPEN
    )
    assert all(d.base > 0 for d in ranking.kept)


def test_rrf_bonus_breaks_ties_in_favour_of_agreement():
    a = cand("a", {V: (1, 0.6)}, cosine=0.6)
    b = cand("b", {V: (2, 0.6), L: (1, 3.0)}, cosine=0.6)
    c = cand("c", {L: (2, 1.0)}, cosine=0.1)
    with_rrf = rank([a, b, c], RankerParams(floor=0.0, priority_weight=0.0, lexical_weight=0.0))
    assert RankerParams().rrf_weight == 1.0
    assert with_rrf.details()["b"].rrf_bonus == pytest.approx(1 / 62 + 1 / 61)
    assert keys(with_rrf)[:2] == ["b", "a"]  # equal meaning: the one the words also found first


def test_recency_boost_and_zero_weight_changes_nothing_byte_for_byte():
    old = cand("old", {V: (1, 0.80)}, age_days=3000)
    new = cand("new", {V: (2, 0.79)}, age_days=1)
    plain = rank([old, new], OPEN)
    zero = rank(
        [old, new], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0, recency_weight=0.0)
    )
    assert plain == zero and keys(plain) == ["old", "new"]
    boosted = rank(
        [old, new],
        RankerParams(
            floor=0.0,
            priority_weight=0.0,
            rrf_weight=1.0,
            recency_weight=3.0,
            recency_half_life_days=30,
        ),
    )
    assert keys(boosted) == ["new", "old"]
    spread = 0.005  # the two cosines' standard deviation: the boosts' unit
    assert boosted.details()["new"].recency_boost == pytest.approx(3.0 * spread * math.exp(-1 / 30))


def test_priority_boost_follows_the_source_priority():
    a = cand("a", {V: (1, 0.70)}, priority=-1.0)
    b = cand("b", {V: (2, 0.69)}, priority=1.0)
    assert keys(rank([a, b], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0))) == [
        "a",
        "b",
    ]
    ranking = rank([a, b], RankerParams(floor=0.0, priority_weight=3.0, rrf_weight=1.0))
    assert keys(ranking) == ["b", "a"]
    assert ranking.details()["b"].priority_boost == pytest.approx(3.0 * 0.005)


def test_a_priority_moves_a_passage_past_the_same_neighbours_under_any_cosine_scale():
    """The bundled model spreads one query's cosines widely, multilingual-e5 packs them near 0.8:
    the same priority lifts a passage past the same neighbours under both, where a boost in raw
    cosine would lift it a place under one and to the top under the other. (RRF off: its bonus
    is on the cosine scale.)"""
    cosines = (0.62, 0.61, 0.60, 0.59, 0.58, 0.57, 0.56, 0.40, 0.35, 0.30)

    def ranked(scale):
        found = [
            cand(f"p{i}", {V: (i, scale(c))}, cosine=scale(c), priority=0.3 if i == 7 else 0.0)
            for i, c in enumerate(cosines, 1)
        ]
        return rank(found, RankerParams(floor=0.0, rrf_weight=0.0))

    bundled, packed = ranked(lambda c: c), ranked(lambda c: 0.8 + (c - 0.5) / 8)
    assert (
        keys(bundled)
        == keys(packed)
        == ["p1", "p2", "p3", "p4", "p7", "p5", "p6", "p8", "p9", "p10"]
    )
    _, spread = zscores(cosines)
    assert bundled.details()["p7"].priority_boost == pytest.approx(0.75 * 0.3 * spread)
    assert packed.details()["p7"].priority_boost == pytest.approx(0.75 * 0.3 * spread / 8)


def test_boosts_need_a_list_with_spread():
    """A flat meaning list with words beside it: the words' relative spread is the unit; with no
    spread anywhere, a boost has nothing to count in and adds nothing (not even -0.0)."""
    flat = [
        cand(f"f{i}", {V: (i, 0.5), L: (i, raw)}, cosine=0.5, priority=-1.0 if i == 1 else 1.0)
        for i, raw in enumerate((9.0, 8.0, 7.8), 1)
    ]
    _, spread = zscores([9.0, 8.0, 7.8])
    assert rank(flat, RankerParams(floor=0.0)).details()["f2"].priority_boost == pytest.approx(
        0.75 * spread / 9.0
    )
    alone = [cand(f"a{i}", {V: (i, 0.5)}, cosine=0.5, priority=-1.0) for i in (1, 2)]
    boosts = [d.priority_boost for d in rank(alone, RankerParams(floor=0.0)).details().values()]
    assert boosts == [0.0, 0.0] and all(math.copysign(1.0, b) == 1.0 for b in boosts)


def test_without_meaning_boosts_count_in_the_words_relative_spread():
    words = [
        cand(f"w{i}", {L: (i, raw)}, priority=1.0 if i == 3 else 0.0)
        for i, raw in enumerate((9.0, 8.0, 7.8), 1)
    ]
    ranking = rank(words, RankerParams(floor=0.0, rrf_weight=0.0))
    _, spread = zscores([9.0, 8.0, 7.8])
    assert ranking.details()["w3"].priority_boost == pytest.approx(0.75 * spread / 9.0)
    assert keys(ranking) == ["w1", "w3", "w2"]


def test_identifier_query_makes_unconfirmed_vector_only_candidates_ineligible():
    meaning = cand("meaning", {V: (1, 0.9)})
    exact = cand("exact", {ID: (1, 1.0), V: (5, 0.5)})
    lexical = cand("lexical", {L: (1, 3.0)})
    loose = rank([meaning, exact, lexical], OPEN)
    assert "meaning" in keys(loose)
    strict = rank([meaning, exact, lexical], OPEN, identifier_query=True)
    assert keys(strict) == ["lexical", "exact"] or keys(strict) == ["exact", "lexical"]
    dropped = strict.details()["meaning"]
    assert (dropped.eligible, dropped.dropped_by) == (False, "eligibility")
    assert strict.summary.dropped_eligibility == 1


def test_exact_identifier_match_gets_a_strong_fixed_base():
    exact = cand("exact", {ID: (1, 1.0)})
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
    ranking = rank(
        [top, middle, agreed], RankerParams(floor=0.6, priority_weight=0.0, lexical_weight=0.0)
    )
    assert keys(ranking) == ["top", "middle", "agreed"]
    assert ranking.details()["agreed"].bypassed_threshold
    no_bypass = rank(
        [top, middle, agreed],
        RankerParams(floor=0.6, priority_weight=0.0, lexical_weight=0.0, bypass_channels=3),
    )
    assert keys(no_bypass) == ["top", "middle"]


def test_mmr_diversifies_and_records_its_penalty():
    a = cand("a", {V: (1, 0.90)}, embedding=(1.0, 0.0))
    a2 = cand("a2", {V: (2, 0.89)}, embedding=(0.99, 0.01))
    b = cand("b", {V: (3, 0.80)}, embedding=(0.0, 1.0))
    assert keys(rank([a, a2, b], OPEN)) == ["a", "a2", "b"]
    diverse = rank(
        [a, a2, b], RankerParams(floor=0.0, priority_weight=0.0, rrf_weight=1.0, mmr_lambda=0.5)
    )
    assert keys(diverse) == ["a", "b", "a2"]
    assert diverse.details()["a2"].mmr_penalty > 0.4


def test_mmr_seeds_one_per_kind_only_when_relevant():
    chunk = cand("chunk", {V: (1, 0.90)}, embedding=(1.0, 0.0))
    chunk2 = cand("chunk2", {V: (2, 0.88)}, embedding=(0.9, 0.1))
    summary = cand("summary", {V: (3, 0.85)}, kind="summary", embedding=(0.95, 0.05))
    capability = cand("cap", {V: (4, 0.20)}, kind="capability", embedding=(0.0, 1.0))
    params = RankerParams(
        floor=0.0, priority_weight=0.0, rrf_weight=1.0, mmr_lambda=0.3, seed_ratio=0.8
    )
    ranking = rank([chunk, chunk2, summary, capability], params)
    # the summary is a relevant kind: seeded second despite being similar; the irrelevant
    # capability is not forced in as a seed even though it is the most different
    assert keys(ranking)[:2] == ["chunk", "summary"]
    assert ranking.details()["summary"].mmr_penalty == 0.0
    unseeded = rank(
        [chunk, chunk2, summary, capability],
        RankerParams(
            floor=0.0, priority_weight=0.0, rrf_weight=1.0, mmr_lambda=0.3, seed_ratio=1.0
        ),
    )
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


def test_a_query_sharing_no_word_with_the_namespace_is_ranked_by_meaning_and_says_so():
    from retrieval.ranker import NO_SHARED_TERM

    found = [cand("a", {V: (1, 0.7)}, cosine=0.7), cand("b", {V: (2, 0.4)}, cosine=0.4)]
    empty = rank(found, OPEN, query_idf=0.0)  # the lexical channel ran and no term occurs here
    assert empty.summary.channel_notes == (NO_SHARED_TERM,)
    assert empty.summary.lexical_weight == 0.0 and keys(empty) == ["a", "b"]
    assert "ranked by meaning alone" in NO_SHARED_TERM.reason
    # the lexical channel not asked for (query_idf None) or words found: nothing to report
    assert rank(found, OPEN).summary.channel_notes == ()
    with_words = found + [cand("c", {L: (1, 3.0)}, cosine=0.1)]
    assert rank(with_words, OPEN, query_idf=3.0).summary.channel_notes == ()
