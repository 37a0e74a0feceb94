"""How well the meaning model reads a namespace's own text, measured without judged queries: the
namespace's own headings are searched by meaning alone and by words alone, and the share of
results the two lists hold in common, against the share they hold in common for unrelated
headings, is the reading. Pure: the standard library.

A model that reads a language finds, for a heading, passages on its subject, which share its
words, so its list and the words' overlap; one that does not read it (the bundled English model
on Persian or Chinese) ranks by accident of its word pieces and finds the same few passages
whatever the heading (Persian's handbook: the acknowledgements and "how to migrate" first for
most of its questions). Those passages are long and hold common words, so the words' lists hold
them too, as often for an unrelated heading as for this one: the share in common alone (0.100
on both the Persian and the Russian handbook) cannot tell that model from one that reads a little.
Chance is measured on the namespace itself: each heading's words list against every other
heading's meaning list. The lift, the share in common over chance, would be 1 where meaning's
list did not depend on the heading at all; it is low where the model reads the text hardly
(Persian 2.9, Chinese 2.4) and higher where it reads some (Russian 4.7, German 5.9, Japanese
8.5; the handbook's headings, bundled model).

Each heading's own document is left out of both lists by the caller (both channels find the
passage that holds the heading; that says nothing). retrieval/meaning_spread.py measures it with
the namespace's sample and retrieval/fusion.py `graded_weights` turns it into how much meaning
weighs.
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
