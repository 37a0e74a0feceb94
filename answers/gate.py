"""Decide whether a search's evidence is strong enough for the model to answer from. Pure.

A strong match by meaning (`retrieval.hits.StrongMatch`) says the knowledge base is on the subject,
not that it holds the answer: a SciFact claim whose evidence was removed still clears the floor (289
of 300). So one of the sources given must also be a strong match whose best passage carries
WORDS_SHARE of the question's IDF mass, or that the question names whole; a words-channel hit within
CONFIRM_MARGIN of the floor counts too. Anything else is "not covered" (docs/answers.md#the-gate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval.ranker import LEXICAL, NAMES

if TYPE_CHECKING:  # read only for their fields: the gate stays free of Django
    from retrieval.results import Hit, SearchResult

CONFIRM_MARGIN = (
    0.05  # a first lexical hit this far below the strong floor is still confirmed by its cosine
)
# The share of the question's IDF mass a source's best passage must carry. Chosen by
# `kb_answer_bench`
# on the tuning half of SciFact's claims (the highest share that still answers 9 in 10 answerable
# claims of that half), and scored on the other half: docs/answers.md#the-gate.
WORDS_SHARE = 0.55
RULES = (
    "strong-match",
    "lexical-confirmed",
)  # the rules that can open the gate, in the order they are tried


@dataclass(frozen=True)
class Gate:
    answer: bool
    rule: str  # strong-match | lexical-confirmed | words-missing | no-strong-match | no-results
    reason: str

    def as_dict(self) -> dict:
        return {"answer": self.answer, "rule": self.rule, "reason": self.reason}


def decide(
    result: SearchResult,
    *,
    floor: float | None = None,
    rules: tuple[str, ...] = RULES,
    words_share: float | None = WORDS_SHARE,
) -> Gate:
    """`floor`: the strong cosine of the deployment's model
    (`kb.embedding.embedders.strong_cosine`);
    without it only the strong match can open the gate. `rules`: which rules may open it, and
    `words_share`: the share of the question's words a source must carry (None: not asked); a
    benchmark leaves one out, or tries another share, to show what it does."""
    if not result.hits:
        return Gate(False, "no-results", "the search found no passage")
    idf = result.query_idf

    def carries(hit: Hit) -> bool:
        return words_share is None or _words_carry(hit, idf, words_share)

    strong = [d.sections[0] for d in result.cited] if "strong-match" in rules else []
    best = next((hit for hit in strong if carries(hit)), None)
    if best is not None:
        if best.cosine is not None and floor is not None and best.cosine >= floor:
            why = f"its cosine {best.cosine:.3f} reaches the strong floor {floor:.3f}"
        else:
            why = "its words carry the question (meaning not used) or the question names it"
        return Gate(
            True,
            "strong-match",
            f"{best.title!r} is a strong match: {why}{_words(best, idf, words_share)}",
        )
    top = result.hits[0]
    words = top.details.channels.get(LEXICAL)
    if (
        "lexical-confirmed" in rules
        and floor is not None
        and words is not None
        and words.rank == 1
        and top.cosine is not None
        and top.cosine >= floor - CONFIRM_MARGIN
        and carries(top)
    ):
        return Gate(
            True,
            "lexical-confirmed",
            f"{top.title!r} is the words channel's first hit and its cosine {top.cosine:.3f} is "
            "within "
            f"{CONFIRM_MARGIN} of the strong floor {floor:.3f}{_words(top, idf, words_share)}",
        )
    if strong:
        first = strong[0]
        return Gate(
            False,
            "words-missing",
            f"{first.title!r} is on the question's subject (a strong match by meaning), but no "
            "strong "
            f"match carries the question's own words{_words(first, idf, words_share)}",
        )
    cosine = max((h.cosine for h in result.hits if h.cosine is not None), default=None)
    seen = f"the best cosine is {cosine:.3f}" if cosine is not None else "meaning was not used"
    below = (
        f", below the strong floor {floor:.3f}" if floor is not None and cosine is not None else ""
    )
    return Gate(False, "no-strong-match", f"no passage is a strong match: {seen}{below}")


def words_carried(hit: Hit, query_idf: float | None) -> float | None:
    """The share of the question's IDF mass a passage's words carry (its BM25 score over the score
    of
    a passage holding every query term once; above 1 when it repeats them); None when the words
    channel did not run."""
    if query_idf is None:
        return None
    words = hit.details.channels.get(LEXICAL)
    return (words.raw / query_idf) if words is not None and query_idf > 0 else 0.0


def _words_carry(hit: Hit, query_idf: float | None, share: float) -> bool:
    """Whether a passage carries `share` of the question's words, or the question names it whole.
    Without the words channel nothing can tell, and the strong match decides alone."""
    name = hit.details.channels.get(NAMES)
    carried = words_carried(hit, query_idf)
    return carried is None or carried >= share or (name is not None and name.raw >= 1.0)


def _words(hit: Hit, query_idf: float | None, share: float | None) -> str:
    """The words part of a reason: what share of the question's words the passage carries."""
    if share is None:
        return ""
    carried = words_carried(hit, query_idf)
    if carried is None:
        return " (the words channel did not run: its words are not asked)"
    name = hit.details.channels.get(NAMES)
    named = " and the question names it" if name is not None and name.raw >= 1.0 else ""
    return f"; its words carry {carried:.0%} of the question's (at least {share:.0%} asked){named}"


def decide_all(
    results: list[SearchResult],
    *,
    floor: float | None = None,
    rules: tuple[str, ...] = RULES,
    words_share: float | None = WORDS_SHARE,
) -> Gate:
    """One gate over several namespaces' searches: open when any one's is (the first such), else
    the first's."""
    gates = [
        decide(result, floor=floor, rules=rules, words_share=words_share) for result in results
    ]
    return next(
        (gate for gate in gates if gate.answer),
        gates[0] if gates else Gate(False, "no-results", "no namespace was searched"),
    )
