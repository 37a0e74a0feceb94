"""Time a git source's first sync, a no-op resync and a commit of three changes.

    python manage.py kb_sync_bench DIR [--include GLOB ...] [--exclude GLOB ...]
        [--defer-embedding] [--json]

The tree is served by `git http-backend` on loopback, so it needs
`KB_FETCH_ALLOWED_PRIVATE='127.0.0.1:*'`. `--defer-embedding` stores the first sync's chunks without
vectors: the benchmark times the syncs, not the model.
"""

from __future__ import annotations

import json as jsonlib
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.management.commands.kb_site_bench import DeferredEmbedding
from evaluation.sync_bench import as_dict, sync_bench
from kb.embedding.embedders import get_embedder
from kb.migrated import migration_hint


class Command(BaseCommand):
    help = "Time a git source's first sync, a no-op resync and a commit of three changes."

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument(
            "--include", nargs="*", default=[], help="File path globs, e.g. 'docs/*'"
        )
        parser.add_argument(
            "--exclude", nargs="*", default=[], help="File path globs to leave out, e.g. 'test/*'"
        )
        parser.add_argument(
            "--defer-embedding",
            action="store_true",
            help="Store chunks without vectors: time the syncs without the model's CPU cost",
        )
        parser.add_argument(
            "--json", action="store_true", help="Print one JSON object as the last line"
        )

    def handle(self, *args, directory, include, exclude, defer_embedding, json, **options):
        hint = migration_hint()
        if hint:
            raise CommandError(hint)
        root = Path(directory).resolve()
        if not root.is_dir():
            raise CommandError(f"{root} is not a directory.")
        embedder = DeferredEmbedding(get_embedder().dimension) if defer_embedding else None
        with tempfile.TemporaryDirectory(prefix="kb-sync-bench-") as work:
            try:
                result = sync_bench(
                    root, Path(work), include=include, exclude=exclude, embedder=embedder
                )
            except RuntimeError as exc:
                raise CommandError(str(exc)) from exc
        out = self.stdout.write
        out(f"{result.files} files committed, {result.documents} documents after the first sync")
        out(
            "| run | seconds | git requests | changed | unchanged | removed | failed | chunks "
            "embedded |"
        )
        out("|---|---|---|---|---|---|---|---|")
        for name, facts in (
            ("first sync", result.first),
            ("no new commit", result.noop),
            ("edit + rename + delete", result.three_changes),
        ):
            out(
                f"| {name} | {facts.seconds:.2f} | {facts.git_requests} | {facts.changed} "
                f"| {facts.unchanged} | "
                f"{facts.removed} | {facts.failed} | {facts.chunks_embedded} |"
            )
        for ref, outcome in result.three_changes.outcomes.items():
            out(f"  {ref}: {outcome}")
        if json:
            out(jsonlib.dumps(as_dict(result)))
