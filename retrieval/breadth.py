"""How far a search's best passage stands beyond chance among its namespace's passages, and what
a namespace's searches say about it: a broad collection (an encyclopedia), where meaning isolates
a question's subject and its common words match passages on other subjects, or a narrow one (a
manual, abstracts of one field), where many passages are near any question and words tell them
apart. Pure: standard library only.

A search logs its excess (`QueryLog.meaning_excess`, computed by retrieval/meaning_spread.py);
the query log's writer keeps each namespace's median over its latest searches
(`MeaningEstimate`); retrieval/fusion.py turns a broad namespace's median into its weights. The
threshold lies midway between the English collection of the highest median that ranks better
with its words (a dictionary, 2.26) and the one of the lowest median that ranks better without
them (DBpedia, 2.99), chosen leaving one collection out
(docs/benchmarks.md#the-default-without-judged-queries).
"""

from __future__ import annotations

import math

WORDS_OFF_EXCESS = 2.6  # a median excess from which a namespace is broad
ESTIMATE_MIN_SEARCHES = 20  # searches with an excess a median needs


def chance_maximum(n: int) -> float:
    """Where the largest of `n` standard normal draws most likely lies (the location of their
    extreme-value distribution): how far above the mean the best of n passages stands when none
    is about the query."""
    if n < 3:
        return 0.0
    a = math.sqrt(2 * math.log(n))
    return a - (math.log(math.log(n)) + math.log(4 * math.pi)) / (2 * a)


def meaning_excess(top: float, mean: float, spread: float, passages: int) -> float | None:
    """How many standard deviations a query's best cosine stands above the cosines of every
    passage of its namespace (their `mean` and `spread` for this query), beyond what chance gives
    the best of that many passages. None without a finite spread to count in."""
    if (
        not (math.isfinite(top) and math.isfinite(mean) and math.isfinite(spread))
        or spread <= 0
        or passages < 3
    ):
        return None
    return (top - mean) / spread - chance_maximum(passages)


def log_summary(median_excess: float, searches: int) -> str:
    """What a namespace's latest searches say, in the words its weights' reason and its console
    use."""
    return (
        f"{searches} of its latest searches stood a median {median_excess:.1f} standard "
        "deviations beyond chance"
    )


def broad(median_excess: float | None, searches: int) -> bool:
    """Whether a namespace whose latest `searches` searches with an excess stood a median
    `median_excess` beyond chance is a broad collection."""
    return (
        median_excess is not None
        and math.isfinite(median_excess)
        and searches >= ESTIMATE_MIN_SEARCHES
        and median_excess >= WORDS_OFF_EXCESS
    )
