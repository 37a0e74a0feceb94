"""Name keys for versioned-name matching, shared by ingest (documents) and retrieval (queries)."""

import re
from pathlib import PurePosixPath
from urllib.parse import urlsplit


def normalise_name(text: str) -> str:
    """Alphanumerics only, lowercase: 'Qwen 3.8 Release Notes' -> 'qwen38releasenotes'."""
    return re.sub(r"[\W_]+", "", text).lower()


def document_name_key(title: str, path: str) -> str:
    """The title plus the stem of the path (a URL's last segment or a file name)."""
    raw_path = urlsplit(path).path if "://" in path else path
    stem = PurePosixPath(raw_path.rstrip("/")).stem if raw_path.strip("/") else ""
    return normalise_name(f"{title} {stem}")[:600]


def duplicate_key(text: str) -> str:
    """Identity of a text for duplicate collapse: whitespace runs collapsed, case folded, hashed."""
    import hashlib

    return hashlib.md5(" ".join(text.split()).lower().encode("utf-8"), usedforsecurity=False).hexdigest()
