"""What a query is and asks for beyond its words. Pure.

`validate_query` is the one gate every search passes. Identifiers (error codes, hashes, symbols,
paths) must be matched literally; name keys ("gpt4o", "v3.11", "Qwen 3.8" -> "qwen38") are matched
against document names, but digits that are part of a name ("POP3", "IPv6") make no key
(`kb.names.is_versioned_name`). Patterns run on one token at a time and skip tokens over
`MAX_TOKEN_CHARS`, so analysis is linear in the query; `MAX_IDENTIFIERS` and `MAX_NAME_KEYS` cap
what reaches SQL, and `capped` says so.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from kb.lookalikes import fold_lookalikes
from kb.names import is_abbreviation, is_versioned_name, normalise_name
from retrieval.errors import EmptyQuery, InvalidLimit, InvalidQuery, QueryTooLong

MAX_QUERY_CHARS = 4000
MAX_LIMIT = 500

MIN_IDENTIFIER_LENGTH = 6
MAX_TOKEN_CHARS = 128
MAX_IDENTIFIERS = 16
MAX_NAME_KEYS = 16
WORD_RE = re.compile(r"[^\W\d_]{3,}")  # a word worth respelling: three or more letters, no digits
IDENTIFIER_PATTERNS = (
    re.compile(r"\b[A-Z]{2,}-\d{4}-\d{3,}\b"),  # CVE-2024-12345
    re.compile(r"\b[A-Za-z]{1,8}[-_]?\d{3,}\b"),  # E1234, HTTP-404, ORA-00942
    re.compile(r"\b(?:0x)?(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b"),  # hashes
    re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"),  # snake_case, ERR_CODE
    # camelCase with two or more humps (getUserById), PascalCase with three or more
    # (HttpClientError): "iTregs", "JavaScript" or "AlphaBeta" are words, not symbols
    re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+){2,}\b|\b(?:[A-Z][a-z0-9]+){3,}\b"),
    re.compile(r"\b[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+(?:\(\))?"),  # os.path.join, llama.cpp
    # paths need two separators or a file extension: "and/or", "TCP/IP", "1/2000" are not paths
    re.compile(r"(?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+){2,}|[\w.-]+/[\w-]+\.[A-Za-z]{1,5}\b"),
)
VERSION_TOKEN = re.compile(r"^v?\d+(?:\.\d+)*[a-z]?$", re.I)
NAME_EDGES = "\"'()[]{}<>«»“”‘’,.;:!?¿¡"  # stripped from a token's ends before it is read as a name


@dataclass(frozen=True)
class QueryFeatures:
    identifiers: tuple[str, ...]
    name_keys: tuple[str, ...]
    capped: tuple[str, ...] = ()  # e.g. "identifiers: the first 16 of 500 were used"


def analyse(query: str) -> QueryFeatures:
    identifiers, name_keys = find_identifiers(query), find_name_keys(query)
    capped = []
    if len(identifiers) > MAX_IDENTIFIERS:
        capped.append(f"identifiers: the first {MAX_IDENTIFIERS} of {len(identifiers)} were used")
    if len(name_keys) > MAX_NAME_KEYS:
        capped.append(f"name keys: the first {MAX_NAME_KEYS} of {len(name_keys)} were used")
    return QueryFeatures(
        identifiers=identifiers[:MAX_IDENTIFIERS],
        name_keys=name_keys[:MAX_NAME_KEYS],
        capped=tuple(capped),
    )


def _tokens(query: str):
    """(offset, token) for each whitespace-separated token short enough to analyse."""
    position = 0
    for token in query.split():
        position = query.find(token, position)
        if len(token) <= MAX_TOKEN_CHARS:
            yield position, token
        position += len(token)


def find_identifiers(query: str) -> tuple[str, ...]:
    found: list[tuple[int, int, str]] = []
    for offset, text in _tokens(query):
        for pattern in IDENTIFIER_PATTERNS:
            for match in pattern.finditer(text):
                token = match.group(0).rstrip(".")
                if len(token) >= MIN_IDENTIFIER_LENGTH:
                    start = offset + match.start()
                    found.append((start, start + len(token), token))
    # keep the longest identifier where several overlap
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    kept: list[tuple[int, int, str]] = []
    for start, end, token in found:
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end, token))
    return tuple(dict.fromkeys(token for _, _, token in kept))


def find_name_keys(query: str) -> tuple[str, ...]:
    tokens = [token for _, token in _tokens(query)]
    keys: list[str] = []
    for token in tokens:
        if not any(
            ch.isalpha() for ch in token
        ):  # a number or release alone ("1,000", "3.8"): a key as it is
            key = normalise_name(token)
            if len(key) >= 4:
                keys.append(key)
            continue
        for part in token.split("/"):  # "SMTP/POP3", "HTTP/2": each name on its own
            part = part.strip(NAME_EDGES)
            key = normalise_name(part)
            if (
                len(key) >= 4
                and any(ch.isdigit() for ch in key)
                and (VERSION_TOKEN.match(part) or is_versioned_name(part))
            ):
                keys.append(key)
    for word, version in zip(tokens, tokens[1:], strict=False):
        word_key, version = normalise_name(word), version.strip(",.;:!?")
        if (
            word_key
            and not any(ch.isdigit() for ch in word_key)
            and VERSION_TOKEN.match(version)
            and ("." in version or not is_abbreviation(word.strip(NAME_EDGES)))
        ):
            joined = word_key + normalise_name(version)
            if len(joined) >= 4:
                keys.append(joined)
    return tuple(dict.fromkeys(keys))


def validate_query(query: str, limit: int) -> str:
    """The query text stripped, or a stable error for an empty, too long or NUL-bearing query or
    a limit out of range; shared with the capability retrievers."""
    if not isinstance(query, str) or not query.strip():
        raise EmptyQuery("The query is empty; type a few words to search for.")
    if len(query) > MAX_QUERY_CHARS * 18:  # NFKC grows a character at most 18-fold
        raise QueryTooLong(
            f"The query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}.",
            details={"length": len(query), "max": MAX_QUERY_CHARS},
        )
    if "\x00" in query:
        raise InvalidQuery("The query contains a NUL character.")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidLimit(f"limit must be between 1 and {MAX_LIMIT}, got {limit}.")
    normalised = normalise_query(query)
    if not normalised:
        raise EmptyQuery("The query is empty; type a few words to search for.")
    if len(normalised) > MAX_QUERY_CHARS:  # measured after normalisation: what the search pays for
        raise QueryTooLong(
            f"The query is {len(normalised)} characters long once normalised (NFKC); the limit "
            f"is {MAX_QUERY_CHARS}.",
            details={"length": len(normalised), "max": MAX_QUERY_CHARS},
        )
    return normalised


def normalise_query(query: str) -> str:
    """NFKC (fullwidth and compatibility forms become their plain letters and digits) without
    invisible format characters (zero-width spaces and joiners, direction marks), so text that
    looks the same searches the same; print look-alikes (U+2212 minus, U+02DC tilde) as the PDF
    reader folds them (kb/lookalikes.py)."""
    visible = "".join(ch for ch in query if unicodedata.category(ch) != "Cf")
    # folded again after NFKC, which makes some look-alikes (½ is 1⁄2): folding twice is folding
    # once
    return fold_lookalikes(unicodedata.normalize("NFKC", fold_lookalikes(visible))).strip()
