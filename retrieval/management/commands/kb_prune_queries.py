"""Delete query log rows and their reader feedback older than KB_QUERY_RETENTION_DAYS."""

from django.core.management.base import BaseCommand

from kb.conf import kb_settings
from retrieval.curation import prune_queries


class Command(BaseCommand):
    help = (
        "Delete logged searches (and their feedback) older than KB_QUERY_RETENTION_DAYS; run "
        "it daily."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days", type=int, default=None, help="Override KB_QUERY_RETENTION_DAYS."
        )

    def handle(self, *args, days=None, **options):
        days = days or kb_settings().query_retention_days
        deleted = prune_queries(days)
        self.stdout.write(f"Deleted {deleted} logged searches older than {days} days.")
