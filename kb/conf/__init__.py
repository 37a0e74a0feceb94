"""Typed, frozen product settings, read once from `django.conf.settings`: the settings table.

Each field is one row (kb/settings_table.py), one module per concern. Read settings through
`kb_settings()`, never `settings.KB_*`.

    python -m kb.conf           prints the tables of docs/configuration.md made from the rows
    python -m kb.conf --write   writes them there (tests/kb/test_settings_table.py compares them)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from kb.conf.answers import AnswerSettings, check_answers
from kb.conf.embedding import DOCUMENT_RUNTIMES, EmbeddingSettings, _not_a_cosine, check_embedding
from kb.conf.identity import IdentitySettings, check_identity
from kb.conf.ingest import IngestSettings
from kb.conf.search import SearchSettings
from kb.errors import ConfigurationError
from kb.settings_table import environment_values, markdown, rows

__all__ = ["DOCUMENT_RUNTIMES", "KBSettings", "IdentitySettings", "kb_settings", "_not_a_cosine"]

# docs/configuration.md: one table per group, under these headings, in this order
TABLE = (
    ("Embedding", EmbeddingSettings),
    ("Ingest", IngestSettings),
    ("Search and readers", SearchSettings),
    ("Grounded answers", AnswerSettings),
    ("Single sign-on", IdentitySettings),
)


@dataclass(frozen=True)
class KBSettings(AnswerSettings, SearchSettings, IngestSettings, EmbeddingSettings):
    """Every product setting, typed: the fields of each group (embedding's first), and identity."""

    identity: IdentitySettings


@functools.cache
def kb_settings() -> KBSettings:
    conf = KBSettings(**_read(KBSettings), identity=IdentitySettings(**_read(IdentitySettings)))
    check_embedding(conf)
    check_answers(conf)
    check_identity(conf.identity)
    return conf


def _read(cls) -> dict[str, object]:
    """The typed, checked fields of `cls` from the Django settings."""
    values = {}
    for name, row in rows(cls):
        values[name] = value = row.convert(getattr(settings, row.name))
        wrong = row.check(row.name, value) if row.check else None
        if wrong:
            raise ConfigurationError(wrong, details={"setting": row.name})
    return values


def environment_settings(environ, *, base_dir: Path, data_dir: Path) -> dict[str, object]:
    """Every product setting as the settings module defines it, read from `environ`:
    {"KB_EMBEDDER": "local", "MEDIA_ROOT": Path(...), ...}."""
    groups = [group for _, group in TABLE]
    return environment_values(groups, environ, base_dir=base_dir, data_dir=data_dir)


def configuration_tables() -> str:
    """The settings tables of docs/configuration.md."""
    return markdown(TABLE)
