"""How well the meaning model reads a namespace's own text, measured without judged queries.

Pure: the standard library. The namespace's headings are searched by meaning alone and by words
alone, each heading's own document left out by the caller. A model that reads the language finds
passages on the heading's subject, which share its words; one that does not finds the same few long
passages whatever the heading, and the words' lists hold those too. So the share in common alone
cannot tell them apart (0.100 on both the Persian and the Russian handbook): the reading is the
lift, the share over chance, chance being a heading's words list against the other headings' meaning
lists (Persian 2.9, Russian 4.7, Japanese 8.5). retrieval/fusion.py `graded_weights` turns it into a
weight.
"""

from __future__ import annotations

import math
from typing import NamedTuple

NEAREST = 10  # the first results of each list compared
MIN_HEADINGS = 20  # fewer searched headings than this do not tell


class Reading(NamedTuple):
    """What the headings say: the mean share of the NEAREST first results a heading's meaning and
    words lists hold in common (`shared`), and the mean share a heading's words list holds in
    common with another heading's meaning list (`chance`)."""

    shared: float
    chance: float

    @property
    def lift(self) -> float:
        """How many times chance the lists share: 0 where they share nothing, infinite where they
        share something and unrelated headings' lists nothing."""
        if self.shared <= 0:
            return 0.0
        return self.shared / self.chance if self.chance > 0 else math.inf

    def clause(self, headings: str = "this namespace's own headings") -> str:
        """What was measured, in the words the weights' reason and the search's note use."""
        lift = self.lift
        times = (
            "and nothing for unrelated headings"
            if math.isinf(lift)
            else f"{lift:.1f} times what they share for unrelated headings"
        )
        return (
            f"searched for {headings}, meaning and words find {self.shared:.0%} of the same "
            f"passages, {times}"
        )


def agreement(lists: list[tuple[list[int], list[int]]]) -> Reading | None:
    """The reading of each heading's meaning list (first of a pair) and words list (second), over
    the headings both channels found something for; None with fewer than MIN_HEADINGS of them."""
    found = [
        (set(by_meaning[:NEAREST]), set(by_words[:NEAREST]))
        for by_meaning, by_words in lists
        if by_meaning and by_words
    ]
    if len(found) < MIN_HEADINGS:
        return None
    shared = sum(len(meaning & words) for meaning, words in found) / (NEAREST * len(found))
    crossed = sum(
        len(meaning & words)
        for i, (_, words) in enumerate(found)
        for j, (meaning, _) in enumerate(found)
        if i != j
    )
    return Reading(shared, crossed / (NEAREST * len(found) * (len(found) - 1)))
