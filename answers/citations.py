"""Check every sentence of an answer against the sources it cites. Pure.

A citation `[n]` holds when source n states the sentence, read lexically, in its closest window (one
or two neighbouring sentences, or its first sentence with another): SUPPORTED_SHARE of the content
words, every number and name, every quoted span verbatim, the same negations, no opposite direction
word and no "only", "all", "always" the window does not say. Lexical checks are what a reader checks
by eye and cannot be talked into agreeing; what they miss is measured in
docs/answers.md#the-checker.

Verdicts: supported (shown); unsupported (shown, marked); dropped (cites nothing the model was
given, so nothing can be checked: left out of the answer shown, kept in the log); abstention (the
model's "not covered", counted in none of the three).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from answers.claim_words import (
    ABSOLUTES,
    DIRECTIONS,
    NEGATIONS,
    STOPWORDS,
    WORD,
    fold,
    names,
    numbers_in,
    prefixed,
    stem,
    stems,
)

# of a sentence's content stems found in its closest window of the source: chosen on the tuning half
# of the hand labels and scored on the other (kb_answer_bench; docs/answers.md#the-checker)
SUPPORTED_SHARE = 0.6
MIN_QUOTE_WORDS = 3
NOT_COVERED = "The knowledge base does not cover this."

MARKER = re.compile(
    r"\[\s*(?:sources?\s*)?(\d{1,3}(?:\s*[,;]\s*(?:sources?\s*)?\d{1,3})*)\s*\]", re.I
)
# a sentence ends at . ! ? (and the closing quotes, brackets and citation markers after it) before a
# space, or at a line break
SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?:\s*\[[^\]\n]{1,40}\])*(?=\s|$)|\n+")
QUOTE = re.compile(r"[\"“”]([^\"“”]+)[\"“”]")


@dataclass(frozen=True)
class CitationCheck:
    source: int
    holds: bool
    share: float  # of the sentence's content stems found in the source
    reason: str


@dataclass(frozen=True)
class Sentence:
    text: str  # as the model wrote it, markers included
    citations: tuple[int, ...]
    verdict: str  # supported | unsupported | dropped | abstention
    reason: str
    checks: tuple[CitationCheck, ...] = ()

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "citations": list(self.citations),
            "verdict": self.verdict,
            "reason": self.reason,
            "checks": [
                {
                    "source": c.source,
                    "holds": c.holds,
                    "share": round(c.share, 3),
                    "reason": c.reason,
                }
                for c in self.checks
            ],
        }


@dataclass(frozen=True)
class Checked:
    sentences: tuple[Sentence, ...]
    counts: dict[str, int] = field(
        default_factory=dict
    )  # sentences, supported, unsupported, dropped

    @property
    def text(self) -> str:
        """The answer as shown: every sentence but the dropped ones."""
        return " ".join(s.text for s in self.sentences if s.verdict != "dropped")


def check(answer_text: str, sources: dict[int, str], *, share: float = SUPPORTED_SHARE) -> Checked:
    """Split `answer_text` into sentences and check each one's citations against `sources`
    (number -> the text the model was given under that number: its seeded passage and what it
    read)."""
    lexed = {number: _Lexed.of(text) for number, text in sources.items()}
    sentences = tuple(_verdict(sentence, lexed, share) for sentence in split_sentences(answer_text))
    counts = {"sentences": len(sentences)}
    for verdict in ("supported", "unsupported", "dropped"):
        counts[verdict] = sum(1 for s in sentences if s.verdict == verdict)
    return Checked(sentences, counts)


def dropping(checked: Checked, drop, reason: str) -> Checked:
    """`checked` with the sentences `drop(text)` is true of turned to dropped, for `reason`, and
    their text withheld (what they said is what must not be passed on)."""
    sentences = tuple(
        Sentence("", s.citations, "dropped", reason) if drop(s.text) else s
        for s in checked.sentences
    )
    counts = {"sentences": len(sentences)}
    for verdict in ("supported", "unsupported", "dropped"):
        counts[verdict] = sum(1 for s in sentences if s.verdict == verdict)
    return Checked(sentences, counts)


def split_sentences(text: str) -> list[str]:
    """Sentences in order, each with the citation markers that close it; blank pieces dropped."""
    pieces, start = [], 0
    for end in SENTENCE_END.finditer(text):
        pieces.append(text[start : end.end()])
        start = end.end()
    pieces.append(text[start:])
    return [" ".join(piece.split()) for piece in pieces if piece.strip(" \n\t-*•")]


def citations_of(sentence: str) -> tuple[int, ...]:
    numbers = []
    for marker in MARKER.finditer(sentence):
        numbers += [int(n) for n in re.findall(r"\d+", marker.group(1))]
    return tuple(dict.fromkeys(numbers))


def _verdict(sentence: str, sources: dict[int, _Lexed], needed: float) -> Sentence:
    cited = citations_of(sentence)
    claim = MARKER.sub(" ", sentence)
    if not cited:
        if fold(NOT_COVERED).rstrip(".") in fold(claim):
            return Sentence(
                sentence, cited, "abstention", "says the knowledge base does not cover the question"
            )
        return Sentence(sentence, cited, "dropped", "cites no source")
    given = [n for n in cited if n in sources]
    if not given:
        return Sentence(
            sentence,
            cited,
            "dropped",
            f"cites {', '.join(f'[{n}]' for n in cited)}, which the answer was not given",
        )
    checks = tuple(_check(claim, n, sources[n], needed) for n in given)
    if any(c.holds for c in checks):
        return Sentence(
            sentence,
            cited,
            "supported",
            "found in " + ", ".join(f"[{c.source}]" for c in checks if c.holds),
            checks,
        )
    return Sentence(
        sentence,
        cited,
        "unsupported",
        "; ".join(f"[{c.source}]: {c.reason}" for c in checks),
        checks,
    )


@dataclass(frozen=True)
class _Window:
    """One sentence of a source, two neighbouring ones, or its first with another: where a claim is
    looked for."""

    stems: frozenset[str]
    words: frozenset[str]  # its words, unstemmed, for the direction words
    text: str  # folded, where names are looked for
    denied: frozenset[str]  # the stems a negation governs (`_denied`)
    numbers: frozenset[str]


@dataclass(frozen=True)
class _Lexed:
    folded: str  # lower case, accents kept, whitespace collapsed: where quotes are looked for
    numbers: frozenset[str]
    windows: tuple[
        _Window, ...
    ]  # its sentences, each two neighbours together, the first with each other

    @classmethod
    def of(cls, text: str) -> _Lexed:
        folded = fold(text)
        sentences = [_window(sentence) for sentence in split_sentences(text)] or [_window(text)]
        pairs = [_joined(a, b) for a, b in zip(sentences, sentences[1:], strict=False)]
        # the first sentence (a title, a heading) names what every other one is about
        titled = [_joined(sentences[0], s) for s in sentences[2:]]
        return cls(folded, frozenset(numbers_in(folded)), tuple(sentences + pairs + titled))


def _joined(a: _Window, b: _Window) -> _Window:
    return _Window(
        a.stems | b.stems,
        a.words | b.words,
        a.text + " " + b.text,
        a.denied | b.denied,
        a.numbers | b.numbers,
    )


def _window(text: str) -> _Window:
    folded = fold(text)
    return _Window(
        frozenset(stems(text)),
        frozenset(WORD.findall(folded)),
        folded,
        _denied(text),
        frozenset(numbers_in(folded)),
    )


NEGATION_SCOPE = 3  # content words after a negation, within its clause, that it governs


def _denied(text: str) -> frozenset[str]:
    """The stems a negation governs: the next NEGATION_SCOPE content words after "not", "no",
    "without"…, up to the end of its clause ("controls without the disease, studying…" denies only
    "disease")."""
    found: set[str] = set()
    for clause in re.split(r"[,;:()\[\]]|(?<=\w)\.(?=\s|$)", fold(text).replace("n't", " not")):
        scope = 0
        for word in WORD.findall(clause):
            if word in NEGATIONS:
                scope = NEGATION_SCOPE
            elif scope and word not in STOPWORDS and not word.isdigit() and len(word) > 1:
                found.add(stem(word))
                scope -= 1
    return frozenset(found)


def _check(claim: str, number: int, source: _Lexed, needed: float) -> CitationCheck:
    for quote in QUOTE.findall(claim):
        if len(WORD.findall(quote)) >= MIN_QUOTE_WORDS and fold(quote) not in source.folded:
            return CitationCheck(number, False, 0.0, f"the quote {quote[:60]!r} is not in it")
    words = stems(claim)
    if not words:
        return CitationCheck(number, False, 0.0, "the sentence has no content words to check")
    stated = numbers_in(fold(claim))
    best = max(source.windows, key=lambda w: len(words & w.stems) + len(stated & w.numbers))
    share = len(words & best.stems) / len(words)
    problem = _unstated(claim, stated, source, best, share, needed) or _contradicted(
        claim, words, best
    )
    if problem:
        return CitationCheck(number, False, share, problem)
    return CitationCheck(
        number, True, share, f"{share:.0%} of its words are in its closest sentence"
    )


def _unstated(
    claim: str, stated: set[str], source: _Lexed, best: _Window, share: float, needed: float
) -> str | None:
    """What the claim says that its closest window does not: a number, too few of its words, a
    name."""
    missing = sorted(stated - source.numbers)
    if missing:
        return f"the number {missing[0]} is not in it"
    elsewhere = sorted(stated - best.numbers)
    if elsewhere:
        return f"its closest sentence does not state the number {elsewhere[0]}"
    if share < needed:
        return f"{share:.0%} of its words are in its closest sentence (needs {needed:.0%})"
    name = next(
        (
            n
            for n in names(claim)
            if not re.search(r"(?<!\w)" + re.escape(n) + r"(?!\w)", best.text)
        ),
        None,
    )
    if name:
        return f"its closest sentence does not name {name!r}"
    return None


def _contradicted(claim: str, words: set[str], best: _Window) -> str | None:
    """How the claim turns what its closest window says: a negation, a negating prefix, an absolute,
    a direction word."""
    claim_words = frozenset(WORD.findall(fold(claim)))
    denied = _denied(claim)
    if (denied & best.stems) - best.denied or (best.denied & words) - denied:
        return "it negates what its closest sentence states, or the reverse"
    flipped = next(((w, v) for w in words - best.stems for v in best.stems if prefixed(w, v)), None)
    if flipped:
        return f"it says {flipped[0]!r} where its closest sentence says {flipped[1]!r}"
    absolute = next((w for w in sorted(claim_words & ABSOLUTES) if w not in best.words), None)
    if absolute:
        return f"it says {absolute!r}, which its closest sentence does not"
    turned = next(
        (
            w
            for w in sorted(claim_words & DIRECTIONS.keys())
            if w not in best.words and DIRECTIONS[w] & best.words
        ),
        None,
    )
    if turned:
        return (
            f"it says {turned!r} where its closest sentence "
            f"says {sorted(DIRECTIONS[turned] & best.words)[0]!r}"
        )
    return None
