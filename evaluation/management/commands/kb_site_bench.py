"""Crawl a local documentation site over loopback and measure speed and fidelity.

    python manage.py kb_site_bench DIR [--start PATH] [--include GLOB ...] [--exclude GLOB ...]
        [--defer-embedding | --runtimes RUNTIME…] [--json]

Needs `KB_FETCH_ALLOWED_PRIVATE='127.0.0.1:*'` (loopback is refused otherwise, as it should be).
`--defer-embedding` stores chunks without vectors: fidelity figures read only text, headings and
anchors, so they are the same, and pages/s become extraction and store speeds.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import threading
import time
from collections import Counter
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from evaluation import memory
from evaluation.site_bench import ChunkFacts, fidelity, page_facts
from ingest.evaluate import allow_rules_from_settings, ingest_now
from ingest.stylesheets import hidden_classes
from kb.conf import DOCUMENT_RUNTIMES, kb_settings
from kb.embedding.embedders import get_embedder, local_embedder
from kb.embedding.local import SentenceTransformerEmbedder
from kb.migrated import migration_hint
from kb.models import Chunk, Document, IngestItem, Namespace, Source


class Command(BaseCommand):
    help = "Crawl a local documentation site over loopback and measure speed and fidelity."

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument(
            "--start", default="index.html", help="Start page, relative to the directory"
        )
        parser.add_argument(
            "--include", nargs="*", default=[], help="Path globs to keep, e.g. '/library/*'"
        )
        parser.add_argument(
            "--exclude", nargs="*", default=[], help="Path globs to skip, e.g. '/genindex*'"
        )
        parser.add_argument("--max-pages", type=int, default=2000)
        parser.add_argument("--max-depth", type=int, default=10)
        parser.add_argument(
            "--defer-embedding",
            action="store_true",
            help="Store chunks without vectors (the next ordinary run embeds them): fidelity "
            "through the real crawl and store without the model's CPU cost",
        )
        parser.add_argument(
            "--runtimes",
            nargs="+",
            choices=DOCUMENT_RUNTIMES,
            default=[],
            help="Crawl once per document runtime of the local model, each into its own namespace, "
            "and compare their speed and peak memory",
        )
        parser.add_argument(
            "--json", action="store_true", help="Print one JSON object as the last line"
        )

    def handle(
        self,
        *args,
        directory,
        start,
        include,
        exclude,
        max_pages,
        max_depth,
        defer_embedding: bool,
        runtimes: list[str],
        json: bool,
        **options,
    ):
        hint = migration_hint()
        if hint:
            raise CommandError(hint)
        root = Path(directory).resolve()
        if not (root / start).is_file():
            raise CommandError(
                f"{root / start} is not a file; pass --start with the site's first page."
            )
        probe = ipaddress.ip_address("127.0.0.1")
        if not any(
            rule.matches("127.0.0.1", probe) and rule.port == "*"
            for rule in allow_rules_from_settings(kb_settings().fetch_allowed_private)
        ):
            raise CommandError(
                "Loopback on an ephemeral port is refused by the SSRF guard: "
                "run with KB_FETCH_ALLOWED_PRIVATE='127.0.0.1:*'"
            )
        if defer_embedding and runtimes:
            raise CommandError(
                "--defer-embedding stores no vectors: there is no runtime to compare."
            )
        if runtimes and kb_settings().embedder != "local":
            raise CommandError(
                f"--runtimes compares runtimes of the local model; KB_EMBEDDER is "
                f"{kb_settings().embedder!r}."
            )
        statuses: Counter[int] = Counter()
        server = _serve(root, statuses)
        crawl = partial(
            self.measure,
            root,
            server,
            statuses,
            start=start,
            include=include,
            exclude=exclude,
            max_pages=max_pages,
            max_depth=max_depth,
        )
        try:
            if runtimes:
                reports = [
                    crawl(embedder=local_embedder(runtime), suffix=f"-{runtime}")
                    for runtime in runtimes
                ]
            else:
                reports = [
                    crawl(
                        embedder=DeferredEmbedding(get_embedder().dimension)
                        if defer_embedding
                        else None
                    )
                ]
        finally:
            server.shutdown()
            server.server_close()
        for report in reports:
            for key, value in report.items():
                self.stdout.write(f"{key:>28}: {value}")
        if runtimes:
            base = reports[0]
            self.stdout.write(
                "\ndocument runtimes (first crawl of each; speed-up against the first runtime):"
            )
            for report in reports:
                self.stdout.write(
                    f"{report['runtime']:<10} {report['pages_per_s']:>7} "
                    f"pages/s {report['chunks_per_s']:>7} chunks/s "
                    f"{report['chunks_per_s'] / (base['chunks_per_s'] or float('inf')):>5.2f}x, "
                    "embedding process peak "
                    f"{report['embedding_process_mb']['peak']} MB, "
                    f"{report['chunks']} chunks, recall {report['recall_mean']}"
                )
        if json:
            self.stdout.write(_json(reports[0] if len(reports) == 1 else {"runtimes": reports}))

    def measure(
        self,
        root: Path,
        server,
        statuses: Counter,
        *,
        start,
        include,
        exclude,
        max_pages,
        max_depth,
        embedder=None,
        suffix: str = "",
    ):
        namespace, _ = Namespace.objects.get_or_create(
            slug=f"bench-site-{root.name.lower()[:40]}{suffix}"
        )
        Source.objects.filter(namespace=namespace).delete()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        options = {
            "max_pages": max_pages,
            "max_depth": max_depth,
            "use_llms_txt": False,
            "respect_robots": False,
            "include": include,
            "exclude": exclude,
        }
        source = Source.objects.create(
            namespace=namespace,
            name="site",
            kind="crawl",
            location=f"{base}/{start}",
            options={k: v for k, v in options.items() if v},
        )
        started = time.perf_counter()
        first = ingest_now(source, embedder)
        first_s = time.perf_counter() - started
        statuses.clear()
        started = time.perf_counter()
        second = ingest_now(source, embedder)
        second_s = time.perf_counter() - started
        recrawl = dict(statuses)

        pages = {}
        for ref in Document.objects.filter(source=source).values_list("ref", flat=True):
            path = root / urlsplit(ref).path.lstrip("/")
            if path.is_file():
                pages[ref] = page_facts(path.read_bytes(), partial(_hidden_by, root, path.parent))
        chunks = [
            ChunkFacts(ref, text.split("\n\n", 1)[-1], tuple(path), anchor)
            for ref, text, path, anchor in Chunk.objects.filter(
                document__source=source
            ).values_list("document__ref", "text", "heading_path", "anchor")
        ]
        result = fidelity(pages, chunks)
        return {
            "site": str(root),
            "embedding": "deferred" if isinstance(embedder, DeferredEmbedding) else "embedded",
            "runtime": getattr(embedder or get_embedder(), "document_runtime_in_use", ""),
            "embedding_process_mb": (
                memory.embedding_process_peak(
                    embedder.document_runtime, [c.body for c in chunks[:512]]
                )
                if isinstance(embedder, SentenceTransformerEmbedder)
                else None
            ),
            "recall_mean": result.recall_mean,
            "recall_worst": result.recall_worst,
            "recall_worst_page": result.worst_page,
            "low_recall_pages": [
                f"{share:.2f} {ref}" for ref, share in result.low_recall_pages[:20]
            ],
            "low_recall_count": len(result.low_recall_pages),
            "pages_ingested": first.items_changed,
            "pages_failed": first.items_failed,
            "pages_skipped": first.items.filter(status=IngestItem.Status.SKIPPED).count(),
            "chunks": first.chunks_written,
            "chunks_stored": len(chunks),
            "ingest_s": round(first_s, 1),
            "pages_per_s": round(first.items_changed / first_s, 2) if first_s else 0.0,
            "chunks_per_s": round(first.chunks_written / first_s, 2) if first_s else 0.0,
            "recrawl_s": round(second_s, 2),
            "recrawl_changed": second.items_changed,
            "recrawl_statuses": recrawl,
            "chrome_share": result.chrome_share,
            "permalink_chunks": result.permalink_chunks,
            "anchors_checked": result.anchors_checked,
            "anchors_resolved_share": result.anchors_resolved_share,
        }


class DeferredEmbedding:
    """An embedder that leaves every chunk without a vector and without a model id: the run is
    the real one up to the store, and the source's next ordinary run re-embeds its chunks
    because their model is not the configured one (`ingest/decisions.py`, "model changed")."""

    model_id = ""

    def __init__(self, dimension: int):
        self.dimension = dimension

    def embed_documents(self, texts) -> np.ndarray:
        return np.full(len(texts), None, dtype=object)  # one NULL vector per chunk

    def embed_query(self, text: str) -> np.ndarray:
        raise NotImplementedError("a deferred embedding has no query vectors")


@functools.cache
def _stylesheet_hides(path: Path) -> frozenset[str]:
    return hidden_classes(path.read_text(errors="replace")) if path.is_file() else frozenset()


def _hidden_by(root: Path, folder: Path, href: str) -> frozenset[str]:
    """The classes a page's linked stylesheet hides, read from the site's own files."""
    target = urlsplit(href)
    if target.scheme or target.netloc:
        return frozenset()
    path = (root / target.path.lstrip("/")) if target.path.startswith("/") else folder / target.path
    path = path.resolve()
    return _stylesheet_hides(path) if path.is_relative_to(root) else frozenset()


def _serve(root: Path, statuses: Counter) -> ThreadingHTTPServer:
    class Handler(SimpleHTTPRequestHandler):
        def send_response(self, code, message=None):
            statuses[int(code)] += 1
            super().send_response(code, message)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _json(report: dict) -> str:
    return json.dumps(report, sort_keys=True)
