"""python manage.py kb_vector_indexes [--ensure]

List each namespace's embedded chunk count and its own HNSW index (retrieval/vector_index.py); with
--ensure, build the missing ones (namespaces at or over KB_VECTOR_INDEX_MIN_CHUNKS), replace
invalid ones and drop those whose namespace is gone. Ingest runs do this for their namespace.
"""

from django.core.management.base import BaseCommand

from kb.conf import kb_settings
from retrieval.vector_index import ensure_all, index_report


class Command(BaseCommand):
    help = "Show or build the per-namespace vector indexes."

    def add_arguments(self, parser):
        parser.add_argument(
            "--ensure", action="store_true", help="Build missing indexes and drop orphaned ones"
        )

    def handle(self, *args, ensure: bool, **options):
        if ensure:
            for name, outcome in ensure_all().items():
                self.stdout.write(f"{name}: {outcome}")
        threshold = kb_settings().vector_index_min_chunks
        for row in index_report():
            index = row["index"]
            if index is None:
                hint = " - run with --ensure" if row["embedded_chunks"] >= threshold else ""
                state = "no index (exact scan)" + hint
            else:
                state = f"{index.name}, {'valid' if index.valid else 'INVALID'}, {index.size_bytes / 2**20:.1f} MiB"  # noqa: E501
            self.stdout.write(
                f"{row['namespace']}: {row['embedded_chunks']} embedded chunks; {state}"
            )
