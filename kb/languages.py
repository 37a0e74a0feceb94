"""The languages lexical search knows: which PostgreSQL text search configuration lexes a
language, which language a text is written in, and which accented spellings a word typed
without its accents may stand for (`accented_spellings`) and which parts a compound may be read
as (`compound_splits`).

A namespace's `language` is `auto` (each document's own, detected at ingest) or one of
`CONFIGS`. Languages with a Snowball stemmer in every PostgreSQL from 14 on get that
configuration (stemming and stopwords); Chinese, Japanese and Korean get `cjk`, which splits
runs of their characters into overlapping pairs before PostgreSQL's `simple` configuration reads
them (the database function `kb_lex`, migration 0028), so a query matches a passage without
spaces between its words; any other language gets `simple` (words as written, no stemming). Every
configuration pairs those runs too (migration 0037), so such text in a page detected as another
language is found by its words.

Detection is py3langid (BSD-3-Clause, its model ships in the package): on the Debian
Administrator's Handbook and the Debian installation guide in 17 languages it named the
language of 98.1 % of whole pages at 3.5 ms a page (docs/languages.md has the comparison).
"""

from __future__ import annotations

import bisect
import re
import threading
from dataclasses import dataclass

AUTO = "auto"
DEFAULT_CONFIG = (
    "english"  # a namespace with no named language yet; passages stored without a language
)
SEGMENTED = "cjk"
SIMPLE = "simple"

# ISO 639-1 code -> the Snowball configuration every supported PostgreSQL ships (14 and later)
SNOWBALL = {
    "ar": "arabic",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nb": "norwegian",
    "nn": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
}
SEGMENTED_LANGUAGES = frozenset({"zh", "ja", "ko"})
# the configurations that stem a script other than Latin (`_SCRIPTS`' names); every other Snowball one stems Latin
STEMMED_SCRIPTS = {
    "arabic": "arabic",
    "greek": "greek",
    "russian": "cyrillic",
    "nepali": "indic",
    "tamil": "indic",
}
CONFIGS = tuple(sorted({*SNOWBALL.values(), SEGMENTED, SIMPLE}))
# Han, kana and Hangul: the characters written without spaces between words (a regex class's body)
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
_CJK = re.compile(f"[{CJK_CHARS}]")


def has_cjk(text: str) -> bool:
    """Whether `text` holds a Han, kana or Hangul character."""
    return _CJK.search(text) is not None


LANGUAGE_CHOICES = [
    (AUTO, "Detect each document's language"),
    (SIMPLE, "None: words as written, no stemming"),
] + sorted(
    (
        (
            config,
            {SEGMENTED: "Chinese, Japanese, Korean (character pairs)"}.get(
                config, config.capitalize()
            ),
        )
        for config in CONFIGS
        if config != SIMPLE
    ),
    key=lambda choice: choice[1],
)

NAMES = {  # the languages a reader may see named (the detector knows 140; others show their code)
    "af": "Afrikaans",
    "ar": "Arabic",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "ca": "Catalan",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "et": "Estonian",
    "eu": "Basque",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "ga": "Irish",
    "gl": "Galician",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ka": "Georgian",
    "ko": "Korean",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "ms": "Malay",
    "nb": "Norwegian",
    "ne": "Nepali",
    "nl": "Dutch",
    "nn": "Norwegian",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sr": "Serbian",
    "sv": "Swedish",
    "ta": "Tamil",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "vi": "Vietnamese",
    "zh": "Chinese",
}
QUERY_SHARE = 0.02  # a configuration lexes queries when it lexes this share of the passages
UNREAD_SHARE = (
    0.5  # above this share of documents in languages the model does not read, meaning is not used
)

DETECTED_PREFIX = 20_000  # characters read to name a document's language: linear, bounded
MIN_LETTERS = 40  # fewer letters than this name no language: the namespace's default applies
MIN_CONFIDENCE = 0.5  # the detector's normalised probability below which its answer is not trusted
QUERY_CONFIDENCE = 0.9  # the share, among a namespace's own configurations, a query's language needs to lex it alone
_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)


def config_for(language: str) -> str:
    """The text search configuration of an ISO 639-1 language code ('' when unknown)."""
    if not language:
        return DEFAULT_CONFIG
    if language in SEGMENTED_LANGUAGES:
        return SEGMENTED
    return SNOWBALL.get(language, SIMPLE)


def document_config(namespace_language: str, document_language: str, main: str = "") -> str:
    """The configuration a document is lexed with: the namespace's when it sets one, else its
    own language's, else (a short or unclear text) that of `main`, the namespace's most common
    language: a German manual's stub pages lexed in English would give German stopwords a high
    IDF in every query."""
    if namespace_language not in ("", AUTO):
        return namespace_language
    return config_for(document_language or main)


def main_language(document_languages: dict[str, int]) -> str:
    """The named language of most of a namespace's documents ('' when none is named)."""
    named = {language: n for language, n in document_languages.items() if language}
    return max(named, key=lambda language: (named[language], language)) if named else ""


def query_configs(
    namespace_language: str,
    passage_configs: dict[str, int],
    document_languages: dict[str, int] | None = None,
    query: str = "",
    relexing: bool = False,
    placeable: bool = True,
) -> tuple[str, ...]:
    """The configurations a namespace's queries are lexed with, most passages first: those that
    lex at least QUERY_SHARE of its passages (the largest when none does; the setting's while it
    has none), and those the setting is moving passages to that hold any yet.
    Read from the passages, not the setting, so a query always meets the lexemes its passages
    hold, while a change of setting is being applied too. A language detected in a handful of
    passages, often a short text misread, does not add its lexemes to every query: lexed with
    `simple`, a query's stopwords would match only those few passages and rank them first. A
    configuration the setting names, or (detecting) that QUERY_SHARE of the documents'
    languages get, is where passages are going: while a relex is part-way (or stopped), the
    few it has moved there so far keep meeting their lexemes, whatever an ingest run counted
    meanwhile. A `query` written in Han, kana or Hangul is also lexed in character pairs when any
    passage is: such text is rarely a misread language, and lexed otherwise its run is one word
    that no passage of pairs holds. Likewise a query written in one script other than Latin, when
    none of the main configurations reads that script, is also lexed in the configurations that
    stem it (`STEMMED_SCRIPTS`) whatever their share: an Arabic title must find the one Arabic page
    of an English manual. Not `simple`, and not where a main configuration reads the script: a
    Persian or Ukrainian page misread among Arabic or Russian ones would make the query's
    stopwords rare lexemes again, and a page in `simple` already meets the query's words as
    written, which is how a Latin-script configuration lexes them.

    Where documents are lexed in their detected languages and no relex is moving passages
    (`relexing`), a `query` is lexed in its own language's configuration alone when `own_config`
    names it: lexed in the others too, its words meet their passages as lexemes rare there. Not
    when the caller finds it not `placeable`: a query naming an identifier (`max_connections`)
    names it alike in every language, while each stemmer cuts it differently (`connect`,
    `connection`), so it keeps meeting the identifier in every language's passages."""
    shares = {config: count for config, count in passage_configs.items() if count > 0}
    total = sum(shares.values())
    if not total:
        return (document_config(namespace_language, ""),)
    ranked = sorted(shares, key=lambda config: (-shares[config], config))  # most passages first
    targets = _target_configs(namespace_language, document_languages or {})
    documents_say = set(targets)
    if query and SEGMENTED in shares and has_cjk(query):
        targets.add(SEGMENTED)
    script = query_script(query) if query else ""
    if (
        script
        and script != "latin"
        and not any(
            _reads_script(config, script)
            for config in ranked
            if shares[config] / total >= QUERY_SHARE
        )
    ):
        targets.update(config for config in shares if STEMMED_SCRIPTS.get(config) == script)
    configs = (
        tuple(
            config
            for config in ranked
            if shares[config] / total >= QUERY_SHARE or config in targets
        )
        or ranked[:1]
    )
    settled = not relexing and documents_say.issuperset(
        configs
    )  # passages where their documents' languages put them
    own = (
        own_config(query, configs)
        if placeable and settled and namespace_language == AUTO and len(configs) > 1
        else None
    )
    return (own,) if own else configs


def query_script(text: str) -> str:
    """The one script all of `text`'s letters are written in (`_SCRIPTS`' names), or '' (none, or several)."""
    scripts = {_script(letter)[0] for letter in _LETTERS.findall(text[:DETECTED_PREFIX])}
    return scripts.pop() if len(scripts) == 1 else ""


def _reads_script(config: str, script: str) -> bool:
    """Whether `config` may hold `script`'s words as lexemes of its own: `simple` holds any script
    as written, a Snowball configuration its language's."""
    return config == SIMPLE or STEMMED_SCRIPTS.get(config, "latin") == script


def own_config(query: str, configs: tuple[str, ...]) -> str | None:
    """The one of `configs` the detector places `query` in, or None. Each configuration scores its
    likeliest language (`simple` stands for many languages: their sum would win on any text the
    detector cannot read); the chosen one's must be MIN_CONFIDENCE likely among all languages
    (a name or an abbreviation is likely in none) and QUERY_CONFIDENCE of what the namespace's
    configurations score together. A query mixing scripts is not placed: its words in each
    script belong to that script's configuration."""
    if not query_script(query):
        return None
    best: dict[str, float] = {}
    for language, probability in _identifier().rank(query[:DETECTED_PREFIX]):
        config = config_for(language)
        if config in configs:
            best[config] = max(best.get(config, 0.0), probability)
    total = sum(best.values())
    chosen = max(best, key=lambda config: best[config]) if total > 0 else None
    if chosen is None or best[chosen] < MIN_CONFIDENCE or best[chosen] / total < QUERY_CONFIDENCE:
        return None
    return chosen


def _target_configs(namespace_language: str, document_languages: dict[str, int]) -> set[str]:
    """The configurations the setting lexes QUERY_SHARE or more of the documents with."""
    if namespace_language not in ("", AUTO):
        return {namespace_language}
    documents = sum(document_languages.values())
    main = main_language(document_languages)
    return {
        document_config(AUTO, language, main)
        for language, count in document_languages.items()
        if documents and count / documents >= QUERY_SHARE
    }


def name(language: str) -> str:
    return NAMES.get(language, language)


def unread_share(document_languages: dict[str, int], read: tuple[str, ...]) -> tuple[float, str]:
    """The share of a namespace's documents written in languages the embedding model does not
    read (`read`: the model's languages, empty for any), and those languages named, the most
    common first ("Arabic and Persian"). Documents whose language was not named count as read:
    they are short or unclear, and the default is to trust the model."""
    total = sum(document_languages.values())
    if not read or not total:
        return 0.0, ""
    unread = {
        language: n
        for language, n in document_languages.items()
        if language and language not in read
    }
    if not unread:
        return 0.0, ""
    names = [
        name(language)
        for language in sorted(unread, key=lambda language: (-unread[language], language))
    ]
    shown = (
        names if len(names) <= 4 else names[:3] + ["other languages"]
    )  # "other" is never just one
    return sum(unread.values()) / total, " and ".join(
        [", ".join(shown[:-1]), shown[-1]] if len(shown) > 1 else shown
    )


def unread_languages(document_languages: dict[str, int], read: tuple[str, ...]) -> frozenset[str]:
    """The languages, not among those the model reads (`read`), of a namespace whose documents are
    mostly in such languages (`leaves_out`); empty elsewhere."""
    share, _ = unread_share(document_languages, read)
    if not leaves_out(share):
        return frozenset()
    return frozenset(
        language for language in document_languages if language and language not in read
    )


@dataclass(frozen=True)
class MeaningDecision:
    """Whether a search without fitted weights uses meaning, and what decided it: the share of
    documents in languages the model does not read and those languages, and the query's
    language when it decided (else '')."""

    used: bool
    share: float = 0.0
    languages: str = ""
    query_language: str = ""


def meaning_decision(
    document_languages: dict[str, int], read: tuple[str, ...], query: str = ""
) -> MeaningDecision:
    """In a namespace holding documents the model does not read (`read`), the detector names the
    `query`'s language: when it is sure and QUERY_SHARE of the documents are in that language,
    the query's language decides (a German question in an English and German manual is ranked
    by its words, an English one by words and meaning, whatever the shares); otherwise more than
    UNREAD_SHARE of the documents in languages the model does not read leaves meaning out. The
    detector runs only where a query's language can change that (`languages_queries_decide`)."""
    share, languages = unread_share(document_languages, read)
    if not share:
        return MeaningDecision(True)
    words_alone, with_meaning = languages_queries_decide(document_languages, read)
    asked = query_language(query) if query and (words_alone or with_meaning) else ""
    if asked in words_alone or asked in with_meaning:
        return MeaningDecision(asked in with_meaning, share, languages, asked)
    return MeaningDecision(not leaves_out(share), share, languages)


def languages_queries_decide(
    document_languages: dict[str, int], read: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(ranked by words alone, ranked with meaning): the languages, each of at least QUERY_SHARE of
    the documents, in which a query the detector places is served otherwise than the namespace's
    share says (`meaning_decision`), most documents first. Both empty when no query's language
    can change anything: the detector is then not run."""
    share, _ = unread_share(document_languages, read)
    if not share:
        return (), ()
    total = sum(document_languages.values())
    held = sorted(
        (
            language
            for language, n in document_languages.items()
            if language and n >= QUERY_SHARE * total
        ),
        key=lambda language: (-document_languages[language], language),
    )
    if leaves_out(share):
        return (), tuple(language for language in held if language in read)
    return tuple(language for language in held if language not in read), ()


def query_language(query: str) -> str:
    """`detect` for a query, however few its letters: names, commands and abbreviations are
    likely in no language, and the detector's confidence says so."""
    return detect(query, min_letters=1)


def leaves_out(unread: float) -> bool:
    """Whether a namespace with this share of documents the model does not read is searched
    without meaning (when it has no fitted weights)."""
    return unread > UNREAD_SHARE


def detect(text: str, min_letters: int = MIN_LETTERS) -> str:
    """The ISO 639-1 code of the language `text` is written in, or '' when it has fewer than
    `min_letters` letters or the detector is less than MIN_CONFIDENCE sure. Reads at most
    DETECTED_PREFIX characters. Letters of a script that makes up less than MIN_SCRIPT_SHARE of
    them are left out first: an English abstract quoting a name in Devanagari or Hebrew is
    English (the detector's byte n-grams of a rare script would otherwise outweigh the text)."""
    sample = _main_scripts(text[:DETECTED_PREFIX])
    if len(_LETTERS.findall(sample)) < min_letters:
        return ""
    language, confidence = _identifier().classify(sample)
    return language if confidence >= MIN_CONFIDENCE else ""


MIN_SCRIPT_SHARE = 0.2
_SCRIPTS = (  # (first code point, script) in order; a Han or kana character counts as three letters (a word)
    (0x0000, "latin", 1),
    (0x0250, "other", 1),
    (0x0370, "greek", 1),
    (0x0400, "cyrillic", 1),
    (0x0530, "other", 1),
    (0x0590, "hebrew", 1),
    (0x0600, "arabic", 1),
    (0x0780, "other", 1),
    (0x0900, "indic", 1),
    (0x0E00, "other", 1),
    (0x1100, "hangul", 1),
    (0x1200, "other", 1),
    (0x1E00, "latin", 1),
    (0x1F00, "greek", 1),
    (0x2000, "other", 1),
    (0x3040, "cjk", 3),
    (0xA000, "other", 1),
    (0xAC00, "hangul", 1),
    (0xD7B0, "other", 1),
    (0xF900, "cjk", 3),
    (0xFB00, "other", 1),
    (0xFB50, "arabic", 1),
    (0xFF00, "other", 1),
    (0xFF21, "latin", 1),
    (0xFF3B, "other", 1),
    (0xFF41, "latin", 1),
    (0xFF5B, "other", 1),
    (0xFF66, "cjk", 3),
    (0xFFA0, "other", 1),
    (0x20000, "cjk", 3),
    (0x32400, "other", 1),
)
_STARTS = [start for start, _, _ in _SCRIPTS]


def _script(letter: str) -> tuple[str, int]:
    _, script, weight = _SCRIPTS[bisect.bisect_right(_STARTS, ord(letter)) - 1]
    return script, weight


def _main_scripts(text: str) -> str:
    """`text` without the letters of scripts that weigh less than MIN_SCRIPT_SHARE of its letters."""
    weights: dict[str, int] = {}
    for letter in _LETTERS.findall(text):
        script, weight = _script(letter)
        weights[script] = weights.get(script, 0) + weight
    total = sum(weights.values())
    minor = {script for script, weight in weights.items() if weight < MIN_SCRIPT_SHARE * total}
    if not minor:
        return text
    return "".join(c for c in text if not (c.isalpha() and _script(c)[0] in minor))


_lock = threading.Lock()
_loaded = None


def _identifier():
    """The detector's model, loaded once per process on first use (half a second, about 100 MB).
    Shared by every thread: only read it (`classify`, `rank`); `set_languages` would change it
    for all of them (`own_config` restricts by filtering `rank`'s answer instead)."""
    global _loaded
    with _lock:
        if _loaded is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _loaded = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _loaded
