"""The local embedder's query path: the direct forward pass equals sentence-transformers' encode()."""

import numpy as np
import pytest

from ingest.embed import _is_mean_pooled_transformer, get_embedder


@pytest.mark.parametrize("query", [
    "ALDH1 expression is associated with poorer prognosis for breast cancer.",
    "退款政策 三十天",
    "word " * 600,  # longer than the model's 256 tokens: truncated the same way
    "?",
])
def test_query_fast_path_matches_encode(query):
    embedder = get_embedder()
    model = embedder._load()
    assert _is_mean_pooled_transformer(model)  # the default model takes the fast path
    fast = embedder.embed_query(query)
    reference = model.encode([query], normalize_embeddings=True, convert_to_numpy=True)[0]
    assert fast.dtype == np.float32 and fast.shape == (embedder.dimension,)
    assert np.abs(fast - reference).max() < 1e-5
