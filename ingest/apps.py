import logging

from django.apps import AppConfig
from django.db.models.signals import post_migrate

logger = logging.getLogger(__name__)


class IngestConfig(AppConfig):
    name = "ingest"
    verbose_name = "Ingest"

    def ready(self):
        from ingest import checks  # noqa: F401  (registers the embedder's system check)
        from ingest.extract.isolated import sweep_scratch
        from ingest.upload_temp import prepare_upload_folder

        post_migrate.connect(_schedule_watchdog, sender=self)
        # before Django's checks, which require FILE_UPLOAD_TEMP_DIR to exist
        prepare_upload_folder()
        sweep_scratch()  # parser folders of a worker killed mid-parse
        _warm_model()


def _warm_model() -> None:
    """With KB_WARM_MODEL set (scripts/run sets it for its web server and worker), load the
    model before the process serves anything. A model that cannot load is logged and left to
    the first search or ingest, which reports it with its stable error code."""
    from kb.conf import kb_settings
    from kb.errors import ConfigurationError, KBError

    try:
        path = kb_settings().warm_model
    except ConfigurationError:
        return  # the system checks report it, with its code, before anything is served
    if not path:
        return
    from kb.embedding.embedders import warm_up

    try:
        seconds = warm_up(path)
    except (KBError, OSError, RuntimeError):
        logger.exception("KB_WARM_MODEL=%s: the model did not load at start-up", path)
        return
    logger.info("KB_WARM_MODEL=%s: model ready in %.1f s", path, seconds)


def _schedule_watchdog(**kwargs):
    """Every migrated database gets the watchdog's schedule (ingest/watchdog.py)."""
    from ingest.watchdog import ensure_watchdog_schedule

    ensure_watchdog_schedule()
