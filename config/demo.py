"""The demo corpus: this project's own documentation (docs/*.md) as file sources in a public
`demo` namespace, so a newcomer can search at once. Idempotent; unchanged files cost nothing."""

from __future__ import annotations

from kb.conf import kb_settings
from kb.models import Namespace, Source

DEMO_NAMESPACE = "demo"
DEMO_PROVIDERS = "examples/providers.yaml"


def ensure_demo_sources(*, sync: bool = False) -> list[int]:
    """Create or refresh one file source per docs/*.md and start the ingest of those that need
    one (a new or changed page, another model or pipeline, a last run that did not succeed); run
    ids. A restart with nothing changed queues nothing, so the run list is not cluttered."""
    from ingest.decisions import PIPELINE_VERSION
    from ingest.service import start_ingest
    from ingest.uploads import add_files
    from kb.embedding.embedders import get_embedder

    namespace, _ = Namespace.objects.get_or_create(
        slug=DEMO_NAMESPACE,
        defaults={"title": "Demo: project documentation", "is_public": True},
    )
    run_ids = []
    for path in sorted(kb_settings().demo_docs_dir.glob("*.md")):
        source, _ = Source.objects.get_or_create(
            namespace=namespace,
            name=f"docs/{path.name}",
            defaults={"kind": Source.Kind.FILE},
        )
        with path.open("rb") as handle:
            report = add_files(source, [(path.name, handle)])  # the same bytes again change nothing
        if (
            report.added
            or report.replaced
            or _stale(source, get_embedder().model_id, PIPELINE_VERSION)
        ):
            run_ids.append(start_ingest(source, sync=sync).pk)
    return run_ids


def _stale(source: Source, model_id: str, pipeline: str) -> bool:
    """Whether a demo source's stored documents are not what an ingest would make of its file now
    (the embedder is built, not loaded: its model id costs nothing)."""
    if source.last_run_status != "succeeded" or not source.documents.exists():
        return True
    return (
        source.documents.exclude(embedding_model=model_id).exists()
        or source.documents.exclude(metadata__pipeline=pipeline).exists()
    )


def ensure_demo_providers(*, queue: bool = False) -> list[dict]:
    """Load the example capability provider over the demo sources (a no-op when unchanged);
    with `queue` its capabilities are embedded by the worker (kb_run: its supervising process
    then never loads the model)."""
    from django.conf import settings

    from capabilities.service import INDEX_QUEUE, load_definition_file

    return load_definition_file(
        settings.BASE_DIR / DEMO_PROVIDERS, index=INDEX_QUEUE if queue else None
    )
