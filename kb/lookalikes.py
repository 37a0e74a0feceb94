"""Characters that print like ASCII punctuation but are other code points, folded to it. Pure.

PDF generators (TeX above all) print `--rcfile` with U+2212 MINUS SIGN and `~/.bashrc` with U+02DC
SMALL TILDE; PDFium marks a line-end hyphenation with U+FFFE. Text and queries are folded the
same way (ingest's PDF reader and `retrieval.query.normalise_query`), so what looks the same
searches the same. NFKC alone does not do this: it leaves U+2212 alone and turns U+02DC into a
space and a combining tilde.
"""

from __future__ import annotations

LOOKALIKES = str.maketrans({
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
})
HYPHENATION_MARKS = ("\ufffe", "\u00ad")  # PDFium's line-end hyphenation mark, SOFT HYPHEN


def fold_lookalikes(text: str) -> str:
    return text.translate(LOOKALIKES)


def join_hyphenation(text: str) -> str:
    """`expres\\ufffe\\nsions` and `expres\\ufffesions` become `expressions`; linear."""
    for mark in HYPHENATION_MARKS:
        if mark in text:
            text = text.replace(mark + "\r\n", "").replace(mark + "\n", "").replace(mark, "")
    return text
