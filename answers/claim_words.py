"""How an answer's claim and its source are read as words, alike on both sides
(answers/citations.py):
content stems after a light suffix stripping, numbers in digits or in words, names, negations, and
the words that say the opposite of each other. Pure.
"""

from __future__ import annotations

import re
import unicodedata

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
""".split()  # noqa: E501
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


def stems(text: str) -> set[str]:
    """The content words of `text`, lower-cased, accents kept, stop words out, suffixes stripped."""
    return {
        stem(word)
        for word in WORD.findall(fold(text))
        if word not in STOPWORDS and not word.isdigit() and len(word) > 1
    }


PREFIXES = ("de", "un", "non", "in", "im", "dis", "anti", "ir", "il")
ABSOLUTES = frozenset("only solely exclusively always all every entirely completely".split())


def prefixed(a: str, b: str) -> bool:
    """Whether one stem is the other with a negating prefix ("acetylat", "deacetylat")."""
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and any(
        long == prefix + short or long == prefix + "-" + short for prefix in PREFIXES
    )


NAME = re.compile(r"[^\W_]+(?:[-./+][^\W_]+)*")  # letters of any script: "IL-1β" is not "IL-1α"


def names(text: str) -> list[str]:
    """The names a sentence states, folded: tokens with a letter and a digit (PI3K, CK-0993548), or
    two
    capitals or more (HDL, mTOR, CoYMV). A sentence naming one its source's sentence does not is
    about
    something else, however many of its other words it shares."""
    found = []
    for token in NAME.findall(text):
        letters = sum(ch.isalpha() for ch in token)
        if letters and (
            any(ch.isdigit() for ch in token) or sum(ch.isupper() for ch in token) >= 2
        ):
            found.append(fold(token))
    return found


def fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def numbers_in(folded: str) -> set[str]:
    """The numbers a text states, in digits or in words, thousands separators dropped ("1,000" and
    "1000" are one number, "two hundred fifty" is "250"); a lone "one" is a pronoun as often as
    not."""
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


def stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    for suffix in SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == "e":  # "produce" and "produced" meet at "produc"
        word = word[:-1]
    return word
