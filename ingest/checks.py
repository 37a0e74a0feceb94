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


@checks.register("kb")
def parser_reads_no_data_check(app_configs, **kwargs):
    """The folders the parser child may read (`sandbox.readable_roots`) must not hold the data
    folder or the media folder: a data folder inside site-packages (the default `BASE_DIR/.kb`
    of a non-editable install) would be readable by an exploited parser. An error, so no
    process of the product starts that way."""
    from pathlib import Path

    from django.conf import settings

    from ingest.extract.sandbox import readable_roots

    found = []
    for name in ("KB_DATA_DIR", "MEDIA_ROOT"):
        folder = Path(getattr(settings, name)).resolve()
        for root in readable_roots():
            if folder == Path(root) or Path(root) in folder.parents:
                found.append(
                    checks.Error(
                        f"{name} ({str(folder)!r}) lies inside {root!r}, which the parser child "
                        "may read: a parser "
                        f"exploited by a hostile file could read it. Set {name} to a folder "
                        "outside it.",
                        id="kb.E_PARSER_READS_DATA",
                    )
                )
    return found
