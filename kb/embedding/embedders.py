"""Embedders: the `Embedder` protocol, the configured one, its warm-up and its strong-match cosine.

No ORM here. Vectors come back L2-normalised as float32 numpy arrays.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np
from django.utils.module_loading import import_string

from kb.conf import kb_settings
from kb.embedding.http import HttpEmbedder
from kb.embedding.local import SentenceTransformerEmbedder, bundled_model_path
from kb.errors import ConfigurationError, EmbeddingDimensionMismatch


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


BUNDLED_STRONG_COSINE = (
    0.35  # all-MiniLM-L6-v2's strong match, measured (docs/searching.md#strong-matches)
)


def strong_floor() -> tuple[float, str]:
    """The cosine from which a passage is a strong match for a query, one a reader is pointed to,
    and where it comes from: KB_STRONG_COSINE when set, else the configured model's own
    (`strong_cosine` on its embedder, where the product measured it), else the bundled model's,
    which /healthz then says is assumed. Each model has its own cosine scale, so one number cannot
    serve them all."""
    configured = kb_settings().strong_cosine
    if configured is not None:
        return configured, "set by KB_STRONG_COSINE"
    own = getattr(get_embedder(), "strong_cosine", None)
    if own is not None:
        return own, "the model's own, measured"
    return BUNDLED_STRONG_COSINE, (
        "assumed: the bundled model's, not measured for this model; measure it "
        "with manage.py kb_strong_cosine and set KB_STRONG_COSINE"
    )


def strong_cosine() -> float:
    return strong_floor()[0]


@functools.cache
def get_embedder() -> Embedder:
    """The configured embedder (built once per process; the model loads on first use)."""
    conf = kb_settings()
    if conf.embedder == "local":
        return local_embedder(conf.embedding_document_runtime)
    if conf.embedder == "e5":
        from kb.embedding.e5 import E5Embedder

        return E5Embedder(batch_size=conf.embedding_batch)
    if conf.embedder == "http":
        return HttpEmbedder(
            conf.embeddings_url,
            model=conf.embedding_model or "text-embedding-3-small",
            dimension=conf.embedding_dim,
            api_key=conf.embeddings_api_key,
            batch_size=conf.embedding_batch,
        )
    try:
        factory = import_string(conf.embedder)
    except ImportError as exc:
        raise ConfigurationError(
            f"KB_EMBEDDER={conf.embedder!r} cannot be imported: {exc}"
        ) from exc
    return factory()


def local_embedder(document_runtime: str) -> SentenceTransformerEmbedder:
    """The configured local model with documents embedded through `document_runtime` (`torch`,
    `onnx` or `onnx-int8`): what the deployment runs, or what a benchmark compares it with."""
    conf = kb_settings()
    path = Path(conf.embedding_model) if conf.embedding_model else bundled_model_path()
    embedder = SentenceTransformerEmbedder(
        path,
        batch_size=conf.embedding_batch,
        query_runtime=conf.embedding_query_runtime,
        document_runtime=document_runtime,
        cache_dir=conf.model_cache_dir,
    )
    if not conf.embedding_model:
        embedder.strong_cosine = BUNDLED_STRONG_COSINE
    return embedder


def warm_up(path: str) -> float:
    """Load the model and run it once on the path this process will use (`query` for a web
    server, `documents` for a worker), so the first real search or ingest does not pay the
    load; returns the seconds it took. Called from IngestConfig.ready when KB_WARM_MODEL is set,
    which may be a process that forks afterwards: an embedder with a `warm` method warms up
    without starting native thread pools."""
    started = time.perf_counter()
    embedder = get_embedder()
    if hasattr(embedder, "warm"):
        embedder.warm(path)
    elif path == "query":
        embedder.embed_query("warm-up")
    elif path == "documents":
        embedder.embed_documents(["warm-up"])
    return time.perf_counter() - started


def check_embedder_dimension(embedder: Embedder, column_dimension: int | None = None) -> None:
    """Stop with a clear error when vectors would not fit the embedding column."""
    expected = column_dimension or kb_settings().embedding_dim
    if embedder.dimension != expected:
        raise EmbeddingDimensionMismatch(
            f"The embedder {embedder.model_id!r} produces {embedder.dimension}-dimensional vectors "
            f"but the chunk embedding column holds {expected}. Set KB_EMBEDDING_DIM="
            f"{embedder.dimension} and migrate a fresh database, or choose a model with "
            f"{expected} dimensions.",
            details={
                "embedder": embedder.model_id,
                "embedder_dimension": embedder.dimension,
                "column_dimension": expected,
            },
        )
