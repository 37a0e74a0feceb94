"""The HTTP embedder: an OpenAI-compatible `/v1/embeddings` API (KB_EMBEDDER=http)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from kb.embedding.errors import EmbeddingFailed
from kb.errors import EmbeddingDimensionMismatch


class HttpEmbedder:
    """An OpenAI-compatible `/v1/embeddings` API with bounded concurrency and retries."""

    def __init__(
        self,
        url: str,
        *,
        model: str,
        dimension: int,
        api_key: str = "",
        batch_size: int = 64,
        concurrency: int = 4,
        timeout: float = 30.0,
        retries: int = 3,
    ):
        self.url = url
        self.model = model
        self.model_id = f"http:{model}"
        self.dimension = dimension
        self.api_key = api_key
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries

    def _post(self, batch: list[str]) -> np.ndarray:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        last_error = ""
        for attempt in range(self.retries + 1):
            try:
                response = httpx.post(
                    self.url,
                    json={"model": self.model, "input": batch},
                    headers=headers,
                    timeout=self.timeout,
                )
            except httpx.HTTPError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    return self._parse(response.json(), len(batch))
                last_error = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in (408, 429) and response.status_code < 500:
                    break
            if attempt < self.retries:
                time.sleep(min(8.0, 0.5 * 2**attempt))
        raise EmbeddingFailed(
            f"The embeddings API at {self.url!r} failed: {last_error}",
            details={"model": self.model_id},
        )

    def _parse(self, payload: dict, expected: int) -> np.ndarray:
        try:
            rows = sorted(payload["data"], key=lambda row: row["index"])
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingFailed(
                f"The embeddings API returned an unreadable answer: {exc}"
            ) from exc
        if vectors.shape != (expected, self.dimension):
            raise EmbeddingDimensionMismatch(
                f"The embeddings API returned vectors of shape {vectors.shape}, expected "
                f"({expected}, {self.dimension}). Set KB_EMBEDDING_DIM to the model's dimension.",
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        batches = [
            list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)
        ]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return np.vstack(list(pool.map(self._post, batches)))

    def embed_query(self, text: str) -> np.ndarray:
        return self._post([text])[0]
