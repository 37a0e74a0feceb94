"""How far a search's best passage stands beyond chance among its namespace's passages, and what
a namespace's searches say about it, in the words its console uses. Pure: standard library only.

A search logs its excess (`QueryLog.meaning_excess`, computed by retrieval/meaning_spread.py);
the query log's writer keeps each namespace's median over its latest searches
(`MeaningEstimate`), which the namespace's console shows. It does not set the weights: words off
from a broad median helped DBpedia by 0.017 and cost WordNet, a dictionary it was not chosen on,
0.098 (docs/benchmarks.md#the-default-without-judged-queries)."""

from __future__ import annotations

import math


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
    """What a namespace's latest searches say, in the words its console uses."""
    return (
        f"{searches} of its latest searches stood a median {median_excess:.1f} standard "
        "deviations beyond chance"
    )
