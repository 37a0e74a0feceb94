"""Fixtures the ingest tests share."""

import pytest

from kb.conf import kb_settings


@pytest.fixture
def git_settings(settings, tmp_path):
    """Git sources cached in the test's own folder."""
    settings.KB_GIT_CACHE_DIR = str(tmp_path / "git-cache")
    kb_settings.cache_clear()
    yield settings
    kb_settings.cache_clear()
