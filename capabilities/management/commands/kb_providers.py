"""python manage.py kb_providers FILE… [--no-index] [--status]

Load capability provider definitions (JSON or YAML) into the store: providers, capabilities,
knowledge targets, a new revision when a definition changed, and the built-in capability index.
"""

from django.core.management.base import BaseCommand, CommandError

from capabilities import service
from kb.errors import KBError
from kb.models import Provider


class Command(BaseCommand):
    help = "Load capability provider definitions from JSON or YAML files."

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="*", help="Definition files")
        parser.add_argument(
            "--no-index", action="store_true", help="Do not (re-)index capabilities now"
        )
        parser.add_argument(
            "--reindex", action="store_true", help="Re-embed every capability of every provider"
        )
        parser.add_argument(
            "--status",
            action="store_true",
            help="List providers and whether their index is current",
        )

    def handle(self, *args, files, no_index, reindex, status, **options):
        if not files and not status and not reindex:
            raise CommandError("Name at least one definition file, or use --status or --reindex.")
        try:
            for path in files:
                for entry in service.load_definition_file(path, reindex=not no_index):
                    verb = "changed" if entry["changed"] else "unchanged"
                    self.stdout.write(
                        f"{entry['provider']}: {verb}, revision {entry['revision'][:12]}, "
                        f"{entry['capabilities']} capabilities, {entry['indexed']} indexed"
                    )
            if reindex:
                for provider in Provider.objects.all():
                    self.stdout.write(
                        f"{provider.slug}: {service.reindex_provider(provider)} re-indexed"
                    )
        except KBError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        if status:
            for provider in Provider.objects.all():
                s = service.index_status(provider)
                state = (
                    "current"
                    if s["current"]
                    else f"behind ({s['indexed']}/{s['capabilities']} indexed)"
                )
                self.stdout.write(
                    f"{provider.slug}\t{s['revision'][:12]}\t{s['capabilities']} capabilities"
                    f"\tindex {state}"
                )
