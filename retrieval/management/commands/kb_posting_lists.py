"""python manage.py kb_posting_lists [--ensure] [--rebuild NAMESPACE]

List each namespace's packed posting lists (retrieval/posting_lists.py) and what changed since their
build. --ensure builds or rebuilds them where an ingest run would; --rebuild packs one namespace
afresh whatever its size.
"""

from django.core.management.base import BaseCommand, CommandError

from kb.models import Namespace
from retrieval import posting_lists


class Command(BaseCommand):
    help = "Show, build or rebuild the per-namespace packed posting lists of the lexical channel."

    def add_arguments(self, parser):
        parser.add_argument(
            "--ensure", action="store_true", help="Build or rebuild where the rules say so"
        )
        parser.add_argument(
            "--rebuild", metavar="NAMESPACE", help="Rebuild this namespace's lists now"
        )

    def handle(self, *args, ensure: bool, rebuild: str | None, **options):
        if rebuild:
            namespace = Namespace.objects.filter(slug=rebuild).first()
            if namespace is None:
                raise CommandError(f"no namespace {rebuild!r}")
            self.stdout.write(f"{namespace.slug}: {posting_lists.build(namespace.id)}")
        for namespace in Namespace.objects.order_by("slug"):
            if ensure:
                self.stdout.write(f"{namespace.slug}: {posting_lists.ensure(namespace.id)}")
            built = posting_lists.state(namespace.id)
            if built is None:
                chunks, span = posting_lists.id_span(namespace.id)
                why = (
                    f"; its {chunks} chunks span {span} ids, too wide for them: it stays there"
                    if chunks and posting_lists.too_wide(span, chunks)
                    else ""
                )
                self.stdout.write(
                    f"{namespace.slug}: no posting lists (read from the postings table{why})"
                )
            else:
                self.stdout.write(
                    f"{namespace.slug}: {built.chunk_count} chunks, {built.postings} postings "
                    "packed "
                    f"in {built.build_seconds:.1f} s; since then {built.changed_since} changed, "
                    f"{built.newer} added"
                )
