"""The small corpus most tests search, the helper that ingests documents through the real
pipeline, and the `corpus` fixture (a plugin of tests/conftest.py). Six one-passage documents:
versioned names, an identifier, and two pumpkin texts that share words but not meaning."""

import pytest

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import IngestRun, Namespace, Source

CORPUS = {
    "qwen38": (
        "Qwen 3.8 release notes",
        "The Qwen 3.8 model adds longer context and faster decoding.",
    ),
    "qwen25": (
        "Qwen 2.5 release notes",
        "Qwen 2.5 was the previous generation of the model family.",
    ),
    "llama": (
        "Running llama.cpp",
        "Build llama.cpp from source and quantize the weights to four bits.",
    ),
    "errors": (
        "Connection errors",
        "If you see ERR_CONNECTION_REFUSED the server is not listening on the port.",
    ),
    "pumpkin": ("Pumpkin soup", "Roast the pumpkin, then blend it with stock, cream and nutmeg."),
    "garden": (
        "Growing pumpkins",
        "Pumpkins need sun, space and rich soil; water them deeply every week.",
    ),
}


def ingest(namespace_slug, documents, source_name="corpus"):
    """`documents`: ref -> (title, text); ingested as plain text into one source of the
    namespace."""
    namespace, _ = Namespace.objects.get_or_create(slug=namespace_slug)
    source, _ = Source.objects.get_or_create(
        namespace=namespace, name=source_name, defaults={"kind": "text", "text": "x"}
    )
    items = [
        LoadedItem(ref=ref, body=text.encode(), media_type="text/plain", title_hint=title, path=ref)
        for ref, (title, text) in documents.items()
    ]
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(items)
    assert run.status == "succeeded", run.error
    return namespace, source


@pytest.fixture
def corpus_namespace() -> str:
    """The namespace `corpus` ingests into; a test module overrides it where its tests name
    another."""
    return "tenant:a"


@pytest.fixture
def corpus_documents() -> dict[str, tuple[str, str]]:
    """What `corpus` ingests; a test module overrides it to add documents of its own."""
    return CORPUS


@pytest.fixture
def corpus(db, corpus_namespace, corpus_documents) -> Namespace:
    """The corpus ingested through the real pipeline into one source, "corpus", of its namespace."""
    namespace, _ = ingest(corpus_namespace, corpus_documents)
    return namespace
