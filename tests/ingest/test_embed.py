"""The local embedder's query paths: the direct PyTorch forward pass equals sentence-transformers'
encode(), and the ONNX Runtime graph reproduces it, is cached, and is replaced when it is wrong."""

import copy
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from kb.embedding.embedders import get_embedder
from kb.embedding.local import (
    SentenceTransformerEmbedder,
    _is_mean_pooled_transformer,
    bundled_model_path,
)
from kb.embedding.onnx_documents import INT8_VARIANT
from kb.embedding.onnx_query import VERIFY_MIN_COSINE, _open, export_graph, load_onnx_query_encoder

DOCS = Path(__file__).resolve().parents[2] / "docs"
QUERIES = [
    "ALDH1 expression is associated with poorer prognosis for breast cancer.",
    "退款政策 三十天",
    "word " * 600,  # longer than the model's 256 tokens: truncated the same way
    "?",
]


@pytest.fixture(scope="module")
def model():
    return get_embedder()._load()


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """One cache folder of exported graphs for the tests whose point is what the graphs compute,
    not how they are exported (exporting and quantising took 20-40 s a test on a loaded machine);
    the tests of the export itself keep a folder of their own."""
    return tmp_path_factory.mktemp("graphs")


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
    # no temporary files left: the graph, and the lock processes take turns on
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        first.path.name,
        first.path.name + ".lock",
    ]
    assert oct(first.path.stat().st_mode & 0o777) == oct(0o644)


EXPORT_IN_A_PROCESS = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(message)s")
from pathlib import Path
from kb.embedding.local import bundled_model_path
from kb.embedding.onnx_query import load_onnx_query_encoder
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(str(bundled_model_path()), device="cpu")
print("ready", flush=True)
sys.stdin.readline()  # both processes start exporting together
assert load_onnx_query_encoder(model, bundled_model_path(), Path(sys.argv[1]), name="minilm") is not None
"""  # noqa: E501


def test_processes_starting_together_export_the_graph_once(tmp_path):
    """The web server and the worker of a first run both want the graph: one exports it, the other
    waits for it and loads the file (each wrote it before, doubling a first start's export)."""
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", EXPORT_IN_A_PROCESS, str(tmp_path)],
            cwd=DOCS.parent,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for process in processes:
        assert process.stdout.readline().strip() == "ready"
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    logs = [process.communicate(timeout=300)[1] for process in processes]
    assert all(process.returncode == 0 for process in processes), logs
    assert sum(log.count("exported the ONNX query graph") for log in logs) == 1, logs


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
    export_graph(altered, path)  # a valid graph that computes different vectors
    query = QUERIES[0]
    planted = float(np.dot(_open(path, model).encode(query), reference(model, query)))
    assert planted < VERIFY_MIN_COSINE  # the planted graph really disagrees with the model
    encoder = load_onnx_query_encoder(model, bundled_model_path(), tmp_path, name="minilm")
    assert encoder is not None and encoder.path == path
    assert float(np.dot(encoder.encode(query), reference(model, query))) >= VERIFY_MIN_COSINE


DOCUMENTS = [
    block
    for path in sorted(DOCS.glob("*.md"))
    for block in path.read_text().split("\n\n")
    if len(block) > 300
][:40] + ["退款政策 三十天内可以申请全额退款。", "word " * 900, "x" * 40_000, "?"]


@pytest.mark.parametrize(
    "runtime, least", [("onnx", 0.99999), ("onnx-int8", 0.98)], ids=["fp32", "int8"]
)
def test_document_runtimes_reproduce_pytorch_in_order(model, graphs, runtime, least):
    embedder = SentenceTransformerEmbedder(
        bundled_model_path(), document_runtime=runtime, cache_dir=graphs
    )
    embedder._model = model
    vectors = embedder.embed_documents(DOCUMENTS)
    assert embedder.document_runtime_in_use == runtime
    expected = model.encode(DOCUMENTS, normalize_embeddings=True, convert_to_numpy=True)
    cosines = (vectors * expected).sum(axis=1)
    assert vectors.shape == expected.shape and vectors.dtype == np.float32
    prose = cosines[
        :-4
    ]  # the real paragraphs; then CJK, a repeated word, one 40k-character word, "?"
    assert prose.min() >= least, (runtime, prose.min())  # each row is its own text's vector
    if (
        runtime == "onnx-int8"
    ):  # int8 weights move degenerate texts further (measured: 0.967 for one)
        assert cosines.min() >= 0.95 and prose.mean() >= 0.99, (cosines.min(), prose.mean())
        assert list(graphs.glob(f"*-{INT8_VARIANT}.onnx"))
        assert _weight_types(next(graphs.glob(f"*-{INT8_VARIANT}.onnx"))) == {
            "INT8"
        }  # signed weights


def _weight_types(path) -> set[str]:
    """The element types of a graph's quantised weights (the initialisers MatMulInteger reads)."""
    import onnx

    graph = onnx.load(str(path)).graph
    weights = {node.input[1] for node in graph.node if node.op_type == "MatMulInteger"}
    return {
        onnx.TensorProto.DataType.Name(t.data_type) for t in graph.initializer if t.name in weights
    }


def test_a_document_graph_that_disagrees_falls_back_to_pytorch(model, tmp_path):
    from kb.embedding.onnx_query import graph_path

    embedder = SentenceTransformerEmbedder(
        bundled_model_path(), document_runtime="onnx", cache_dir=tmp_path
    )
    embedder._model = model
    altered = copy.deepcopy(model)
    with torch.no_grad():
        altered[0].auto_model.embeddings.word_embeddings.weight.mul_(-1.0)
    export_graph(
        altered, graph_path(tmp_path, embedder.model_id.removeprefix("st:"), embedder.model_path)
    )
    vectors = embedder.embed_documents(DOCUMENTS[:3])
    assert embedder.document_runtime_in_use == "torch"
    expected = model.encode(DOCUMENTS[:3], normalize_embeddings=True, convert_to_numpy=True)
    assert np.abs(vectors - expected).max() < 1e-5


@pytest.mark.slow  # starts a child process
def test_a_child_forked_after_the_warm_up_embeds_documents_with_its_own_session(model, tmp_path):
    embedder = SentenceTransformerEmbedder(
        bundled_model_path(), document_runtime="onnx-int8", cache_dir=tmp_path
    )
    embedder._model = model
    embedder.warm("documents")  # what KB_WARM_MODEL=documents does in qcluster's parent
    assert (
        embedder._document_encoder and not embedder._document_encoder._sessions
    )  # no pool before the fork
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit code
        vectors = embedder.embed_documents(DOCUMENTS[:8])
        os._exit(0 if vectors.shape == (8, embedder.dimension) else 1)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.2)
    os.kill(child, 9)
    pytest.fail("the forked child hung embedding documents")


def test_the_int8_encoder_hands_its_batch_buffers_back_after_a_run(model, graphs):
    embedder = SentenceTransformerEmbedder(
        bundled_model_path(), document_runtime="onnx-int8", cache_dir=graphs
    )
    embedder._model = model
    long_texts = [
        f"{i} " + "the pumpkin harvest begins in autumn " * 60 for i in range(32)
    ]  # 256 tokens each
    embedder.embed_documents(long_texts)
    held = _resident_mb()
    embedder.release_memory()
    released = _resident_mb()
    assert held - released > 100, (held, released)  # the arena of a 32 x 256-token batch
    vectors = embedder.embed_documents(long_texts[:2])  # and the encoder still works
    assert vectors.shape == (2, embedder.dimension)


def _resident_mb() -> float:
    line = next(
        line
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmRSS")
    )
    return int(line.split()[1]) / 1024
