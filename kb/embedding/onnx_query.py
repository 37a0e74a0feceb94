"""Single-query embeddings through ONNX Runtime, for the local mean-pooled transformer.

At batch size 1 PyTorch spends most of its time in per-operator dispatch; the ONNX graph answers in
about 8 ms instead of 22 ms on the 2-core reference machine, cosine to PyTorch's >= 0.9999995.
Queries stay fp32 where documents use int8: int8 query vectors lowered ranking quality. The graph is
exported once per model and library versions into the model cache (an atomic rename, so no process
reads half a file), and verified on every load. Any failure is logged and answered with `None`, and
the caller keeps PyTorch: an acceleration, never a new way for search to fail.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

# The exported graph must reproduce the PyTorch vectors: fp32 kernels differ only in the order
# of summation, which moves the cosine in the seventh decimal.
VERIFY_MIN_COSINE = 0.99999
PROBE_TEXTS = (
    "How do I configure the ingest worker?",
    "ALDH1 expression is associated with poorer prognosis for breast cancer.",
    "退款政策 三十天",
    "error E1234: connection refused while reading /etc/config/settings.yaml " * 8,
)


@dataclass(frozen=True)
class OnnxQueryEncoder:
    """Embeds one text with an ONNX Runtime session: tokenise, run, L2-normalise."""

    session: object  # onnxruntime.InferenceSession (thread-safe for run())
    tokenizer: object  # the model's Hugging Face tokenizer
    max_length: int
    path: Path

    def encode(self, text: str) -> np.ndarray:
        features = self.tokenizer(
            [text], truncation=True, max_length=self.max_length, return_tensors="np"
        )
        (pooled,) = self.session.run(
            None,
            {
                "input_ids": features["input_ids"].astype(np.int64),
                "attention_mask": features["attention_mask"].astype(np.int64),
            },
        )
        vector = pooled[0].astype(np.float32)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector


def load_onnx_query_encoder(
    model, model_dir: Path, cache_dir: Path, *, name: str
) -> OnnxQueryEncoder | None:
    """An encoder equivalent to `model` for single queries, or None when ONNX cannot serve it.

    `model` is a loaded SentenceTransformer laid out as Transformer → mean Pooling (→ Normalize)
    from `model_dir`; `name` names its graph file in `cache_dir`.
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        logger.warning("onnxruntime is not installed; query embeddings use PyTorch")
        return None
    try:
        path = graph_path(cache_dir, name, model_dir)
        ensure_exported(model, path)
        encoder = _open(path, model)
        if encoder is not None and _agrees(encoder, model):
            return encoder
        logger.warning("replacing the ONNX query graph %s", path)
        export_graph(model, path)
        encoder = _open(path, model)
        if encoder is None or not _agrees(encoder, model):
            path.unlink(missing_ok=True)  # the next process tries a fresh export, not this file
            return None
        return encoder
    except Exception as exc:  # an optional acceleration: any failure falls back to PyTorch
        logger.warning(
            "could not prepare the ONNX query graph (%s: %s); query embeddings use PyTorch",
            type(exc).__name__,
            exc,
            exc_info=True,
        )
        return None


def graph_path(cache_dir: Path, name: str, model_dir: Path, variant: str = "") -> Path:
    """Where the model's exported graph (or a `variant` of it, such as `int8`) is cached."""
    safe_name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    return (
        cache_dir / f"{safe_name}-{_fingerprint(model_dir)}{'-' + variant if variant else ''}.onnx"
    )


def _fingerprint(model_dir: Path) -> str:
    """Changes whenever the weights, the model's config or the exporting libraries change."""
    import torch
    import transformers

    digest = hashlib.sha256(f"{torch.__version__}|{transformers.__version__}".encode())
    for file in sorted(model_dir.rglob("*")):
        if file.is_file() and file.suffix in (".json", ".safetensors", ".bin", ".txt"):
            digest.update(str(file.relative_to(model_dir)).encode())
            with file.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def _open(path: Path, model) -> OnnxQueryEncoder | None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    # one thread: the other core runs PostgreSQL's lexical channel at the same time
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # a truncated or foreign file: the caller exports again
        logger.warning("the ONNX query graph %s does not load: %s", path, exc)
        return None
    return OnnxQueryEncoder(session, model.tokenizer, int(model.max_seq_length), path)


def ensure_exported(model, path: Path) -> None:
    """The graph at `path`, exported once: processes that start together (the web server and the
    worker on a first run) take turns on a lock file beside it, and the later ones find the file
    the first one wrote instead of exporting it again."""
    import fcntl

    if path.exists():  # a cache written before, perhaps read-only: nothing to take turns on
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process dies
        if not path.exists():
            export_graph(model, path)


def export_graph(model, path: Path) -> None:
    """Trace Transformer + mean pooling into `path`, atomically (`encode` normalises)."""
    import torch

    class MeanPooled(torch.nn.Module):
        def __init__(self, transformer):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask):
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    transformer = copy.deepcopy(model[0].auto_model).eval()
    if hasattr(transformer, "set_attn_implementation"):
        # the eager attention traces into the pattern ONNX Runtime fuses into one Attention op
        transformer.set_attn_implementation("eager")
    sample = model.tokenizer(["an example query"], return_tensors="pt")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.stem, suffix=".onnx.tmp", dir=path.parent)
    os.close(handle)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                MeanPooled(transformer),
                (sample["input_ids"], sample["attention_mask"]),
                temporary,
                input_names=["input_ids", "attention_mask"],
                output_names=["embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "tokens"},
                    "attention_mask": {0: "batch", 1: "tokens"},
                    "embedding": {0: "batch"},
                },
                opset_version=17,
                dynamo=False,
            )
        os.chmod(
            temporary, 0o644
        )  # mkstemp's 0600 would hide it from a server running as another user
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    logger.info("exported the ONNX query graph %s", path)


def _agrees(encoder: OnnxQueryEncoder, model) -> bool:
    """Whether the graph reproduces the PyTorch model's vectors on the probe texts."""
    reference = model.encode(list(PROBE_TEXTS), normalize_embeddings=True, convert_to_numpy=True)
    worst = min(
        float(np.dot(encoder.encode(text), expected))
        for text, expected in zip(PROBE_TEXTS, reference, strict=True)
    )
    if worst < VERIFY_MIN_COSINE:
        logger.warning(
            "the ONNX query graph %s disagrees with the PyTorch model (cosine %.6f < %s)",
            encoder.path,
            worst,
            VERIFY_MIN_COSINE,
        )
    return worst >= VERIFY_MIN_COSINE
