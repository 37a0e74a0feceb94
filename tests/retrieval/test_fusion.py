"""Fitting the lexical weight to judged queries: cross-validated, ties to the default; and how
far a search's best passage stands beyond chance. Pure."""

import math

import pytest

from retrieval.breadth import chance_maximum, meaning_excess
from retrieval.fusion import DEFAULT_LEXICAL_WEIGHT, WEIGHT_GRID, fit_weight


def grid(per_query):
    """per_query[q] = the weight at which query q scores 1.0; it scores 0 elsewhere."""
    return {w: {q: 1.0 if best == w else 0.0 for q, best in per_query.items()} for w in WEIGHT_GRID}


def test_the_weight_best_on_all_queries_is_chosen_and_held_out_scores_are_reported():
    scores = grid({f"q{i}": 0.0 for i in range(8)} | {"q8": 1.0, "q9": 1.0})
    fit = fit_weight(scores, folds=5)
    assert fit.weight == 0.0
    assert fit.cross_validated == pytest.approx(0.8)  # q8 and q9 are held out under 0.0, and lose
    assert fit.default_score == 0.0
    assert set(fit.chosen_per_query) == set(scores[0.0])


def test_a_weight_that_only_fits_its_own_fold_does_not_grade_itself():
    """Each of five folds has its own best weight: cross-validation exposes the overfit."""
    best = {0: 0.0, 1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0}
    scores = grid({f"q{i}": best[i % 5] for i in range(10)})
    fit = fit_weight(scores, folds=5)
    in_sample = max(sum(v.values()) for v in scores.values()) / 10
    assert fit.cross_validated < in_sample


def test_ties_go_to_the_default_weight():
    flat = {w: {"a": 0.5, "b": 0.5} for w in WEIGHT_GRID}
    assert fit_weight(flat).weight == DEFAULT_LEXICAL_WEIGHT


def test_no_queries_is_an_error():
    with pytest.raises(ValueError):
        fit_weight({w: {} for w in WEIGHT_GRID})


def test_a_single_judged_query_is_scored_with_the_default_not_its_own_fit():
    scores = grid({"only": 1.0})
    fit = fit_weight(scores)
    assert fit.weight == 1.0  # what the namespace will use
    assert fit.chosen_per_query == {"only": DEFAULT_LEXICAL_WEIGHT} and fit.cross_validated == 0.0


def test_chance_is_where_the_best_of_n_unrelated_passages_most_likely_lies():
    """Against the mode of the largest of n normal draws, found on the exact density
    n φ(x) Φ(x)^(n-1)."""

    def mode(n):
        def log_density(x):
            return -0.5 * x * x + (n - 1) * math.log(0.5 * math.erfc(-x / math.sqrt(2)))

        return max((i / 1000 for i in range(6000)), key=log_density)

    for n in (50, 1000, 5000, 100_000):
        assert chance_maximum(n) == pytest.approx(mode(n), abs=0.02)
    assert chance_maximum(2) == 0.0 and chance_maximum(5000) > chance_maximum(500) > chance_maximum(
        50
    )


def test_the_excess_counts_the_best_passage_beyond_chance_in_the_querys_own_spread():
    assert meaning_excess(0.6, 0.1, 0.1, 5000) == pytest.approx(5.0 - chance_maximum(5000))
    # the same standing on another model's cosine scale (e5: packed near 0.8) is the same excess
    assert meaning_excess(0.85, 0.8, 0.01, 5000) == pytest.approx(
        meaning_excess(0.6, 0.1, 0.1, 5000)
    )
    assert meaning_excess(0.6, 0.1, 0.0, 5000) is None and meaning_excess(0.6, 0.1, 0.1, 2) is None
    assert meaning_excess(0.6, float("nan"), 0.1, 5000) is None
