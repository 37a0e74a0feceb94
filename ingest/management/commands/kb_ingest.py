"""python manage.py kb_ingest SOURCE_ID... | --all [--sync] [--reembed]"""

import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ingest.service import start_ingest
from kb.models import IngestItem, IngestRun, Source


class Command(BaseCommand):
    help = "Ingest sources now, in the background worker or (--sync) in this process."

    def add_arguments(self, parser):
        parser.add_argument("source_ids", nargs="*", type=int)
        parser.add_argument("--all", action="store_true", help="Every enabled source.")
        parser.add_argument("--sync", action="store_true", help="Run here instead of the worker.")
        parser.add_argument("--reembed", action="store_true", help="Re-embed stored documents.")

    def handle(self, *args, source_ids, all, sync, reembed, **options):
        if all:
            sources = list(Source.objects.filter(enabled=True).order_by("pk"))
        else:
            sources = list(Source.objects.filter(pk__in=source_ids).order_by("pk"))
            missing = set(source_ids) - {s.pk for s in sources}
            if missing:
                raise CommandError(f"No source with id {', '.join(map(str, sorted(missing)))}.")
        if not sources:
            raise CommandError("Name source ids or pass --all.")
        mode = IngestRun.Mode.REEMBED if reembed else IngestRun.Mode.INGEST
        failed = False
        for source in sources:
            with tqdm(
                total=0, unit="doc", desc=f"source {source.pk}", disable=None, file=self.stderr
            ) as bar:

                def show(run, bar=bar):
                    bar.total, bar.n = run.items_total, run.items_done
                    bar.set_postfix(chunks=run.chunks_written, failed=run.items_failed)
                    bar.refresh()

                run = start_ingest(source, mode=mode, sync=sync, on_progress=show)
                if not sync:
                    self._follow(run, show)
            self._report(source, run)
            failed |= run.status == IngestRun.Status.FAILED
        if failed:
            raise CommandError("At least one run failed.")

    def _follow(self, run, show):
        self.stderr.write(
            f"run {run.pk} queued for the worker (start one with 'manage.py qcluster')"
        )
        while run.status in (IngestRun.Status.QUEUED, IngestRun.Status.RUNNING):
            time.sleep(0.5)
            run.refresh_from_db()
            show(run)

    def _report(self, source, run):
        self.stdout.write(
            f"source {source.pk} {source.name!r}: run {run.pk} {run.status} - "
            f"{run.items_changed} changed, {run.items_unchanged} unchanged, "
            f"{run.items_failed} failed, {run.items_removed} removed, {run.chunks_written} chunks"
        )
        for item in run.items.filter(status=IngestItem.Status.FAILED)[:20]:
            self.stdout.write(f"  failed {item.ref}: {item.error_code} {item.error_message}")
