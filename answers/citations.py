"""Every sentence of an answer cites, and every citation is checked against the source it names. Pure.

A sentence's `[n]` markers name the numbered sources the model was given. A citation holds when
source n states it, read lexically: the sentence's content words (stems after a light suffix
stripping, applied alike to both sides) are found, at least SUPPORTED_SHARE of them, in one
sentence of the source or two neighbouring ones; every number it states is in the source; every
span it quotes ("…", three words or more) is there verbatim; it is negated exactly when that
passage is; and it uses no direction word ("increased", "higher", "inhibits") where the passage
uses the opposite one. Lexical checks are what a reader checks by eye and cannot be talked into
agreeing; what they miss (an entity swapped for another of the same passage, a contradiction
in other words) is measured in docs/answers.md#the-checker.

Verdicts, and what the answer shows:
- supported: one of its citations holds; shown.
- unsupported: it cites sources it was given, none of which holds it; shown, marked, so a reader
  sees what the model claimed and that the knowledge base does not back it.
- dropped: it cites nothing, or only numbers of sources the model was not given; nothing can be
  checked, so it is left out of the answer shown (it stays in the log).
- abstention: the model's own "not covered" sentence; shown, counted in none of the three.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

SUPPORTED_SHARE = 0.6  # of a sentence's content stems found in the source (measured: docs/answers.md#the-checker)
MIN_QUOTE_WORDS = 3
NOT_COVERED = "The knowledge base does not cover this."

MARKER = re.compile(r"\[\s*(?:sources?\s*)?(\d{1,3}(?:\s*[,;]\s*(?:sources?\s*)?\d{1,3})*)\s*\]", re.I)
# a sentence ends at . ! ? (and the closing quotes, brackets and citation markers after it) before a
# space, or at a line break
SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?:\s*\[[^\]\n]{1,40}\])*(?=\s|$)|\n+")
QUOTE = re.compile(r"[\"“”]([^\"“”]+)[\"“”]")
WORD = re.compile(r"\w+", re.U)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just may me might more most must my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves source sources according document documents
""".split())
NEGATIONS = frozenset("not no never none neither nor without cannot nothing nobody lack lacks lacked absence".split())
_OPPOSITES = [("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"),
              ("increased", "reduced"), ("increase", "reduce"), ("increases", "reduces"), ("higher", "lower"),
              ("more", "less"), ("more", "fewer"), ("greater", "smaller"), ("superior", "inferior"),
              ("positive", "negative"), ("upregulation", "downregulation"), ("activates", "inhibits"),
              ("activation", "inhibition"), ("enhances", "impairs"), ("enhanced", "impaired"),
              ("promotes", "suppresses"),
              ("gain", "loss"), ("before", "after"), ("sensitive", "resistant"), ("early", "late"), ("all", "some"),
              ("high", "low"), ("improves", "worsens"), ("improved", "worsened"), ("benefit", "harm"),
              ("major", "minor"), ("primary", "secondary"), ("rarely", "often"), ("common", "rare"),
              ("significant", "insignificant")]
DIRECTIONS: dict[str, frozenset[str]] = {}  # a word -> the words that say the opposite
for _a, _b in _OPPOSITES:
    DIRECTIONS[_a] = DIRECTIONS.get(_a, frozenset()) | {_b}
    DIRECTIONS[_b] = DIRECTIONS.get(_b, frozenset()) | {_a}
SUFFIXES = ("ational", "ations", "ation", "ities", "ments", "ness", "ment", "ings", "ing", "ied", "ies", "edly",
            "ed", "ers", "er", "est", "ly", "es", "s")


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
        return {"text": self.text, "citations": list(self.citations), "verdict": self.verdict, "reason": self.reason,
                "checks": [{"source": c.source, "holds": c.holds, "share": round(c.share, 3), "reason": c.reason}
                           for c in self.checks]}


@dataclass(frozen=True)
class Checked:
    sentences: tuple[Sentence, ...]
    counts: dict[str, int] = field(default_factory=dict)  # sentences, supported, unsupported, dropped

    @property
    def text(self) -> str:
        """The answer as shown: every sentence but the dropped ones."""
        return " ".join(s.text for s in self.sentences if s.verdict != "dropped")


def check(answer_text: str, sources: dict[int, str]) -> Checked:
    """Split `answer_text` into sentences and check each one's citations against `sources`
    (number -> the text the model was given under that number: its seeded passage and what it read)."""
    lexed = {number: _Lexed.of(text) for number, text in sources.items()}
    sentences = tuple(_verdict(sentence, lexed) for sentence in split_sentences(answer_text))
    counts = {"sentences": len(sentences)}
    for verdict in ("supported", "unsupported", "dropped"):
        counts[verdict] = sum(1 for s in sentences if s.verdict == verdict)
    return Checked(sentences, counts)


def dropping(checked: Checked, drop, reason: str) -> Checked:
    """`checked` with the sentences `drop(text)` is true of turned to dropped, for `reason`, and
    their text withheld (what they said is what must not be passed on)."""
    sentences = tuple(Sentence("", s.citations, "dropped", reason) if drop(s.text) else s
                      for s in checked.sentences)
    counts = {"sentences": len(sentences)}
    for verdict in ("supported", "unsupported", "dropped"):
        counts[verdict] = sum(1 for s in sentences if s.verdict == verdict)
    return Checked(sentences, counts)


def split_sentences(text: str) -> list[str]:
    """Sentences in order, each with the citation markers that close it; blank pieces dropped."""
    pieces, start = [], 0
    for end in SENTENCE_END.finditer(text):
        pieces.append(text[start:end.end()])
        start = end.end()
    pieces.append(text[start:])
    return [" ".join(piece.split()) for piece in pieces if piece.strip(" \n\t-*•")]


def citations_of(sentence: str) -> tuple[int, ...]:
    numbers = []
    for marker in MARKER.finditer(sentence):
        numbers += [int(n) for n in re.findall(r"\d+", marker.group(1))]
    return tuple(dict.fromkeys(numbers))


def stems(text: str) -> set[str]:
    """The content words of `text`, lower-cased, accents kept, stop words out, suffixes stripped."""
    return {_stem(word) for word in WORD.findall(_fold(text)) if word not in STOPWORDS and not word.isdigit()
            and len(word) > 1}


def _verdict(sentence: str, sources: dict[int, _Lexed]) -> Sentence:
    cited = citations_of(sentence)
    claim = MARKER.sub(" ", sentence)
    if not cited:
        if _fold(NOT_COVERED).rstrip(".") in _fold(claim):
            return Sentence(sentence, cited, "abstention", "says the knowledge base does not cover the question")
        return Sentence(sentence, cited, "dropped", "cites no source")
    given = [n for n in cited if n in sources]
    if not given:
        return Sentence(sentence, cited, "dropped",
                        f"cites {', '.join(f'[{n}]' for n in cited)}, which the answer was not given")
    checks = tuple(_check(claim, n, sources[n]) for n in given)
    if any(c.holds for c in checks):
        return Sentence(sentence, cited, "supported", "found in " + ", ".join(f"[{c.source}]" for c in checks
                                                                             if c.holds), checks)
    return Sentence(sentence, cited, "unsupported", "; ".join(f"[{c.source}]: {c.reason}" for c in checks), checks)


@dataclass(frozen=True)
class _Window:
    """One or two neighbouring sentences of a source: where a claim is looked for."""

    stems: frozenset[str]
    negated: bool
    words: frozenset[str]  # its words, unstemmed, for the direction words


@dataclass(frozen=True)
class _Lexed:
    folded: str  # lower case, accents kept, whitespace collapsed: where quotes are looked for
    numbers: frozenset[str]
    windows: tuple[_Window, ...]  # its sentences, then each two neighbours together

    @classmethod
    def of(cls, text: str) -> _Lexed:
        folded = _fold(text)
        sentences = [_window(sentence) for sentence in split_sentences(text)] or [_window(text)]
        pairs = [_Window(a.stems | b.stems, a.negated or b.negated, a.words | b.words)
                 for a, b in zip(sentences, sentences[1:], strict=False)]
        return cls(folded, frozenset(_numbers(folded)), tuple(sentences + pairs))


def _window(text: str) -> _Window:
    words = frozenset(WORD.findall(_fold(text)))
    return _Window(frozenset(stems(text)), bool(words & NEGATIONS) or "n't" in text, words)


def _check(claim: str, number: int, source: _Lexed) -> CitationCheck:
    for quote in QUOTE.findall(claim):
        if len(WORD.findall(quote)) >= MIN_QUOTE_WORDS and _fold(quote) not in source.folded:
            return CitationCheck(number, False, 0.0, f"the quote {quote[:60]!r} is not in it")
    words = stems(claim)
    if not words:
        return CitationCheck(number, False, 0.0, "the sentence has no content words to check")
    best = max(source.windows, key=lambda w: len(words & w.stems))
    share = len(words & best.stems) / len(words)
    missing_numbers = sorted(_numbers(_fold(claim)) - source.numbers)
    if missing_numbers:
        return CitationCheck(number, False, share, f"the number {missing_numbers[0]} is not in it")
    if share < SUPPORTED_SHARE:
        return CitationCheck(number, False, share,
                             f"{share:.0%} of its words are in its closest sentence (needs {SUPPORTED_SHARE:.0%})")
    claim_words = frozenset(WORD.findall(_fold(claim)))
    if (bool(claim_words & NEGATIONS) or "n't" in claim) != best.negated:
        return CitationCheck(number, False, share, "it negates what its closest sentence states, or the reverse")
    turned = next((w for w in claim_words & DIRECTIONS.keys() if w not in best.words
                   and DIRECTIONS[w] & best.words), None)
    if turned:
        return CitationCheck(number, False, share, f"it says {turned!r} where its closest sentence says "
                                                   f"{sorted(DIRECTIONS[turned] & best.words)[0]!r}")
    return CitationCheck(number, True, share, f"{share:.0%} of its words are in its closest sentence")


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _numbers(folded: str) -> set[str]:
    """The numbers a text states, thousands separators dropped ("1,000" and "1000" are one number)."""
    return {n.replace(",", "") for n in NUMBER.findall(folded)}


def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    for suffix in SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == "e":  # "produce" and "produced" meet at "produc"
        word = word[:-1]
    return word
