"""The embedding rows of the settings table: which model embeds, how, and what it reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kb.errors import ConfigurationError
from kb.settings_table import between, lowered, one_of, resolved_path, setting

DOCUMENT_RUNTIMES = ("torch", "onnx", "onnx-int8")  # how the local model may embed documents


def _languages(value: str) -> tuple[str, ...]:
    """ISO 639-1 codes from a comma-separated list; none (any language) when it holds "*"."""
    codes = {code.strip().lower() for code in value.split(",") if code.strip()}
    return () if "*" in codes else tuple(sorted(codes))


def _language_codes(name: str, codes: tuple[str, ...]) -> str | None:
    odd = [code for code in codes if not re.fullmatch(r"[a-z]{2,3}", code)]
    return f"{name} takes ISO 639-1 codes (en,de) or *, got {', '.join(odd)}." if odd else None


def _strong_cosine(value: str | float | None) -> float | None:
    """KB_STRONG_COSINE: None when empty (the model's own), else a cosine between -1 and 1."""
    if value is None or not str(value).strip():
        return None
    try:
        cosine = float(value)
    except ValueError as exc:
        raise _not_a_cosine(value) from exc
    if not -1.0 <= cosine <= 1.0:  # NaN fails too
        raise _not_a_cosine(value)
    return cosine


def _not_a_cosine(value) -> ConfigurationError:
    return ConfigurationError(
        f"KB_STRONG_COSINE is a cosine, between -1 and 1, got {value!r}: measure the model's with "
        "manage.py kb_strong_cosine, or leave it empty for the model's own.",
        details={"setting": "KB_STRONG_COSINE"},
    )


def _embedder(name: str, value: str) -> str | None:
    if value in ("local", "e5", "http") or "." in value:
        return None
    return f"{name} must be 'local', 'e5', 'http' or a dotted path to a factory, got {value!r}."


def _bundled_model_reads_english(known) -> str:
    return "en" if known["KB_EMBEDDER"] == "local" and not known["KB_EMBEDDING_MODEL"] else "*"


@dataclass(frozen=True)
class EmbeddingSettings:
    """The embedding rows: which model embeds, how, and what it reads."""

    embedder: str = setting(
        "KB_EMBEDDER",
        "local",
        "`local` (sentence-transformers), `e5` (multilingual-e5-small, 4-bit, in process: "
        "[languages](languages.md#a-multilingual-model)), `http` (OpenAI-compatible API) or a "
        "dotted path to a factory returning an `Embedder` (the protocol in "
        "`kb/embedding/embedders.py`; a factory raises `kb.embedding.errors.EmbeddingFailed` "
        "when it cannot embed)",
        check=_embedder,
    )
    embedding_model: str = setting(
        "KB_EMBEDDING_MODEL",
        "",
        "a local model folder, or the model name sent to the HTTP API",
        shown="bundled all-MiniLM-L6-v2",
    )
    embedding_dim: int = setting(
        "KB_EMBEDDING_DIM",
        384,
        "dimension of the embedding column; checked against the embedder at start-up",
        check=between(1, 16000),
    )
    embedding_batch: int = setting("KB_EMBEDDING_BATCH", 64, "texts per embedding batch")
    embedding_query_runtime: str = setting(
        "KB_EMBEDDING_QUERY_RUNTIME",
        "onnx",
        "how the local model embeds a search query: `onnx` runs an ONNX Runtime export of the "
        "same model (about 9 ms instead of 20 for a SciFact query; verified against PyTorch at "
        "every load, falling back to it on any problem), `torch` runs PyTorch",
        convert=lowered,
        check=one_of("onnx", "torch"),
    )
    embedding_document_runtime: str = setting(
        "KB_EMBEDDING_DOCUMENT_RUNTIME",
        "onnx-int8",
        "how the local model embeds documents: `onnx-int8` (an ONNX Runtime export with its "
        "MatMul weights quantised to signed 8 bit per channel: faster than PyTorch's whole "
        "ingest for nDCG@10 within 0.005, [measured](benchmarks.md#document-runtimes)), `onnx` "
        "(the same export in fp32) or `torch` (PyTorch). Each is verified against PyTorch at load "
        "(cosine ≥ 0.99999 for fp32, ≥ 0.98 for int8 on probe texts) and falls back to PyTorch, "
        "with the reason logged. Queries stay fp32 (`KB_EMBEDDING_QUERY_RUNTIME`). The vectors "
        "stay in the model's space, so existing chunks need no change; each chunk records its "
        "runtime (`embedded_by` in a result's explanation), and **Re-embed all documents** "
        "re-embeds a namespace with the configured one",
        convert=lowered,
        check=one_of(*DOCUMENT_RUNTIMES, said=f"one of {', '.join(DOCUMENT_RUNTIMES)}"),
    )
    warm_model: str = setting(
        "KB_WARM_MODEL",
        "",
        "`query` or `documents`: the process loads the model and runs it once on that path at "
        "start, before it serves, on one thread, so the process may still fork "
        "([deployment](deployment.md#process-layouts)). `scripts/run` sets `query` for its web "
        "server and `documents` for its worker and prints its banner only once the web server "
        "answers, so the first search after start-up took 44–60 ms against a warm median of "
        "32–44 ms (1.1–1.5×, three starts), where it took 6.2 s without (190×)",
        convert=lowered,
        check=one_of("query", "documents", ""),
    )
    model_cache_dir: Path | None = setting(
        "KB_MODEL_CACHE_DIR",
        lambda known: known["KB_DATA_DIR"] / "models",
        "where the ONNX export of the local model is kept (about 90 MB, written once per model "
        "and library version)",
        read=resolved_path,
        convert=Path,
        shown="`$KB_DATA_DIR/models`",
    )
    embeddings_url: str = setting(
        "KB_EMBEDDINGS_URL", "", "the `/v1/embeddings` endpoint, for `KB_EMBEDDER=http`"
    )
    embeddings_api_key: str = setting(
        "KB_EMBEDDINGS_API_KEY",
        "",
        "the key sent to `KB_EMBEDDINGS_URL`, for `KB_EMBEDDER=http`",
        secret=True,
    )
    embedding_languages: tuple[str, ...] = setting(  # empty: any
        "KB_EMBEDDING_LANGUAGES",
        _bundled_model_reads_english,
        "the languages the embedding model reads (ISO 639-1, comma-separated; `*` any): a query "
        "the detector places in another language, or any query in a namespace more than half of "
        "whose documents are in other languages, is searched by its words alone "
        "([languages](languages.md#when-the-model-cannot-read-the-language))",
        convert=_languages,
        check=_language_codes,
        shown="`en` for the bundled model, `*` for any other",
    )
    strong_cosine: float | None = setting(  # None: the model's own
        "KB_STRONG_COSINE",
        "",
        "the cosine from which a passage is a strong match, one a reader is pointed to (cited; "
        '"No strong match" below it; weak in the curation report); each model has its own '
        "scale, so set it for a model the product has not measured "
        "([searching](searching.md#strong-matches))",
        convert=_strong_cosine,
        shown="the model's own",
    )


def check_embedding(conf: EmbeddingSettings) -> None:
    """The checks that need two embedding settings."""
    if conf.embedder == "http" and not conf.embeddings_url:
        raise ConfigurationError(
            "KB_EMBEDDER=http needs KB_EMBEDDINGS_URL (an OpenAI-compatible /v1/embeddings URL).",
            details={"setting": "KB_EMBEDDINGS_URL"},
        )
