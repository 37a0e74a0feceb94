"""Every sentence of an answer cites, and every citation is checked against the source it names. Pure.

A sentence's `[n]` markers name the numbered sources the model was given. A citation holds when
source n states it, read lexically, in its closest window: one sentence of the source, two
neighbouring ones, or its first sentence (a title, a heading) with another. There,
- at least SUPPORTED_SHARE of the sentence's content words (stems after a light suffix stripping,
  applied alike to both sides) are found;
- every number it states, in digits or in words ("two hundred fifty", "one-third"), is stated,
  and every name (HDL, mTOR, PI3K, CK-0944636) is named;
- every span it quotes ("…", three words or more) is in the source verbatim;
- what it negates the window negates, and the reverse (a negation governs the next few content
  words of its clause); it uses no direction word ("increased", "higher", "inhibits") where the
  window uses the opposite one, no word whose negating prefix the window has ("acetylated",
  "deacetylated"), and no "only", "all", "always"… that the window does not say.
Lexical checks are what a reader checks by eye and cannot be talked into agreeing; what they miss
(an entity swapped for another named in the next sentence, a contradiction in other words) is
measured in docs/answers.md#the-checker.

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
WORD = re.compile(r"\w+", re.U)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just may me might more most must my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves source sources according document documents
""".split()
)
NEGATIONS = frozenset(
    "not no never none neither nor without cannot nothing nobody lack lacks lacked absence".split()
)
_OPPOSITES = [
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("increases", "decreases"),
    ("increased", "reduced"),
    ("increase", "reduce"),
    ("increases", "reduces"),
    ("higher", "lower"),
    ("more", "less"),
    ("more", "fewer"),
    ("greater", "smaller"),
    ("superior", "inferior"),
    ("positive", "negative"),
    ("upregulation", "downregulation"),
    ("activates", "inhibits"),
    ("activation", "inhibition"),
    ("enhances", "impairs"),
    ("enhanced", "impaired"),
    ("promotes", "suppresses"),
    ("gain", "loss"),
    ("before", "after"),
    ("sensitive", "resistant"),
    ("early", "late"),
    ("all", "some"),
    ("high", "low"),
    ("improves", "worsens"),
    ("improved", "worsened"),
    ("benefit", "harm"),
    ("major", "minor"),
    ("primary", "secondary"),
    ("rarely", "often"),
    ("common", "rare"),
    ("significant", "insignificant"),
    ("sensitive", "resistance"),
    ("sensitivity", "resistance"),
    ("sensitive", "resistant"),
    ("uniform", "variable"),
    ("presence", "absence"),
    ("present", "absent"),
    ("benign", "malignant"),
    ("agonist", "antagonist"),
    ("inhibitor", "activator"),
    ("maximum", "minimum"),
    ("strong", "weak"),
    ("stronger", "weaker"),
    ("longer", "shorter"),
    ("larger", "smaller"),
    ("faster", "slower"),
    ("upregulated", "downregulated"),
    ("increased", "lowered"),
    ("induces", "prevents"),
    ("promotes", "inhibits"),
    ("all", "most"),
]
DIRECTIONS: dict[str, frozenset[str]] = {}  # a word -> the words that say the opposite
for _a, _b in _OPPOSITES:
    DIRECTIONS[_a] = DIRECTIONS.get(_a, frozenset()) | {_b}
    DIRECTIONS[_b] = DIRECTIONS.get(_b, frozenset()) | {_a}
# numbers written as words: cardinals combine ("two hundred fifty" is 250); fractions and ordinals
# stand as themselves ("one-third" and "one-fourth" differ in "third")
UNITS = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
TENS = {
    w: 10 * n
    for n, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)
}
SCALES = {"hundred": 100, "thousand": 1000}
FRACTIONS = {
    "half": "1/2",
    "halves": "1/2",
    "third": "1/3",
    "thirds": "1/3",
    "quarter": "1/4",
    "quarters": "1/4",
    "fourth": "1/4",
    "fourths": "1/4",
    "fifth": "1/5",
    "fifths": "1/5",
}
SUFFIXES = (
    "ational",
    "ations",
    "ation",
    "ities",
    "ments",
    "ness",
    "ment",
    "ings",
    "ing",
    "ied",
    "ies",
    "edly",
    "ed",
    "ers",
    "er",
    "est",
    "ly",
    "es",
    "s",
)


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
    (number -> the text the model was given under that number: its seeded passage and what it read)."""
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


def stems(text: str) -> set[str]:
    """The content words of `text`, lower-cased, accents kept, stop words out, suffixes stripped."""
    return {
        _stem(word)
        for word in WORD.findall(_fold(text))
        if word not in STOPWORDS and not word.isdigit() and len(word) > 1
    }


def _verdict(sentence: str, sources: dict[int, _Lexed], needed: float) -> Sentence:
    cited = citations_of(sentence)
    claim = MARKER.sub(" ", sentence)
    if not cited:
        if _fold(NOT_COVERED).rstrip(".") in _fold(claim):
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
    """One sentence of a source, two neighbouring ones, or its first with another: where a claim is looked for."""

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
        folded = _fold(text)
        sentences = [_window(sentence) for sentence in split_sentences(text)] or [_window(text)]
        pairs = [_joined(a, b) for a, b in zip(sentences, sentences[1:], strict=False)]
        # the first sentence (a title, a heading) names what every other one is about
        titled = [_joined(sentences[0], s) for s in sentences[2:]]
        return cls(folded, frozenset(_numbers(folded)), tuple(sentences + pairs + titled))


def _joined(a: _Window, b: _Window) -> _Window:
    return _Window(
        a.stems | b.stems,
        a.words | b.words,
        a.text + " " + b.text,
        a.denied | b.denied,
        a.numbers | b.numbers,
    )


def _window(text: str) -> _Window:
    folded = _fold(text)
    return _Window(
        frozenset(stems(text)),
        frozenset(WORD.findall(folded)),
        folded,
        _denied(text),
        frozenset(_numbers(folded)),
    )


NEGATION_SCOPE = 3  # content words after a negation, within its clause, that it governs


def _denied(text: str) -> frozenset[str]:
    """The stems a negation governs: the next NEGATION_SCOPE content words after "not", "no",
    "without"…, up to the end of its clause ("controls without the disease, studying…" denies only
    "disease")."""
    found: set[str] = set()
    for clause in re.split(r"[,;:()\[\]]|(?<=\w)\.(?=\s|$)", _fold(text).replace("n't", " not")):
        scope = 0
        for word in WORD.findall(clause):
            if word in NEGATIONS:
                scope = NEGATION_SCOPE
            elif scope and word not in STOPWORDS and not word.isdigit() and len(word) > 1:
                found.add(_stem(word))
                scope -= 1
    return frozenset(found)


def _check(claim: str, number: int, source: _Lexed, needed: float) -> CitationCheck:
    for quote in QUOTE.findall(claim):
        if len(WORD.findall(quote)) >= MIN_QUOTE_WORDS and _fold(quote) not in source.folded:
            return CitationCheck(number, False, 0.0, f"the quote {quote[:60]!r} is not in it")
    words = stems(claim)
    if not words:
        return CitationCheck(number, False, 0.0, "the sentence has no content words to check")
    stated = _numbers(_fold(claim))
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
    """What the claim says that its closest window does not: a number, too few of its words, a name."""
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
    claim_words = frozenset(WORD.findall(_fold(claim)))
    denied = _denied(claim)
    if (denied & best.stems) - best.denied or (best.denied & words) - denied:
        return "it negates what its closest sentence states, or the reverse"
    flipped = next(
        ((w, v) for w in words - best.stems for v in best.stems if _prefixed(w, v)), None
    )
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
        return f"it says {turned!r} where its closest sentence says {sorted(DIRECTIONS[turned] & best.words)[0]!r}"
    return None


PREFIXES = ("de", "un", "non", "in", "im", "dis", "anti", "ir", "il")
ABSOLUTES = frozenset("only solely exclusively always all every entirely completely".split())


def _prefixed(a: str, b: str) -> bool:
    """Whether one stem is the other with a negating prefix ("acetylat", "deacetylat")."""
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and any(
        long == prefix + short or long == prefix + "-" + short for prefix in PREFIXES
    )


NAME = re.compile(r"[^\W_]+(?:[-./+][^\W_]+)*")  # letters of any script: "IL-1β" is not "IL-1α"


def names(text: str) -> list[str]:
    """The names a sentence states, folded: tokens with a letter and a digit (PI3K, CK-0993548), or two
    capitals or more (HDL, mTOR, CoYMV). A sentence naming one its source's sentence does not is about
    something else, however many of its other words it shares."""
    found = []
    for token in NAME.findall(text):
        letters = sum(ch.isalpha() for ch in token)
        if letters and (
            any(ch.isdigit() for ch in token) or sum(ch.isupper() for ch in token) >= 2
        ):
            found.append(_fold(token))
    return found


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _numbers(folded: str) -> set[str]:
    """The numbers a text states, in digits or in words, thousands separators dropped ("1,000" and
    "1000" are one number, "two hundred fifty" is "250"); a lone "one" is a pronoun as often as not."""
    found = {n.replace(",", "") for n in NUMBER.findall(folded)}
    total, current, words = 0, 0, []
    for word in WORD.findall(folded) + [""]:
        if word in UNITS or word in TENS:
            current += UNITS.get(word, 0) + TENS.get(word, 0)
        elif word in SCALES and (words or word == "hundred"):
            current = (current or 1) * SCALES[word]
            if word == "thousand":
                total, current = total + current, 0
        elif word == "and" and words:
            continue
        else:
            if words and words != ["one"]:
                found.add(str(total + current))
            total, current, words = 0, 0, []
            if word in FRACTIONS:
                found.add(FRACTIONS[word])
            continue
        words.append(word)
    return found


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
