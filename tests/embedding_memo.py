"""The configured local model's document embeddings, remembered per batch for the test session (a
plugin of tests/conftest.py).

Many tests ingest the same texts: the `corpus` fixture's six documents, the same manual pages
of tests/retrieval/test_languages.py in one namespace after another. The real model embeds each
distinct batch once per test process; a batch seen again gets the vectors the model gave it, which
are the vectors it would give again (a batch is embedded bit for bit alike every time). The key
is the whole batch, never a single text: the int8 runtime quantises each batch's activations,
so a text's vector depends on the texts beside it (by up to 0.026 here).

Only embedders of the configured model cache are remembered: a test that builds its own
(tests/ingest/test_embed.py, with graphs in a folder of its own) runs the model on every call.
The model and its document runtime are still loaded on a hit, so the embedder reports and the
pipeline stores the runtime it would have used.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kb.embedding.local import SentenceTransformerEmbedder

MAX_BATCHES = 4000  # about 6 MB of vectors at the batcher's 64 texts a batch

_embed_documents = SentenceTransformerEmbedder.embed_documents
_vectors: dict[tuple, np.ndarray] = {}


def _key(embedder: SentenceTransformerEmbedder, texts) -> tuple:
    digest = hashlib.blake2b(digest_size=32)
    for text in texts:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
    return (
        str(embedder.model_path),
        embedder.document_runtime_in_use,
        embedder.batch_size,
        len(texts),
        digest.digest(),
    )


def remembered_embed_documents(self: SentenceTransformerEmbedder, texts) -> np.ndarray:
    from kb.conf import kb_settings

    if not texts or self.cache_dir != kb_settings().model_cache_dir:
        return _embed_documents(self, texts)
    self._onnx_document_encoder(self._load())  # what the first real call prepares
    key = _key(self, texts)
    if key not in _vectors:
        if len(_vectors) >= MAX_BATCHES:
            _vectors.clear()
        _vectors[key] = _embed_documents(self, texts)
    return _vectors[key].copy()


@pytest.fixture(scope="session", autouse=True)
def _remembered_document_embeddings():
    SentenceTransformerEmbedder.embed_documents = remembered_embed_documents
    yield
    SentenceTransformerEmbedder.embed_documents = _embed_documents
