"""How a word typed otherwise than the text writes it may be spelt: accents put back where a stemmer
needs them, compounds cut into their two words. Pure: which spelling a namespace's text holds is
for retrieval/query_words.py to ask."""

from __future__ import annotations

import unicodedata
from itertools import combinations, product

# the configurations whose stems lose their accents (kb 0035) and the accented letters each language
# writes
ACCENTS = {
    "french": "àâçéèêëîïôùûüÿ",
    "italian": "àèéìíòóù",
    "portuguese": "àáâãçéêíóôõú",
    "romanian": "ăâîşșţț",
    "spanish": "áéíñóúü",
}
ACCENTED_TAIL = (
    6  # the letters at a word's end where accents are put back: where stemmers cut suffixes
)
MOST_ACCENTS = 2  # Portuguese "-ção" carries two
# the configurations of languages that write compounds as one word, with the letters their grammars
# end a first part with ("Arbeit-s-platz", "Sonne-n-schein", "Tag-es-zeit"; Swedish "kyrk-o-gård",
# where the "a" of "kyrka" becomes "o": the part without it stems alike)
COMPOUND_LINKS = {
    "danish": ("s", "e"),
    "dutch": ("s", "e", "en"),
    "finnish": (),
    "german": ("s", "es", "n", "en", "e", "er", "ens"),
    "norwegian": ("s", "e"),
    "swedish": ("s", "a", "u", "o", "e"),
}
MIN_COMPOUND_PART = 3  # "Uhr" + "zeit": a shorter part is a prefix or a linking letter, not a word


def accented_spellings(word: str, config: str) -> list[tuple[int, str]]:
    """The spellings of `word`, typed without accents, that put back up to MOST_ACCENTS of
    `config`'s accented letters among its last ACCENTED_TAIL letters, each with how many it puts
    back, fewest first. A Snowball stemmer recognises some suffixes only with their accents
    (Spanish "distribución" stems to `distribu`, "distribucion" to itself), so these spellings
    find the stem the namespace's text holds. Empty for a word holding any letter outside ASCII,
    or in a configuration that keeps its accents."""
    letters = ACCENTS.get(config, "")
    if not letters or not word.isascii():
        return []
    choices = {}
    for letter in letters:
        choices.setdefault(_plain(letter), []).append(letter)
    start = max(0, len(word) - ACCENTED_TAIL)
    places = [i for i in range(start, len(word)) if word[i] in choices]
    spellings: list[tuple[int, str]] = []
    for count in range(1, MOST_ACCENTS + 1):
        for chosen in combinations(places, count):
            for accented in product(*(choices[word[i]] for i in chosen)):
                spelt = list(word)
                for i, letter in zip(chosen, accented, strict=True):
                    spelt[i] = letter
                spellings.append((count, "".join(spelt)))
    return spellings


def _plain(letter: str) -> str:
    return unicodedata.normalize("NFD", letter)[0]


def compound_splits(word: str, config: str) -> list[tuple[str, str]]:
    """The ways to read `word` as two words (head, tail) in `config`'s language, each part at least
    MIN_COMPOUND_PART letters: every cut, and where the head ends with one of the language's linking
    letters, that head without them too ("Arbeitsplatz" gives ("arbeits", "platz") and ("arbeit",
    "platz"); "Systemprotokollmeldungen" gives ("system", "protokollmeldungen"), ("systemprotokoll",
    "meldungen"), ...). Empty in a language that does not write compounds as one word, and for a
    word holding anything but letters. Which split is the word is for the namespace to say: the
    one whose parts its passages hold (retrieval/query_words.py, `split_compounds`)."""
    links = COMPOUND_LINKS.get(config)
    if links is None or len(word) < 2 * MIN_COMPOUND_PART or not word.isalpha():
        return []
    splits: dict[tuple[str, str], None] = {}
    for cut in range(MIN_COMPOUND_PART, len(word) - MIN_COMPOUND_PART + 1):
        head, tail = word[:cut], word[cut:]
        for link in ("", *links):
            if head.endswith(link) and len(head) - len(link) >= MIN_COMPOUND_PART:
                splits[(head[: len(head) - len(link)], tail)] = None
    return list(splits)
