"""Ingest's system checks, run at start-up (runserver, migrate, qcluster, kb_run)."""

from django.core import checks

from kb.embedding.embedders import check_embedder_dimension, get_embedder
from kb.errors import KBError


@checks.register("kb")
def embedding_dimension_check(app_configs, **kwargs):
    """The configured embedder must produce vectors of the column's dimension."""
    try:
        check_embedder_dimension(get_embedder())
    except KBError as exc:
        return [checks.Error(exc.message, id=f"kb.{exc.code}")]
    return []
