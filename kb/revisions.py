"""Stable revisions (content hashes) of definitions and sources: pure, no ORM.

A revision is the SHA-256 of a canonical JSON rendering, so the same content always gives the same
revision, whatever the key order or the process computing it.
"""

from __future__ import annotations

import hashlib
import json


def canonical_hash(value) -> str:
    rendered = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )
    return hashlib.sha256(rendered.encode("utf-8")).hexdigest()


def source_revision(
    kind: str, location: str, text: str, files: list[tuple[str, str]], options: dict
) -> str:
    """What a source's ingest depends on: its kind, address, inline text, uploaded files (path and
    SHA-256) and options. Editing any of them makes the index behind the source until the next
    ingest."""
    return canonical_hash(
        {
            "kind": kind,
            "location": location,
            "text": text,
            "files": sorted(files),
            "options": options,
        }
    )


def config_revision(embedding_model: str) -> str:
    """The index configuration that decides what an indexed chunk looks like to search."""
    return canonical_hash({"embedding_model": embedding_model})
