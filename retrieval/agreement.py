"""How well the meaning model reads a namespace's own text, measured without judged queries: the
namespace's own headings are searched by meaning alone and by words alone, and the share of
results the two lists hold in common is the agreement. Pure: the standard library.

A model that reads a language finds, for a heading, passages on its subject, which share its
words, so its list and the words' overlap; one that does not read it (the bundled English model
on Japanese or Arabic) ranks by accident of its word pieces, and the lists part. Each heading's
own document is left out of both lists by the caller (both channels find the passage that holds
the heading; that says nothing). retrieval/meaning_spread.py measures it with the namespace's
sample and retrieval/fusion.py `graded_weights` turns it into how much meaning weighs.
"""

from __future__ import annotations

NEAREST = 10  # the first results of each list compared
MIN_HEADINGS = 20  # fewer searched headings than this do not tell


def agreement(lists: list[tuple[list[int], list[int]]]) -> float | None:
    """The mean share of the NEAREST first results that each heading's meaning list (first of a
    pair) and words list (second) hold in common, over the headings both channels found
    something for; None with fewer than MIN_HEADINGS of them."""
    shares = [
        len(set(by_meaning[:NEAREST]) & set(by_words[:NEAREST])) / NEAREST
        for by_meaning, by_words in lists
        if by_meaning and by_words
    ]
    if len(shares) < MIN_HEADINGS:
        return None
    return sum(shares) / len(shares)
