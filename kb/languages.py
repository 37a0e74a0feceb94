"""The languages lexical search knows: which PostgreSQL text search configuration lexes a
language, and which language a text is written in.

A namespace's `language` is `auto` (each document's own, detected at ingest) or one of
`CONFIGS`. Languages with a Snowball stemmer in every PostgreSQL from 14 on get that
configuration (stemming and stopwords); Chinese, Japanese and Korean get `cjk`, which splits
runs of their characters into overlapping pairs before PostgreSQL's `simple` configuration reads
them (the database function `kb_lex`, migration 0028), so a query matches a passage without
spaces between its words; any other language gets `simple` (words as written, no stemming).

Detection is py3langid (BSD-3-Clause, its model ships in the package): on the Debian
Administrator's Handbook and the Debian installation guide in 17 languages it named the
language of 98.1 % of whole pages at 3.5 ms a page (docs/languages.md has the comparison).
"""

from __future__ import annotations

import re
import threading

AUTO = "auto"
DEFAULT_CONFIG = "english"  # the configuration of text whose language is unknown, as before languages
SEGMENTED = "cjk"
SIMPLE = "simple"

# ISO 639-1 code -> the Snowball configuration every supported PostgreSQL ships (14 and later)
SNOWBALL = {
    "ar": "arabic", "da": "danish", "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french",
    "de": "german", "el": "greek", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "nb": "norwegian", "nn": "norwegian", "no": "norwegian",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "es": "spanish", "sv": "swedish", "ta": "tamil",
    "tr": "turkish",
}
SEGMENTED_LANGUAGES = frozenset({"zh", "ja", "ko"})
CONFIGS = tuple(sorted({*SNOWBALL.values(), SEGMENTED, SIMPLE}))

LANGUAGE_CHOICES = [(AUTO, "Detect each document's language")] + [
    (config, {SEGMENTED: "Chinese, Japanese, Korean (character pairs)",
              SIMPLE: "None: words as written, no stemming"}.get(config, config.capitalize()))
    for config in CONFIGS
]

NAMES = {  # the languages a reader may see named (the detector knows 97; others show their code)
    "af": "Afrikaans", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "da": "Danish", "de": "German", "el": "Greek", "en": "English", "es": "Spanish", "et": "Estonian",
    "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish", "gl": "Galician",
    "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian",
    "it": "Italian", "ja": "Japanese", "ka": "Georgian", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian",
    "ms": "Malay", "nb": "Norwegian", "ne": "Nepali", "nl": "Dutch", "nn": "Norwegian", "no": "Norwegian",
    "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian",
    "sr": "Serbian", "sv": "Swedish", "ta": "Tamil", "th": "Thai", "tr": "Turkish", "uk": "Ukrainian",
    "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}
UNREAD_SHARE = 0.5  # above this share of documents in languages the model does not read, meaning is not used

DETECTED_PREFIX = 20_000  # characters read to name a document's language: linear, bounded
MIN_LETTERS = 40  # fewer letters than this name no language: the namespace's default applies
MIN_CONFIDENCE = 0.5  # the detector's normalised probability below which its answer is not trusted
_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)


def config_for(language: str) -> str:
    """The text search configuration of an ISO 639-1 language code ('' when unknown)."""
    if not language:
        return DEFAULT_CONFIG
    if language in SEGMENTED_LANGUAGES:
        return SEGMENTED
    return SNOWBALL.get(language, SIMPLE)


def document_config(namespace_language: str, document_language: str) -> str:
    """The configuration a document is lexed with: the namespace's when it sets one, else its own."""
    return config_for(document_language) if namespace_language in ("", AUTO) else namespace_language


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
    unread = {language: n for language, n in document_languages.items() if language and language not in read}
    if not unread:
        return 0.0, ""
    names = [name(language) for language in sorted(unread, key=lambda language: (-unread[language], language))]
    shown = names[:3] + (["other languages"] if len(names) > 3 else [])
    return sum(unread.values()) / total, " and ".join([", ".join(shown[:-1]), shown[-1]] if len(shown) > 1 else shown)


def meaning_left_out(document_languages: dict[str, int], read: tuple[str, ...]) -> tuple[float, str] | None:
    """(share, languages) when more than UNREAD_SHARE of the documents are in languages the model
    does not read: a namespace without fitted weights is then searched by its words alone."""
    share, languages = unread_share(document_languages, read)
    return (share, languages) if share > UNREAD_SHARE else None


def detect(text: str) -> str:
    """The ISO 639-1 code of the language `text` is written in, or '' when it is too short or
    the detector is unsure. Reads at most DETECTED_PREFIX characters."""
    sample = text[:DETECTED_PREFIX]
    if len(_LETTERS.findall(sample)) < MIN_LETTERS:
        return ""
    language, confidence = _identifier().classify(sample)
    return language if confidence >= MIN_CONFIDENCE else ""


_lock = threading.Lock()
_loaded = None


def _identifier():
    """The detector's model, loaded once per process on first use (half a second, about 100 MB)."""
    global _loaded
    with _lock:
        if _loaded is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier
            _loaded = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _loaded
