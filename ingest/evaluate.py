"""What evaluation may reach of ingest beyond its service: one entry point, each part named here.

`kb_site_bench` runs the real crawl with an embedder of its choosing (one that defers the
vectors, so fidelity is measured without the model's cost) and reads pages the way the run's
recall check does; the multilingual corpora read pages with the product's extractor (`extract`).
Nothing in the product calls this module.
"""

from __future__ import annotations

from ingest.extract import extract
from ingest.fetch import allow_rules_from_settings
from ingest.pipeline import IngestPipeline
from ingest.service import start_ingest
from kb.embedding.embedders import Embedder
from kb.models import IngestRun, Source

__all__ = ["allow_rules_from_settings", "extract", "ingest_now"]


def ingest_now(source: Source, embedder: Embedder | None = None) -> IngestRun:
    """One ingest run of `source` here and now, as `start_ingest(sync=True)` runs it, embedding
    with `embedder` instead of the configured model when one is given."""
    if embedder is None:
        return start_ingest(source, sync=True)
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=embedder).execute()
    run.refresh_from_db()
    return run
