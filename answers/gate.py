"""The honesty gate: whether a search's evidence is strong enough for the model to answer from. Pure.

It is built on the ranker's strong match (`retrieval.service.StrongMatch`, the cited tier): a
passage whose cosine clears the model's floor, or, where meaning was not used, whose words carry
half the query's IDF mass or which the query names whole. One rule adds to it: a lexical hit the
cosine confirms, the best passage found first by the words channel whose cosine stands within
CONFIRM_MARGIN of the floor (a question that quotes a passage's rare words, phrased unlike it).
Anything else is "not covered", and the reader is shown the closest passages instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval.ranker import LEXICAL

if TYPE_CHECKING:  # read only for its fields: the gate stays free of Django
    from retrieval.service import SearchResult

CONFIRM_MARGIN = 0.05  # a first lexical hit this far below the strong floor is still confirmed by its cosine
RULES = ("strong-match", "lexical-confirmed")  # the rules that can open the gate, in the order they are tried


@dataclass(frozen=True)
class Gate:
    answer: bool
    rule: str  # strong-match | lexical-confirmed | no-strong-match | no-results
    reason: str

    def as_dict(self) -> dict:
        return {"answer": self.answer, "rule": self.rule, "reason": self.reason}


def decide(result: SearchResult, *, floor: float | None = None, rules: tuple[str, ...] = RULES) -> Gate:
    """`floor`: the strong cosine of the deployment's model (`kb.embedding.embedders.strong_cosine`);
    without it only the strong match can open the gate. `rules`: which rules may open it (a
    benchmark leaves one out to show what it adds)."""
    if not result.hits:
        return Gate(False, "no-results", "the search found no passage")
    if result.cited and "strong-match" in rules:
        best = result.cited[0].sections[0]
        if best.cosine is not None and floor is not None and best.cosine >= floor:
            why = f"cosine {best.cosine:.3f} reaches the strong floor {floor:.3f}"
        else:
            why = "its words carry the query (meaning not used) or the query names it"
        return Gate(True, "strong-match", f"{best.title!r} is a strong match: {why}")
    top = result.hits[0]
    words = top.details.channels.get(LEXICAL)
    if "lexical-confirmed" in rules and floor is not None and words is not None and words.rank == 1 \
            and top.cosine is not None and top.cosine >= floor - CONFIRM_MARGIN:
        return Gate(True, "lexical-confirmed",
                    f"{top.title!r} is the words channel's first hit and its cosine {top.cosine:.3f} is within "
                    f"{CONFIRM_MARGIN} of the strong floor {floor:.3f}")
    best = max((h.cosine for h in result.hits if h.cosine is not None), default=None)
    seen = f"the best cosine is {best:.3f}" if best is not None else "meaning was not used"
    below = f", below the strong floor {floor:.3f}" if floor is not None and best is not None else ""
    return Gate(False, "no-strong-match", f"no passage is a strong match: {seen}{below}")


def decide_all(results: list[SearchResult], *, floor: float | None = None, rules: tuple[str, ...] = RULES) -> Gate:
    """One gate over several namespaces' searches: open when any one's is (the first such), else the first's."""
    gates = [decide(result, floor=floor, rules=rules) for result in results]
    return next((gate for gate in gates if gate.answer), gates[0] if gates else Gate(False, "no-results",
                                                                                      "no namespace was searched"))
