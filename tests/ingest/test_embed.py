"""The local embedder's query paths: the direct PyTorch forward pass equals sentence-transformers'
encode(), and the ONNX Runtime graph reproduces it, is cached, and is replaced when it is wrong."""

import copy
import os

import numpy as np
import pytest
import torch

from ingest.embed import SentenceTransformerEmbedder, _is_mean_pooled_transformer, bundled_model_path, get_embedder
from ingest.onnx_query import VERIFY_MIN_COSINE, _export, _open, load_onnx_query_encoder

QUERIES = [
    "ALDH1 expression is associated with poorer prognosis for breast cancer.",
    "退款政策 三十天",
    "word " * 600,  # longer than the model's 256 tokens: truncated the same way
    "?",
]


@pytest.fixture(scope="module")
def model():
    return get_embedder()._load()


def reference(model, text):
    return model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]


@pytest.mark.parametrize("query", QUERIES)
def test_torch_query_path_matches_encode(model, query):
    embedder = SentenceTransformerEmbedder(bundled_model_path(), query_runtime="torch")
    embedder._model = model  # the same loaded weights; the runtime is what differs
    assert _is_mean_pooled_transformer(model)  # the default model takes the direct forward pass
    vector = embedder.embed_query(query)
    assert embedder._query_encoder is False
    assert vector.dtype == np.float32 and vector.shape == (embedder.dimension,)
    assert np.abs(vector - reference(model, query)).max() < 1e-5


@pytest.mark.parametrize("query", QUERIES)
def test_default_query_path_runs_the_verified_onnx_graph(model, query):
    embedder = get_embedder()
    vector = embedder.embed_query(query)
    encoder = embedder._query_encoder
    assert encoder and encoder.path.parent == embedder.cache_dir and encoder.path.exists()
    assert vector.dtype == np.float32 and vector.shape == (embedder.dimension,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert float(np.dot(vector, reference(model, query))) >= VERIFY_MIN_COSINE


def test_graph_is_exported_once_and_reused(model, tmp_path):
    first = load_onnx_query_encoder(model, bundled_model_path(), tmp_path, name="minilm")
    assert first is not None and first.path.parent == tmp_path
    stamp = first.path.stat().st_mtime_ns
    second = load_onnx_query_encoder(model, bundled_model_path(), tmp_path, name="minilm")
    assert second.path == first.path and second.path.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]  # no temporary files left
    assert oct(first.path.stat().st_mode & 0o777) == oct(0o644)


def test_corrupt_cached_graph_is_replaced(model, tmp_path):
    path = load_onnx_query_encoder(model, bundled_model_path(), tmp_path, name="minilm").path
    path.write_bytes(b"not an onnx graph")
    encoder = load_onnx_query_encoder(model, bundled_model_path(), tmp_path, name="minilm")
    assert encoder is not None and encoder.path == path and path.stat().st_size > 1_000_000
    query = QUERIES[0]
    assert float(np.dot(encoder.encode(query), reference(model, query))) >= VERIFY_MIN_COSINE


def test_cached_graph_of_other_weights_is_rejected_and_reexported(model, tmp_path):
    path = load_onnx_query_encoder(model, bundled_model_path(), tmp_path, name="minilm").path
    altered = copy.deepcopy(model)
    with torch.no_grad():
        altered[0].auto_model.encoder.layer[0].attention.self.query.weight.mul_(-1.0)
    os.unlink(path)
    _export(altered, path)  # a valid graph that computes different vectors
    query = QUERIES[0]
    planted = float(np.dot(_open(path, model).encode(query), reference(model, query)))
    assert planted < VERIFY_MIN_COSINE  # the planted graph really disagrees with the model
    encoder = load_onnx_query_encoder(model, bundled_model_path(), tmp_path, name="minilm")
    assert encoder is not None and encoder.path == path
    assert float(np.dot(encoder.encode(query), reference(model, query))) >= VERIFY_MIN_COSINE
