"""Which language a text is written in (`detect`, `query_language`) and which script a query's
letters are written in (`query_script`). Pure.

Detection is py3langid (BSD-3-Clause, its model ships in the package): on the Debian
Administrator's Handbook and the Debian installation guide in 17 languages it named the
language of 98.1 % of whole pages at 3.5 ms a page (docs/languages.md has the comparison).
"""

from __future__ import annotations

import bisect
import re
import threading

DETECTED_PREFIX = 20_000  # characters read to name a document's language: linear, bounded
MIN_LETTERS = 40  # fewer letters than this name no language: the namespace's default applies
MIN_CONFIDENCE = 0.5  # the detector's normalised probability below which its answer is not trusted
_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)


def query_script(text: str) -> str:
    """The one script all of `text`'s letters are written in (`_SCRIPTS`' names), or '' (none, or
    several)."""
    scripts = {_script(letter)[0] for letter in _LETTERS.findall(text[:DETECTED_PREFIX])}
    return scripts.pop() if len(scripts) == 1 else ""


def query_language(query: str) -> str:
    """`detect` for a query, however few its letters: names, commands and abbreviations are
    likely in no language, and the detector's confidence says so."""
    return detect(query, min_letters=1)


def detect(text: str, min_letters: int = MIN_LETTERS) -> str:
    """The ISO 639-1 code of the language `text` is written in, or '' when it has fewer than
    `min_letters` letters or the detector is less than MIN_CONFIDENCE sure. Reads at most
    DETECTED_PREFIX characters. Letters of a script that makes up less than MIN_SCRIPT_SHARE of
    them are left out first: an English abstract quoting a name in Devanagari or Hebrew is
    English (the detector's byte n-grams of a rare script would otherwise outweigh the text)."""
    sample = _main_scripts(text[:DETECTED_PREFIX])
    if len(_LETTERS.findall(sample)) < min_letters:
        return ""
    language, confidence = identifier().classify(sample)
    return language if confidence >= MIN_CONFIDENCE else ""


MIN_SCRIPT_SHARE = 0.2
# (first code point, script) in order; a Han or kana character counts as three letters (a word)
_SCRIPTS = (
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
    """`text` without the letters of scripts that weigh less than MIN_SCRIPT_SHARE of its
    letters."""
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


def identifier():
    """The detector's model, loaded once per process on first use (half a second, about 100 MB).
    Shared by every thread: only read it (`classify`, `rank`); `set_languages` would change it
    for all of them (`own_config` restricts by filtering `rank`'s answer instead)."""
    global _loaded
    with _lock:
        if _loaded is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _loaded = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _loaded
