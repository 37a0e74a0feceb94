from django.apps import AppConfig
from django.db.models.signals import post_migrate


class IngestConfig(AppConfig):
    name = "ingest"
    verbose_name = "Ingest"

    def ready(self):
        post_migrate.connect(_schedule_watchdog, sender=self)


def _schedule_watchdog(**kwargs):
    """Every migrated database gets the watchdog's schedule (ingest/watchdog.py)."""
    from ingest.watchdog import ensure_watchdog_schedule

    ensure_watchdog_schedule()
