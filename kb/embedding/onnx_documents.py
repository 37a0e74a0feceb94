"""Document embeddings through ONNX Runtime, optionally int8 (`KB_EMBEDDING_DOCUMENT_RUNTIME`).

Embedding is most of an ingest's time, and int8 kernels do less arithmetic per weight; the speed and
cosine of each variant are in docs/benchmarks.md (Document runtimes). Every load is verified against
the PyTorch model on the probe texts; a graph that disagrees is not used and the caller embeds with
PyTorch. Sessions are made per process on first use, as ONNX Runtime's pool does not survive a fork.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kb.embedding.onnx_query import PROBE_TEXTS, ensure_exported, graph_path

logger = logging.getLogger(__name__)

MIN_COSINE = {"onnx": 0.99999, "onnx-int8": 0.98}  # fp32 differs in summation order only
INT8_VARIANT = "int8s"  # the cached int8 graph's name suffix ("s": signed weights)
BATCH_TEXTS = 32
# a wordpiece tokenizer reads at most 100 characters into one token ([UNK] past that), so a
# prefix this long holds at least the model's max_length tokens whenever the text does
CHARACTERS_PER_TOKEN_BOUND = 101


@dataclass
class OnnxDocumentEncoder:
    """Embeds batches of texts: sorted by length, cut, tokenised per batch, run, normalised."""

    path: Path
    tokenizer: object
    max_length: int
    threads: int
    runtime: str
    _sessions: dict = field(default_factory=dict)  # pid: session, so a fork never reuses one
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def session(self, threads: int | None = None):
        pid = os.getpid()
        with self._lock:
            if threads is not None:  # a one-off (verification): not kept
                return _session(self.path, threads)
            if pid not in self._sessions:
                # a session inherited through a fork stays referenced: destroying it would join
                # pool threads that do not exist in this process
                self._sessions[pid] = _session(self.path, self.threads)
            return self._sessions[pid]

    def encode(self, texts, session=None) -> np.ndarray:
        session = session or self.session()
        limit = self.max_length * CHARACTERS_PER_TOKEN_BOUND
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), BATCH_TEXTS):
            batch = order[start : start + BATCH_TEXTS]
            features = self.tokenizer(
                [texts[i][:limit] for i in batch],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="np",
            )
            (pooled,) = session.run(None, _inputs(features))
            if out.shape[1] == 0:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[batch] = pooled / np.where(norms == 0, 1, norms)
        return out

    def release_memory(self) -> None:
        """Hand this process's buffer arena back to the system: ONNX Runtime keeps the largest
        batch's buffers (about 300 MB at 32 texts of 256 tokens) for the next run, which a worker
        idling between ingests need not hold. One tiny run with arena shrinkage does it, and the
        next batch allocates again (shrinking after every batch instead cost 15% of the speed)."""
        session = self._sessions.get(os.getpid())
        if session is None:
            return
        import onnxruntime as ort

        options = ort.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        session.run(None, _inputs(self.tokenizer(["."], return_tensors="np")), options)


def _inputs(features) -> dict:
    """The graph's inputs from the tokenizer's output."""
    return {
        "input_ids": features["input_ids"].astype(np.int64),
        "attention_mask": features["attention_mask"].astype(np.int64),
    }


def load_onnx_document_encoder(
    model, model_dir: Path, cache_dir: Path, *, name: str, runtime: str, threads: int
) -> OnnxDocumentEncoder | None:
    """An encoder for `runtime` (`onnx` or `onnx-int8`) that reproduces `model`, or None (the
    caller uses PyTorch; the reason is logged)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        logger.warning("onnxruntime is not installed; document embeddings use PyTorch")
        return None
    try:
        fp32 = graph_path(cache_dir, name, model_dir)
        ensure_exported(model, fp32)
        path = fp32
        if runtime == "onnx-int8":
            path = graph_path(cache_dir, name, model_dir, INT8_VARIANT)
            if not path.exists():
                _quantise(fp32, path)
        encoder = OnnxDocumentEncoder(
            path, model.tokenizer, int(model.max_seq_length), threads, runtime
        )
        reference = model.encode(
            list(PROBE_TEXTS), normalize_embeddings=True, convert_to_numpy=True
        )
        worst = float(
            min(
                (
                    encoder.encode(list(PROBE_TEXTS), session=encoder.session(threads=1))
                    * reference
                ).sum(axis=1)
            )
        )
        if worst < MIN_COSINE[runtime]:
            logger.warning(
                "the %s document graph %s disagrees with PyTorch (cosine %.5f < %s); document "
                "embeddings use PyTorch",
                runtime,
                path,
                worst,
                MIN_COSINE[runtime],
            )
            path.unlink(missing_ok=True)
            return None
        return encoder
    except Exception as exc:  # an optional acceleration: any failure falls back to PyTorch
        logger.warning(
            "could not prepare the %s document graph (%s: %s); document embeddings use PyTorch",
            runtime,
            type(exc).__name__,
            exc,
            exc_info=True,
        )
        return None


def _session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _no_preprocessing_advice(record: logging.LogRecord) -> bool:
    """Drops ONNX Runtime's 'Please consider to run pre-processing before quantization', which
    every first start printed: shape pre-processing serves static quantisation, not this dynamic
    one."""
    return not record.getMessage().startswith("Please consider to run pre-processing")


def _quantise(source: Path, target: Path) -> None:
    """Signed int8 MatMul weights per output channel, written atomically beside the fp32 graph."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    handle, temporary = tempfile.mkstemp(prefix=target.stem, suffix=".onnx.tmp", dir=target.parent)
    os.close(handle)
    root = logging.getLogger()
    root.addFilter(
        _no_preprocessing_advice
    )  # the quantiser's advice for calibrated image models, on the root logger
    try:
        quantize_dynamic(
            str(source),
            temporary,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
        )
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    finally:
        root.removeFilter(_no_preprocessing_advice)
        Path(temporary).unlink(missing_ok=True)
    logger.info("quantised the document graph to %s", target)
