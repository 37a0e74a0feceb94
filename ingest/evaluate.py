"""What evaluation may reach of ingest beyond its service: one entry point, each part named here.

`kb_site_bench` runs the real crawl with an embedder of its choosing (one that defers the
vectors, so fidelity is measured without the model's cost) and reads pages the way the run's
recall check does; the scaling run copies a corpus through the writer's bulk path; the
multilingual corpora read pages with the product's extractor (`extract`). Nothing in the product
calls this module.
"""

from __future__ import annotations

from ingest import store
from ingest.extract import extract
from ingest.fetch import allow_rules_from_settings
from ingest.pipeline import IngestPipeline
from ingest.service import start_ingest
from kb.embedding.embedders import Embedder
from kb.models import IngestRun, Source

__all__ = ["allow_rules_from_settings", "copy_documents", "extract", "ingest_now"]


def ingest_now(source: Source, embedder: Embedder | None = None) -> IngestRun:
    """One ingest run of `source` here and now, as `start_ingest(sync=True)` runs it, embedding
    with `embedder` instead of the configured model when one is given."""
    if embedder is None:
        return start_ingest(source, sync=True)
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=embedder).execute()
    run.refresh_from_db()
    return run


def copy_documents(source_id: int, base_namespace_id: int, target_namespace_id: int, *, marker: int,
                   drop_every: int) -> None:
    """Copy a namespace's documents and chunks into another through the writer's bulk path
    (`ingest.store.copy_documents`). The caller builds the namespace's indexes once its copies
    are made (`retrieval.evaluate`), timing each."""
    store.copy_documents(source_id, base_namespace_id, target_namespace_id, marker=marker, drop_every=drop_every)

