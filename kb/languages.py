"""The languages lexical search knows: configurations, detection, accents and compounds.

A namespace's `language` is `auto` (each document's own, detected at ingest) or one of `CONFIGS`.
Chinese, Japanese and Korean are lexed by `cjk`, which splits runs of their characters into
overlapping pairs (`kb_lex`, migration 0028), so a query matches a passage without spaces between
words; every configuration pairs those runs too (migration 0037), so such text in a page detected as
another language is still found. Languages without a Snowball stemmer get `simple`.
"""

from __future__ import annotations

import re

from kb.language_detection import DETECTED_PREFIX, MIN_CONFIDENCE, identifier, query_script

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
# the configurations that stem a script other than Latin (`_SCRIPTS`' names); every other Snowball
# one stems Latin
STEMMED_SCRIPTS = {
    "arabic": "arabic",
    "greek": "greek",
    "russian": "cyrillic",
    "nepali": "indic",
    "tamil": "indic",
}
CONFIGS = tuple(sorted({*SNOWBALL.values(), SEGMENTED, SIMPLE}))
# Han, kana and Hangul: the characters written without spaces between words (a regex class's body)
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"  # noqa: E501
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
# the share, among a namespace's own configurations, a query's language needs to lex it alone
QUERY_CONFIDENCE = 0.9


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
    """The configurations a namespace's queries are lexed with, most passages first.

    Read from the passages, not the setting, so a query meets the lexemes its passages hold, also
    while a relex is part-way. A configuration must lex QUERY_SHARE of the passages (else the
    largest; with no passages, the setting's), or be one a relex is moving passages to: a language
    misdetected in a few short texts would otherwise let a query's stopwords, lexed with `simple`,
    rank those first. Exceptions: a Han, kana or Hangul query is also lexed in pairs, and a query in
    one non-Latin script none of the main configurations reads is also lexed in the configurations
    that stem it (`STEMMED_SCRIPTS`), so an Arabic title finds the one Arabic page of an English
    manual.

    With detected languages and no relex under way, a query goes to its own language's configuration
    alone (`own_config`), unless the caller finds it not `placeable`: an identifier
    (`max_connections`) is cut differently by each stemmer, so it must meet every language's
    passages.
    """
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
    for language, probability in identifier().rank(query[:DETECTED_PREFIX]):
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
