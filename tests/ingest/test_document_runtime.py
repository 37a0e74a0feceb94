"""Document runtimes through the real pipeline: each chunk keeps its own vector when a batch is
embedded in order of length, records what embedded it, says so in the explanation, and one
Re-embed moves a namespace to the configured runtime."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.service import ingest_texts, start_ingest
from kb.embedding.embedders import get_embedder, local_embedder
from kb.models import Chunk, IngestRun, Namespace, Source

pytestmark = pytest.mark.django_db

# lengths from a few words to several chunks, in an order that is not their length order
DOCUMENTS = [
    (
        "long",
        "Compost",
        " ".join(
            f"Compost heap layer {i}: greens, browns, water and air in turn." for i in range(90)
        ),
    ),
    ("short", "Tyres", "Patch the inner tube."),
    ("middle", "Bread", "A sourdough starter of flour and water leavens the dough overnight. " * 6),
    ("tiny", "Tea", "Steep green tea."),
    (
        "medium",
        "Bees",
        "Bees forage for nectar and pollen and dance to tell the hive where flowers are. " * 12,
    ),
]


def _source(slug: str) -> Source:
    namespace = Namespace.objects.create(slug=slug, title=slug, is_public=True)
    return Source.objects.create(namespace=namespace, name="texts", kind=Source.Kind.TEXT, text="x")


class RecordingEmbedder:
    """The configured embedder, with each batch the pipeline hands it written down."""

    def __init__(self, embedder):
        self.embedder, self.batches = embedder, []
        self.model_id, self.dimension = embedder.model_id, embedder.dimension

    def embed_documents(self, texts):
        self.batches.append(list(texts))
        return self.embedder.embed_documents(texts)


def test_each_chunk_keeps_its_own_vector_when_batches_are_cut_by_length(monkeypatch):
    monkeypatch.setattr(
        "ingest.batcher.EMBED_PROGRESS_CHUNKS", 4
    )  # several model calls in one flush
    source = _source("runtime-order")
    embedder = RecordingEmbedder(get_embedder())
    run = ingest_texts(source, DOCUMENTS, embedder=embedder)
    assert run.status == "succeeded" and run.chunks_written > len(
        DOCUMENTS
    )  # the long one is several chunks
    assert len(embedder.batches) > 1
    lengths = [len(text) for batch in embedder.batches for text in batch]
    assert lengths == sorted(lengths)  # one flush, cut in order of length
    chunks = list(
        Chunk.objects.filter(document__source=source).order_by("document__ref", "position")
    )
    stored = np.array([c.embedding for c in chunks], dtype=np.float32)
    alone = np.vstack(
        [embedder.embedder.embed_documents([c.text]) for c in chunks]
    )  # each text on its own
    similarity = stored @ alone.T
    # each stored vector is its own text's (dynamic int8 quantises activations per batch: close, not
    # equal)
    assert (np.diag(similarity) >= 0.98).all(), np.diag(similarity)
    assert (similarity.argmax(axis=1) == np.arange(len(chunks))).all()


def test_chunks_say_which_runtime_embedded_them_and_re_embed_moves_them(client):
    source = _source("runtime-moves")
    run = ingest_texts(source, DOCUMENTS[:2], embedder=local_embedder("torch"))
    chunks = Chunk.objects.filter(document__source=source)
    assert run.status == "succeeded" and set(
        chunks.values_list("embedding_runtime", flat=True)
    ) == {"torch"}

    body = client.get(
        "/api/search", {"query": "patch a tyre", "namespace": "runtime-moves", "explain": True}
    ).json()
    assert body["results"][0]["explanation"]["embedded_by"] == f"{get_embedder().model_id} (torch)"

    configured = get_embedder().document_runtime_in_use
    assert configured == "onnx-int8"  # the default runtime, verified against PyTorch at load
    again = ingest_texts(source, DOCUMENTS[:2])  # the same texts: unchanged, nothing re-embedded
    assert again.items_unchanged == 2 and set(
        chunks.values_list("embedding_runtime", flat=True)
    ) == {"torch"}

    reembed = start_ingest(source, mode=IngestRun.Mode.REEMBED, sync=True)  # the admin's Re-embed
    assert reembed.status == "succeeded" and reembed.items_changed == 2
    assert set(chunks.values_list("embedding_runtime", flat=True)) == {configured}
    page = client.get("/", {"q": "patch a tyre", "namespace": "runtime-moves"}).content.decode()
    assert f"Passage embedded by {get_embedder().model_id} ({configured})." in page
