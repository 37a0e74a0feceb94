"""Fold characters that print like ASCII punctuation to it. Pure.

PDF generators print `--rcfile` with U+2212 MINUS SIGN and `~/.bashrc` with U+02DC SMALL TILDE. Text
and queries are folded alike, so what looks the same searches the same; NFKC alone leaves U+2212 and
turns U+02DC into a space and a combining tilde.
"""

from __future__ import annotations

import re
import unicodedata

LOOKALIKES = str.maketrans(
    {
        "\u2212": "-",  # MINUS SIGN
        "\u2010": "-",  # HYPHEN
        "\u2011": "-",  # NON-BREAKING HYPHEN
        "\u2043": "-",  # HYPHEN BULLET
        "\ufe63": "-",  # SMALL HYPHEN-MINUS
        "\uff0d": "-",  # FULLWIDTH HYPHEN-MINUS
        "\u02dc": "~",  # SMALL TILDE
        "\u223c": "~",  # TILDE OPERATOR
        "\uff5e": "~",  # FULLWIDTH TILDE
        "\u2215": "/",  # DIVISION SLASH
        "\u2044": "/",  # FRACTION SLASH
        "\u2217": "*",  # ASTERISK OPERATOR
        "\u02c6": "^",  # MODIFIER LETTER CIRCUMFLEX ACCENT
        "\ufb01": "fi",  # ligatures
        "\ufb02": "fl",
        "\ufb00": "ff",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
    }
)
HYPHENATION_MARKS = ("\ufffe", "\u00ad")  # PDFium's line-end hyphenation mark, SOFT HYPHEN


def fold_lookalikes(text: str) -> str:
    return text.translate(LOOKALIKES)


def join_hyphenation(text: str) -> str:
    """`expres\\ufffe\\nsions` and `expres\\ufffesions` become `expressions`; linear."""
    for mark in HYPHENATION_MARKS:
        if mark in text:
            text = text.replace(mark + "\r\n", "").replace(mark + "\n", "").replace(mark, "")
    return text


def _unaccented_table() -> dict[int, str]:
    """Each precomposed Latin letter (Latin-1 to Latin Extended-B, Latin Extended Additional) that
    decomposes into an ASCII letter and combining marks, mapped to that letter, and the barred and
    stroked letters PostgreSQL's `unaccent` also folds to one letter (ø, ł, đ, ħ, ŧ, dotless ı)."""
    table = {ord(letter): plain for letter, plain in zip("ØøŁłĐđĦħŦŧı", "OoLlDdHhTti", strict=True)}
    for code in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        parts = unicodedata.normalize("NFD", chr(code))
        if (
            len(parts) > 1
            and parts[0].isascii()
            and all(unicodedata.combining(mark) for mark in parts[1:])
        ):
            table[code] = parts[0]
    return table


UNACCENTED = _unaccented_table()


def _with_accents_table() -> dict[str, str]:
    """Each plain letter with itself and the accented letters `unaccented` folds to it."""
    table: dict[str, str] = {}
    for code, plain in UNACCENTED.items():
        table[plain] = table.get(plain, plain) + chr(code)
    return table


_WITH_ACCENTS = _with_accents_table()


def accent_blind(word: str) -> str:
    """A regular expression matching `word` as a whole word with any of its letters accented or
    not ("extremites" matches "extrémités"): searched in the text itself, where unaccenting a long
    text first costs far more."""
    return (
        r"\b"
        + "".join(
            f"[{re.escape(_WITH_ACCENTS[c])}]" if c in _WITH_ACCENTS else re.escape(c) for c in word
        )
        + r"\b"
    )


# letters `unaccent` spells out as two (a folded stem holds the two: French `oeuvr` for "œuvre")
LIGATURES = {"œ": "oe", "Œ": "OE", "æ": "ae", "Æ": "AE", "ß": "ss"}
_SPELT_OUT = str.maketrans(LIGATURES)


def unaccented(text: str) -> str:
    """`text` with its accented Latin letters as their plain letters (é -> e, Ü -> U), one character
    for one, so a position in the result is the same position in `text`: what lets a lexeme the
    database folded (Romance languages, kb migration 0035; German Snowball's umlauts) mark the
    accented word. Ligatures stay (`LIGATURES`), and so does a combining mark: the database keeps a
    lexeme of marks only as written too, where folding would leave it empty (kb migration 0045)."""
    return text.translate(UNACCENTED)


def plain_letters(text: str) -> str:
    """`text` unaccented and its ligatures spelt out, for comparing words, not positions."""
    return unaccented(text).translate(_SPELT_OUT)
