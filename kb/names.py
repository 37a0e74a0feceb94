"""Name keys for versioned-name matching, shared by ingest (documents) and retrieval (queries)."""

import re
from pathlib import PurePosixPath
from urllib.parse import urlsplit


def normalise_name(text: str) -> str:
    """Alphanumerics only, lowercase: 'Qwen 3.8 Release Notes' -> 'qwen38releasenotes'."""
    return re.sub(r"[\W_]+", "", text).lower()


# A versioned name is a name followed by its release: "Qwen3", "python3.11", "llama-3.1-8b",
# "Windows10". Digits that belong to the name itself are no version: after an abbreviation written
# in capitals ("POP3", "HTTP2", "UTF-8", "BRCA1", "IPv6": capitals then a "v" for version, as in
# "IPv"), after one or two letters ("MP3", "p53", "x86", "V8"), or inside the word ("PI3K", "k8s").
# A dotted release ("HTTP 1.1", "TLS1.3") is a version whatever precedes it.
VERSIONED_NAME = re.compile(
    r"(?P<stem>[^\W\d_]{3,})[-_]?(?P<version>v?\d+(?:\.\d+)*[^\W\d_]?)(?:-[^\W_]+)*"
)


def is_abbreviation(word: str) -> bool:
    """Capitals ("POP", "HTTP"), capitals and a "v" ("IPv"), or at most two letters: a word a
    number completes rather than versions."""
    letters = word.rstrip("v") if word[:-1].isupper() else word
    return len(word) <= 2 or (len(letters) >= 2 and letters.isupper())


def is_versioned_name(token: str) -> bool:
    """Whether the digits of a token (as the query spells it: case matters) are the release of
    the name before them rather than part of the name."""
    match = VERSIONED_NAME.fullmatch(token)
    if not match:
        return False
    return "." in match["version"] or not is_abbreviation(match["stem"])


def document_name_key(title: str, path: str) -> str:
    """The title plus the stem of the path (a URL's last segment or a file name)."""
    raw_path = urlsplit(path).path if "://" in path else path
    stem = PurePosixPath(raw_path.rstrip("/")).stem if raw_path.strip("/") else ""
    return normalise_name(f"{title} {stem}")[:600]


def duplicate_key(text: str) -> str:
    """Identity of a text for duplicate collapse: whitespace runs collapsed, case folded, hashed."""
    import hashlib

    return hashlib.md5(
        " ".join(text.split()).lower().encode("utf-8"), usedforsecurity=False
    ).hexdigest()
